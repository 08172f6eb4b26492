// Command stage is the Lambda behind every Task of the ingestion state machine
// (infra/statemachines/ingest.asl.json). The payload names the stage ({"stage":"Chunk","input":{...}});
// the function dispatches it to shared/ingest's Workflow and reports errors with the error kind as
// errorType, which the ASL's Retry and Catch match. The template deploys it twice: ExtractFunction with
// the memory PDF extraction needs, StageFunction for the rest.
package main

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/bucket"
	"github.com/docmind/docmind/functions/internal/ingestenv"
	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/ocr"
	"github.com/docmind/docmind/shared/textract"
)

var version = "dev"

func main() { lambdamain.Run("stage", version, run) }

// ocrEngine is Amazon Textract for DOCMIND_OCR auto or textract: a Lambda has no Tesseract binary, so
// on AWS auto means Textract (the extract function's role may call it); off and tesseract give none,
// and images and scans then fail with a message saying OCR is off.
func ocrEngine(cfg config.Config, ac aws.Config, log *slog.Logger) ingest.Textract {
	switch cfg.Ingest.OCR {
	case "auto", "textract":
		return textract.New(ac, textract.Options{Bucket: cfg.Blob.Bucket})
	case "tesseract":
		log.Warn("DOCMIND_OCR=tesseract: a Lambda has no Tesseract; images and scans will be refused (use textract)")
	}
	return nil
}

// visionOCR reads images and scanned pages with the chat model (DOCMIND_OCR=vision) inside the
// Extract task, within the extract function's timeout: each page is bounded by the engine, but a long
// scan is better sent to Textract.
func visionOCR(cfg config.Config) *ocr.Vision {
	model := llm.NewOpenAI(cfg.Chat.BaseURL, cfg.Chat.APIKey, &http.Client{Timeout: 5 * time.Minute})
	return ocr.NewVision(model, cmp.Or(cfg.Ingest.OCRModel, cfg.Chat.MainModel))
}

func run(ctx context.Context, log *slog.Logger) error {
	w, err := wire(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	lambda.Start(awsrt.Handler(w.Dispatch))
	return nil
}

// wire opens the stores and builds the workflow; nothing is called per invocation.
func wire(ctx context.Context, getenv func(string) string, log *slog.Logger) (*ingest.Workflow, error) {
	cfg, err := awsenv.Load(ctx, getenv)
	if err != nil {
		return nil, err
	}
	c, err := bucket.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	emb, err := ingestenv.Embedder(cfg)
	if err != nil {
		return nil, err
	}
	st := ingestenv.Stages(cfg, ingestenv.Stores{Records: c.SQL, Vectors: c.Vectors, Blobs: c.Blobs}, emb, log)
	st.Textract = ocrEngine(cfg, ac, log)
	if cfg.Ingest.OCR == "vision" {
		st.Limits.OCR = visionOCR(cfg)
	}
	w := &ingest.Workflow{Stages: st, Leases: c.SQL, Events: c.SQL, Objects: awsenv.Objects{S3: awsenv.S3Client(ac, cfg)},
		BatchSize: max(cfg.Embeddings.BatchSize, 1) * 16}
	// Commit and MarkFailed start a follow-up execution for a version uploaded while this one ran
	// (Workflow.FollowUp); without the variable a version whose own execution gave up on the lease is lost
	if arn := getenv("DOCMIND_INGEST_STATE_MACHINE_ARN"); arn != "" {
		w.Executions, w.Name = awsenv.Executions{Client: sfn.NewFromConfig(ac), StateMachineARN: arn}, awsrt.ExecutionName
	} else {
		// the extraction function (Extract only) needs none; on the stage function the template sets it
		log.Info("no follow-up executions: DOCMIND_INGEST_STATE_MACHINE_ARN is not set")
	}
	return w, nil
}
