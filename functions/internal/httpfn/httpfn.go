// Package httpfn is what the two HTTP functions share: query (the chat behind a Function URL) and api
// (the management API behind API Gateway) serve shared/httpapi's handler over the same stores, traced
// the same way, with identity wired as `docmind serve` wires it. Only they import it: it links the HTTP
// handler, the chat pipeline's wiring and the Redis client; each main passes the opener of its
// collections (VectorOpener).
package httpfn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/docmind/docmind/functions/internal/stores/aurora"
	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/identity"
	"github.com/docmind/docmind/shared/memory"
	"github.com/docmind/docmind/shared/obs"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/redis"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/wire"
)

// Stores are the adapters the handler reads. The mains open the cloud ones (Open); tests pass the
// embedded ones, which never reach a binary (TestDeps).
type Stores struct {
	SQL      *sqldb.DB // library, conversations, identity, roles, audit, chunk rows
	Keyword  retrieve.Keyword
	Vectors  store.VectorIndex
	Memories store.VectorIndex // nil: long-term memory off
	KV       store.KV
}

// metaMirror is a vector index keeping documents' metadata on its rows (milvus.Index).
type metaMirror interface {
	SetDocumentMeta(ctx context.Context, tenant, kbID, docID string, m rag.Metadata, gen int64) error
}

// VectorOpener opens one Milvus collection by name. The api function passes stores.Vectors (which also
// creates and loads it); the query function passes a Late opener, which never creates one.
type VectorOpener func(ctx context.Context, cfg config.Config, collection string) (store.VectorIndex, error)

// Open opens Aurora, the chunks' collection (and the memories' collection, "<collection>_memories", when
// memory is on) with vectors, and Redis with kv; nothing is opened per invocation, and nothing here
// dials: Aurora and Redis connect at their first use, and so do the openers' collections when Lazy.
func Open(ctx context.Context, cfg config.Config, kv redis.Options, vectors VectorOpener) (Stores, error) {
	db, err := aurora.Open(ctx, cfg)
	if err != nil {
		return Stores{}, err
	}
	vec, err := vectors(ctx, cfg, cfg.Vector.Collection)
	if err != nil {
		db.Close()
		return Stores{}, err
	}
	s := Stores{SQL: db, Keyword: aurora.Keyword(db, cfg), Vectors: vec}
	if m, ok := vec.(metaMirror); ok { // an editor's metadata edit reaches the rows (docs/metadata-filters.md)
		db.SetMetadataMirror(m.SetDocumentMeta)
	}
	if cfg.Chat.MemoryEnabled {
		mem, err := vectors(ctx, cfg, cfg.Vector.Collection+"_memories")
		if err != nil {
			s.Close()
			return Stores{}, err
		}
		s.Memories = mem
	}
	s.KV = redis.New(kv) // connects at its first command
	return s, nil
}

// RedisOptions are the Redis client's options from the configuration and getenv (awsenv.LoadEnv's, with
// the Redis secret resolved): the user name of an ElastiCache RBAC user, its password and TLS.
func RedisOptions(cfg config.Config, getenv func(string) string) redis.Options {
	k := cfg.KV
	return redis.Options{Addr: k.RedisAddr, Username: getenv("DOCMIND_REDIS_USERNAME"), Password: k.RedisPassword, DB: k.RedisDB,
		TLS: k.RedisTLS, Prefix: k.Prefix}
}

// Close closes what Open opened (a later start-up step failing closes them rather than leaving
// connections to Aurora and Milvus behind).
func (s Stores) Close() error {
	var errs []error
	for _, c := range []interface{ Close() error }{s.KV, s.Memories, s.Vectors} {
		if c != nil {
			errs = append(errs, c.Close())
		}
	}
	if s.SQL != nil {
		errs = append(errs, s.SQL.Close())
	}
	return errors.Join(errs...)
}

// Trace sets up tracing for service (exported over OTLP when OTEL_EXPORTER_OTLP_ENDPOINT is set) and
// returns log wrapped so that every line from here on carries the trace id.
func Trace(ctx context.Context, service, version string, getenv func(string) string, log *slog.Logger) (*obs.Tracing, *slog.Logger, error) {
	tr, err := obs.Setup(ctx, obs.Options{Service: service, Version: version}, getenv)
	if err != nil {
		return nil, nil, err
	}
	return tr, slog.New(tr.LogHandler(log.Handler())), nil
}

// Checks are the health probes of the stores: SQL ping, a tenant-scoped vector count, KV ping.
func Checks(cfg config.Config, s Stores) []httpapi.Check {
	return []httpapi.Check{
		{Name: "sql", Driver: cfg.SQL.Driver, Probe: s.SQL.Ping},
		{Name: "vector", Driver: cfg.Vector.Driver, Probe: func(ctx context.Context) error {
			_, err := s.Vectors.Count(ctx, rag.Filter{Tenant: cfg.Tenant})
			return err
		}},
		{Name: "kv", Driver: cfg.KV.Driver, Probe: s.KV.Ping},
	}
}

// Identity sets deps' authentication (keys and/or JWT, DOCMIND_AUTH), roles, identity endpoints, audit,
// per-user limits and browser-origin checks as `docmind serve` does, without the loopback rule: a
// function's callers never come from its own host. It returns the authentication mode, which the caller
// judges against how the function is exposed.
func Identity(cfg config.Config, s Stores, deps *httpapi.Deps, log *slog.Logger) (identity.Mode, error) {
	a, err := wire.Authenticator(cfg, s.SQL)
	if err != nil {
		return identity.Mode{}, err
	}
	a.Log = log
	deps.Auth, deps.AuthMode = StackTenant{Next: a, Tenant: cfg.Tenant}, a.Mode.String()
	deps.Members, deps.Admin, deps.Audit = s.SQL, s.SQL, s.SQL
	deps.AccessMap = wire.AccessMap(cfg)
	if lim := wire.Limiter(cfg, s.KV); lim != nil {
		deps.Limits = lim.WithLogger(log)
	}
	deps.Guard = httpapi.GuardOptions{AllowedOrigins: config.List(cfg.Auth.AllowedOrigins)}
	if a.Mode.JWT {
		deps.OAuthIssuer = cfg.Auth.Issuer // MCP clients discover it (RFC 9728)
	}
	return a.Mode, nil
}

// StackTenant refuses every caller whose tenant is not the stack's (DOCMIND_TENANT): one stack serves
// one tenant. Its roles reach only that tenant's S3 prefixes (uploads/, sources/, staging/<Tenant>/), so
// another tenant's upload would be stored, then fail in the state machine with AccessDenied; the
// refusal says so at once instead. `docmind serve` stays multi-tenant: it does not use this.
type StackTenant struct {
	Next   httpapi.Authenticator
	Tenant string
}

// Authenticate identifies the caller with Next, then refuses (Permission: 403) another tenant.
func (s StackTenant) Authenticate(ctx context.Context, authorization string) (rag.Principal, error) {
	p, err := s.Next.Authenticate(ctx, authorization)
	if err != nil {
		return p, err
	}
	if p.Tenant != s.Tenant {
		return rag.Principal{}, rag.E("httpapi", rag.KindPermission, fmt.Errorf(
			"this deployment serves tenant %q only; tenant %q needs its own stack (see DEPLOY.md, one stack per tenant)", s.Tenant, p.Tenant))
	}
	return p, nil
}

// Memory gives the chat and the memory endpoints long-term memory when it is configured and its
// collection is open; otherwise both stay without it.
func Memory(cfg config.Config, s Stores, emb memory.Embedder, chat *answer.Pipeline, deps *httpapi.Deps) {
	if m := wire.Memory(cfg, s.SQL, s.Memories, emb, s.KV); m != nil && s.Memories != nil {
		chat.Memory, deps.Memories = m, m
	}
}
