// Command query is the chat Lambda behind a Function URL in RESPONSE_STREAM mode: POST /api/chat (Server-
// Sent Events), POST /v1/chat/completions, the knowledge-base reads the page needs and the page at /,
// served by aws-lambda-go/lambdaurl from the same http.Handler `docmind serve` uses, over Aurora MySQL,
// Milvus/Zilliz and ElastiCache Redis. Callers are identified by API keys or JWT (DOCMIND_AUTH must be
// keys, jwt or keys,jwt): DOCMIND_AUTH=none is refused whatever the Function URL's AuthType
// (DOCMIND_FUNCTION_URL_AUTH), since AWS_IAM behind CloudFront only proves the request came through
// CloudFront (requireAuth). Because Lambda keeps running after a client leaves, every stream is capped (caps.go).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambdaurl"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/httpfn"
	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/functions/internal/presign"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/lambdafn"
	"github.com/docmind/docmind/shared/obs"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/milvus"
)

var version = "dev"

func main() { lambdamain.Run("query", version, run) }

// run sets up tracing (the trace id in every log line from here on), builds the handler and serves.
func run(ctx context.Context, log *slog.Logger) error {
	tr, log, err := httpfn.Trace(ctx, "docmind-query", version, os.Getenv, log)
	if err != nil {
		return err
	}
	h, err := open(ctx, os.Getenv, tr, log)
	if err != nil {
		return err
	}
	lambdaurl.Start(h)
	return nil
}

// open reads the configuration (secrets resolved once), checks the caps and the authentication mode
// before any store is opened, then opens the stores this function reads (S3 only to sign the page's
// presigned uploads), no embedded store, and Milvus through the official client's adapter (openVectors).
func open(ctx context.Context, getenv func(string) string, tr *obs.Tracing, log *slog.Logger) (http.Handler, error) {
	cfg, env, err := awsenv.LoadEnv(ctx, getenv)
	if err != nil {
		return nil, err
	}
	c, err := loadCaps(getenv)
	if err != nil {
		return nil, err
	}
	if err := requireAuth(cfg.Auth.Mode, c.URLAuth); err != nil {
		return nil, err
	}
	if cfg.KV.Driver != "redis" {
		return nil, kvError(cfg.KV.Driver)
	}
	s, err := httpfn.Open(ctx, cfg, httpfn.RedisOptions(cfg, env), openVectors)
	if err != nil {
		return nil, err
	}
	off, err := offloaded(ctx, c, tr)
	if err != nil {
		s.Close()
		return nil, err
	}
	up, err := presigned(ctx, cfg, s.SQL)
	if err != nil {
		s.Close()
		return nil, err
	}
	if off.Connectors, err = connectorOps(ctx, cfg, s.SQL); err != nil {
		s.Close()
		return nil, err
	}
	h, err := newHandler(cfg, c, s, off, up, tr, log)
	if err != nil {
		s.Close()
	}
	return h, err
}

// uploads is how the page this function serves sends files: presigned PUTs to the documents bucket
// (POST /api/kbs/{kb}/uploads), and the bucket's origin for the page's Content-Security-Policy. A zero
// value issues none (tests without S3).
type uploads struct {
	Presigner httpapi.Presigner
	Origin    string
}

// presigned signs the page's uploads with this function's role (s3:PutObject on presigned upload keys
// only): presigning is local, no call is made at start or per URL.
func presigned(ctx context.Context, cfg config.Config, docs presign.DocumentCreator) (uploads, error) {
	if cfg.Blob.Bucket == "" {
		return uploads{}, nil
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return uploads{}, err
	}
	pc := awss3.NewPresignClient(awsenv.S3Client(ac, cfg))
	origin, err := presign.Origin(ctx, pc, cfg.Blob.Bucket)
	if err != nil {
		return uploads{}, fmt.Errorf("presigned uploads: %w", err)
	}
	return uploads{Presigner: &presign.S3{Docs: docs, S3: pc, Bucket: cfg.Blob.Bucket}, Origin: origin}, nil
}

// offload holds the retrieval steps done by other functions; a nil one runs in process.
type offload struct {
	Reranker rank.Reranker
	Grader   retrieve.Grader
	// Connectors runs the page's connector settings over the sync state machine and the schedules
	// (connectors.go); nil: not served
	Connectors httpapi.Connectors
}

// offloaded builds the rerank and grade functions' clients named by the caps: one SDK Lambda client for
// both (none is built when neither is named), carrying the trace of the request in flight (tr).
func offloaded(ctx context.Context, c caps, tr *obs.Tracing) (offload, error) {
	var off offload
	if c.RerankFunction == "" && c.GradeFunction == "" {
		return off, nil
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return off, err
	}
	inv := lambdafn.NewInvoker(ac, "", tr.Propagator())
	if fn := c.RerankFunction; fn != "" {
		off.Reranker = &lambdafn.Reranker{Function: lambdafn.Function{Client: inv, Name: fn, Timeout: c.RerankTimeout}}
	}
	if fn := c.GradeFunction; fn != "" {
		off.Grader = &lambdafn.Grader{Function: lambdafn.Function{Client: inv, Name: fn, Timeout: c.GradeTimeout}}
	}
	return off, nil
}

// openVectors opens a collection through the official client's adapter, Lazy and Late: nothing is
// dialled at init (the first question connects), and the query side never creates or loads a
// collection. On a fresh stack the api, ingest and stage functions create the collections on their
// first use, which may come after this function's (the page is served here), so until then a search
// fails NotFound (the chat answers from the keyword leg with "vector" in degraded, memory is skipped,
// the health check names the cause) instead of the whole function failing its start.
func openVectors(ctx context.Context, cfg config.Config, collection string) (store.VectorIndex, error) {
	v := cfg.Vector
	ix, err := milvus.Open(ctx, milvus.Options{Addr: v.MilvusAddr, Token: v.MilvusToken, Collection: collection, Dim: v.Dim,
		CallTimeout: v.CallTimeout, Late: true, Lazy: true})
	if err != nil {
		return nil, err
	}
	return ix, nil
}
