// Command connector is the Lambda behind every Task of the connector sync state machine
// (infra/statemachines/connector-sync.asl.json, started per connector by its EventBridge Scheduler
// schedule, or by the HTTP API through shared/connector/awsops, also to remove a connector). The
// payload names the step ({"step":"Begin","input":{...}}); shared/connector/syncflow
// runs it against Aurora, Milvus (deletions) and the documents bucket, and errors carry their kind as
// errorType for the ASL's Retry and Catch. Connector credentials come from the Secrets Manager secret
// each connector's settings name ("credentials_secret"), read once per instance, never logged.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/bucket"
	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/sources"
	"github.com/docmind/docmind/shared/connector/syncflow"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
)

var version = "dev"

func main() { lambdamain.Run("connector", version, run) }

func run(ctx context.Context, log *slog.Logger) error {
	f, err := wire(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	lambda.Start(awsrt.Handler(f.Dispatch))
	return nil
}

// wire opens the stores and builds the flow; nothing is called per invocation.
func wire(ctx context.Context, getenv func(string) string, log *slog.Logger) (*syncflow.Flow, error) {
	cfg, err := awsenv.Load(ctx, getenv)
	if err != nil {
		return nil, err
	}
	if cfg.Tenant == "" {
		return nil, rag.Errorf("connector.wire", rag.KindInvalid, "DOCMIND_TENANT is required")
	}
	if cfg.Blob.Bucket == "" {
		return nil, &config.ValidationError{Problems: []string{"DOCMIND_S3_BUCKET is required (items are staged there for ingestion)"}}
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	// deletions remove vectors and stored sources, so the function holds the vector index and the bucket
	c, err := bucket.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	secrets := &awsrt.Cache{Reader: awsrt.SecretsManager{Client: secretsmanager.NewFromConfig(ac)}}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: c.SQL, Vectors: c.Vectors, Blobs: c.Blobs}},
		InboxTenant: cfg.Tenant, Leases: c.SQL}
	return &syncflow.Flow{Tenant: cfg.Tenant, Bucket: cfg.Blob.Bucket, Blobs: c.Blobs, Store: c.SQL, Docs: svc,
		Source: func(ctx context.Context, rc rag.Connector) (connector.Source, error) {
			return sources.Build(ctx, cfg, rc, getenv, secrets)
		},
		Name: awsrt.ExecutionName, Log: log,
		// the Remove step (a removal started from the HTTP API, awsops): this function may delete
		// documents, the function serving the API may not
		Engine: &connector.Engine{Indexer: svc, Documents: c.SQL, State: c.SQL, Leases: c.SQL, Metadata: c.SQL, Log: log}}, nil
}
