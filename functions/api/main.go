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
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/bucket"
	"github.com/docmind/docmind/functions/internal/httpfn"
	"github.com/docmind/docmind/functions/internal/ingestenv"
	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/functions/internal/presign"
	"github.com/docmind/docmind/functions/internal/stores"
	"github.com/docmind/docmind/shared/askflow"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/obs"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/wire"
)

var version = "dev"

func main() { lambdamain.Run("api", version, run) }

// run sets up tracing (the trace id in every log line from here on), builds the handler and serves.
func run(ctx context.Context, log *slog.Logger) error {
	tr, log, err := httpfn.Trace(ctx, "docmind-api", version, os.Getenv, log)
	if err != nil {
		return err
	}
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
	cfg, env, err := awsenv.LoadEnv(ctx, getenv)
	if err != nil {
		return nil, err
	}
	set, err := loadSettings(getenv)
	if err != nil {
		return nil, err
	}
	hs, err := httpfn.Open(ctx, cfg, httpfn.RedisOptions(cfg, env), stores.Vectors)
	if err != nil {
		return nil, err
	}
	blobs, err := bucket.Blobs(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	s3c := awsenv.S3Client(ac, cfg)
	s := backends{Stores: hs, Blobs: blobs, S3: s3c, Presign: awss3.NewPresignClient(s3c), Bucket: cfg.Blob.Bucket,
		Executions: awsenv.Executions{Client: sfn.NewFromConfig(ac), StateMachineARN: set.IngestStateMachine}}
	if set.AnswerStateMachine != "" {
		s.Asker = &askflow.Asker{Client: sfn.NewFromConfig(ac), StateMachineARN: set.AnswerStateMachine, Propagator: obs.Propagator()}
	}
	return newHandler(cfg, s, log)
}

// backends are what the handler is built over: the cloud adapters in the main, embedded ones and fakes
// in tests.
type backends struct {
	httpfn.Stores
	Blobs      store.Blobs
	S3         ObjectPutter
	Presign    presign.PutPresigner // nil: no presigned uploads (POST /api/kbs/{kb}/uploads answers 404)
	Bucket     string
	Executions ingest.Executions
	Asker      httpapi.Asker // nil: /api/ask runs the pipeline in this function
}

// newHandler wires the management API as `docmind serve` wires it, with uploads through S3 and the
// ingestion state machine, and the browser-origin checks without the loopback rule.
func newHandler(cfg config.Config, s backends, log *slog.Logger) (http.Handler, error) {
	emb, err := ingestenv.Embedder(cfg)
	if err != nil {
		return nil, err
	}
	svc := ingestenv.Service(cfg, ingestenv.Stages(cfg, ingestenv.Stores{Records: s.SQL, Vectors: s.Vectors, Blobs: s.Blobs}, emb, log))
	chain, err := wire.Retriever(cfg, s.Keyword, s.Vectors, s.SQL)
	if err != nil {
		return nil, err
	}
	chat := wire.Chat(cfg, chain, s.SQL, s.KV)
	deps := httpapi.Deps{Version: version, Logger: log, Checks: httpfn.Checks(cfg, s.Stores), Library: s.SQL, MaxUploadBytes: cfg.Server.MaxBodyBytes,
		Ingester: &uploads{svc: svc, s3: s.S3, bucket: s.Bucket, execs: s.Executions},
		Chat:     chat, Asker: s.Asker, Conversations: s.SQL}
	if s.Presign != nil {
		deps.Presigner = &presign.S3{Docs: s.SQL, S3: s.Presign, Bucket: s.Bucket}
	}
	mode, err := httpfn.Identity(cfg, s.Stores, &deps, log)
	if err != nil {
		return nil, err
	}
	if mode.None() {
		return nil, &config.ValidationError{Problems: []string{"DOCMIND_AUTH=none would make every caller of the HTTP API the tenant's admin: set keys, jwt or keys,jwt"}}
	}
	httpfn.Memory(cfg, s.Stores, chain.Embedder, chat, &deps)
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
