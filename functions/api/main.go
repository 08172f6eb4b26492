// Command api is the management API behind an API Gateway HTTP API (payload format 2.0), served through
// github.com/awslabs/aws-lambda-go-api-proxy from the same http.Handler `docmind serve` uses: knowledge
// bases, documents and uploads (stored in S3 and ingested by the ingestion state machine), conversations,
// memories, API keys, users and members, the audit log, and POST /api/ask, which returns the done object
// of a synchronous execution of the answer state machine (or of the pipeline in process when
// DOCMIND_ANSWER_STATE_MACHINE_ARN is unset). The streamed chat is the query function's: API Gateway
// buffers responses, so /api/chat and /v1/chat/completions answer 404 here with where to go.
//
// Callers are identified by API keys or JWT (DOCMIND_AUTH); the template can add an API Gateway JWT
// authorizer in front (the function still verifies the token: the tenant comes only from a verified
// token, SR-01).
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/shared/askflow"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/obs"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/redis"
	"github.com/docmind/docmind/shared/store/s3"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/wire"
)

var version = "dev"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(context.Background(), log); err != nil {
		log.Error("api function failed to start", "version", version, "error_type", awsrt.ErrorType(err), "err", err)
		os.Exit(1)
	}
}

// run sets up tracing (the trace id in every log line from here on), builds the handler and serves.
func run(ctx context.Context, log *slog.Logger) error {
	tr, err := obs.Setup(ctx, obs.Options{Service: "docmind-api", Version: version}, os.Getenv)
	if err != nil {
		return err
	}
	log = slog.New(tr.LogHandler(log.Handler()))
	h, err := open(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	lambda.Start(httpadapter.NewV2(tr.Middleware(h)).ProxyWithContext)
	return nil
}

// settings are the function's own variables.
type settings struct {
	IngestStateMachine string // DOCMIND_INGEST_STATE_MACHINE_ARN: uploads are ingested by it (required)
	AnswerStateMachine string // DOCMIND_ANSWER_STATE_MACHINE_ARN: /api/ask runs it; empty runs the pipeline here
}

func loadSettings(getenv func(string) string) (settings, error) {
	s := settings{IngestStateMachine: getenv("DOCMIND_INGEST_STATE_MACHINE_ARN"), AnswerStateMachine: getenv("DOCMIND_ANSWER_STATE_MACHINE_ARN")}
	if s.IngestStateMachine == "" {
		return s, &config.ValidationError{Problems: []string{"DOCMIND_INGEST_STATE_MACHINE_ARN is required: uploads are ingested by the ingestion state machine"}}
	}
	return s, nil
}

// open reads the configuration and opens the stores; nothing is opened per invocation.
func open(ctx context.Context, getenv func(string) string, log *slog.Logger) (http.Handler, error) {
	cfg, err := awsenv.Load(ctx, getenv)
	if err != nil {
		return nil, err
	}
	set, err := loadSettings(getenv)
	if err != nil {
		return nil, err
	}
	db, err := mysql.Open(ctx, cfg.SQL.DSN, mysql.Options{MaxOpenConns: cfg.SQL.MaxOpenConns, ConnMaxLifetime: cfg.SQL.ConnMaxLifetime}, nil)
	if err != nil {
		return nil, err
	}
	mo := milvus.Options{Addr: cfg.Vector.MilvusAddr, Token: cfg.Vector.MilvusToken, Collection: cfg.Vector.Collection, Dim: cfg.Vector.Dim, CallTimeout: cfg.Vector.CallTimeout}
	vec, err := milvus.Open(ctx, mo)
	if err != nil {
		return nil, err
	}
	var mem store.VectorIndex
	if cfg.Chat.MemoryEnabled {
		mo.Collection += "_memories"
		if mem, err = milvus.Open(ctx, mo); err != nil {
			return nil, err
		}
	}
	blobs, err := s3.New(ctx, s3.Options{Bucket: cfg.Blob.Bucket, Region: cfg.Blob.Region, Endpoint: cfg.Blob.Endpoint, UsePathStyle: cfg.Blob.UsePathStyle})
	if err != nil {
		return nil, err
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	r := cfg.Retrieval
	s := backends{SQL: db, Vectors: vec, Keyword: &mysql.Keyword{DB: db, Params: bm25.Params{K1: r.BM25K1, B: r.BM25B, TitleWeight: r.BM25TitleWeight, ContextWeight: r.BM25ContextWeight}}, Memories: mem, Blobs: blobs, S3: awsenv.S3Client(ac, cfg), Bucket: cfg.Blob.Bucket,
		KV:         redis.New(redis.Options{Addr: cfg.KV.RedisAddr, Password: cfg.KV.RedisPassword, DB: cfg.KV.RedisDB, TLS: cfg.KV.RedisTLS, Prefix: cfg.KV.Prefix}),
		Executions: awsenv.Executions{Client: sfn.NewFromConfig(ac), StateMachineARN: set.IngestStateMachine}}
	if set.AnswerStateMachine != "" {
		s.Asker = &askflow.Asker{Client: sfn.NewFromConfig(ac), StateMachineARN: set.AnswerStateMachine}
	}
	return newHandler(cfg, s, log)
}

// backends are what the handler is built over: the cloud adapters in the main, embedded ones and fakes
// in tests.
type backends struct {
	SQL        *sqldb.DB
	Keyword    retrieve.Keyword
	Vectors    store.VectorIndex
	Memories   store.VectorIndex // nil: long-term memory off
	Blobs      store.Blobs
	KV         store.KV
	S3         ObjectPutter
	Bucket     string
	Executions ingest.Executions
	Asker      httpapi.Asker // nil: /api/ask runs the pipeline in this function
}

// newHandler wires the management API as `docmind serve` wires it, with uploads through S3 and the
// ingestion state machine, and the browser-origin checks without the loopback rule.
func newHandler(cfg config.Config, s backends, log *slog.Logger) (http.Handler, error) {
	emb, err := wire.Embedder(cfg)
	if err != nil {
		return nil, err
	}
	st := &ingest.Stages{Records: s.SQL, Vectors: s.Vectors, Blobs: s.Blobs, Embedder: emb, Log: log,
		Limits:   extract.Limits{MaxFileBytes: cfg.Server.MaxBodyBytes},
		Chunking: chunk.Options{ChildChars: cfg.Chunking.ChildChars, Overlap: cfg.Chunking.Overlap, ParentChars: cfg.Chunking.ParentChars}}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}}
	chain, err := wire.Retriever(cfg, s.Keyword, s.Vectors, s.SQL)
	if err != nil {
		return nil, err
	}
	chat := wire.Chat(cfg, chain, s.SQL, s.KV)
	deps := httpapi.Deps{Version: version, Logger: log, Checks: checks(cfg, s), Library: s.SQL, MaxUploadBytes: cfg.Server.MaxBodyBytes,
		Ingester: &uploads{svc: svc, s3: s.S3, bucket: s.Bucket, execs: s.Executions},
		Chat:     chat, Asker: s.Asker, Conversations: s.SQL}
	a, err := wire.Authenticator(cfg, s.SQL)
	if err != nil {
		return nil, err
	}
	a.Log = log
	deps.Auth, deps.AuthMode = a, a.Mode.String()
	if a.Mode.None() {
		return nil, &config.ValidationError{Problems: []string{"DOCMIND_AUTH=none would make every caller of the HTTP API the tenant's admin: set keys, jwt or keys,jwt"}}
	}
	deps.Members, deps.Admin, deps.Audit = s.SQL, s.SQL, s.SQL
	if lim := wire.Limiter(cfg, s.KV); lim != nil {
		deps.Limits = lim.WithLogger(log)
	}
	deps.Guard = httpapi.GuardOptions{AllowedOrigins: config.List(cfg.Auth.AllowedOrigins)}
	if m := wire.Memory(cfg, s.SQL, s.Memories, chain.Embedder, s.KV); m != nil && s.Memories != nil {
		chat.Memory, deps.Memories = m, m
	}
	return streamedElsewhere(http.MaxBytesHandler(httpapi.New(deps), cfg.Server.MaxBodyBytes)), nil
}

// streamedElsewhere answers the streamed endpoints with 404 and where to find them: API Gateway would
// buffer the whole stream (and cut it at 30 s).
func streamedElsewhere(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/chat" || r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/" {
			httpapi.WriteJSON(w, http.StatusNotFound, map[string]map[string]string{"error": {"code": "NotFound",
				"message": "the chat streams from the query function's URL (the stack output ChatUrl); this API answers POST /api/ask"}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checks are the health probes of the stores this function uses.
func checks(cfg config.Config, s backends) []httpapi.Check {
	return []httpapi.Check{
		{Name: "sql", Driver: cfg.SQL.Driver, Probe: s.SQL.Ping},
		{Name: "vector", Driver: cfg.Vector.Driver, Probe: func(ctx context.Context) error {
			_, err := s.Vectors.Count(ctx, rag.Filter{Tenant: cfg.Tenant})
			return err
		}},
		{Name: "kv", Driver: cfg.KV.Driver, Probe: s.KV.Ping},
	}
}
