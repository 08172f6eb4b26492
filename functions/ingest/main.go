// Command ingest is the Lambda that turns drop-folder uploads and presigned uploads into ingestion. S3
// sends ObjectCreated and ObjectRemoved notifications for inbox/<kb>/..., and ObjectCreated for
// uploads/<tenant>/<kb id>/<document id> (a presigned PUT, ingested as its requester's upload), to an SQS queue; this function consumes it in batches
// and reports failed messages individually (ReportBatchItemFailures), so a poisoned message goes to the
// dead-letter queue after the queue's maxReceiveCount and never blocks the others. Each accepted upload
// starts one execution of the ingestion state machine; each removal deletes the document everywhere.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/bucket"
	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
)

var version = "dev"

func main() { lambdamain.Run("ingest", version, run) }

func run(ctx context.Context, log *slog.Logger) error {
	h, err := wire(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	lambda.Start(h.handle)
	return nil
}

// handler consumes one SQS batch of S3 notifications.
type handler struct {
	trigger interface {
		Handle(ctx context.Context, ch ingest.SourceChange) (ingest.TriggerResult, error)
	}
	log *slog.Logger
}

// handle returns the partial batch response: the ids of messages to deliver again. A malformed message
// fails alone; its retries end in the dead-letter queue.
func (h *handler) handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return awsrt.Batch(ctx, h.log, ev, func(ctx context.Context, m events.SQSMessage) error {
		objs, err := awsrt.DecodeS3Message(m.Body)
		if err != nil {
			return err
		}
		for _, o := range objs {
			res, err := h.trigger.Handle(ctx, ingest.SourceChange{Removed: o.Removed, Bucket: o.Bucket, Key: o.Key,
				VersionID: o.VersionID, Sequencer: o.Sequencer, Size: o.Size})
			if err != nil {
				return err
			}
			h.log.Info("s3 event", "message_id", m.MessageId, "action", res.Action, "kb", res.KB, "document", res.DocumentID,
				"execution", res.Execution, "sequencer", o.Sequencer)
		}
		return nil
	}), nil
}

// settings are the ingest function's own variables (beyond shared/config).
type settings struct {
	StateMachineARN string // DOCMIND_INGEST_STATE_MACHINE_ARN
}

func loadSettings(getenv func(string) string) (settings, error) {
	s := settings{StateMachineARN: getenv("DOCMIND_INGEST_STATE_MACHINE_ARN")}
	if s.StateMachineARN == "" {
		return s, &config.ValidationError{Problems: []string{"DOCMIND_INGEST_STATE_MACHINE_ARN is required"}}
	}
	return s, nil
}

func wire(ctx context.Context, getenv func(string) string, log *slog.Logger) (*handler, error) {
	set, err := loadSettings(getenv)
	if err != nil {
		return nil, err
	}
	cfg, err := awsenv.Load(ctx, getenv)
	if err != nil {
		return nil, err
	}
	if cfg.Tenant == "" {
		return nil, rag.Errorf("ingest.wire", rag.KindInvalid, "DOCMIND_TENANT is required")
	}
	// removals delete vectors and stored sources, so the function needs the vector index and the bucket
	c, err := bucket.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: c.SQL, Vectors: c.Vectors, Blobs: c.Blobs}}, InboxTenant: cfg.Tenant, Leases: c.SQL}
	t := &ingest.Trigger{Service: svc, Events: c.SQL, Leases: c.SQL, Tenant: cfg.Tenant, Name: awsrt.ExecutionName,
		Users: c.SQL, MaxUploadBytes: cfg.Server.MaxBodyBytes,
		Executions: awsenv.Executions{Client: sfn.NewFromConfig(ac), StateMachineARN: set.StateMachineARN}}
	return &handler{trigger: t, log: log}, nil
}
