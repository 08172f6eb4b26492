package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/docmind/docmind/functions/internal/lambdatest"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/deptest"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/textract"
)

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/stage") }

// Through the library's own invoke path: a bad payload is reported as errorType Invalid (caught by the
// ASL, never retried), not as the Go type name.
func TestDispatchReportsKindAsErrorType(t *testing.T) {
	w := &ingest.Workflow{Stages: &ingest.Stages{}}
	for _, c := range []struct{ payload, want string }{
		{`{"stage":"Teleport","input":{}}`, "Invalid"},
		{`{"stage":"Chunk","input":{"tenant":"t1","kb_id":"bad id!","document_id":"d"}}`, "Invalid"},
	} {
		var resp messages.InvokeResponse
		lambda.NewFunction(lambda.NewHandler(awsrt.Handler(w.Dispatch))).Invoke(&messages.InvokeRequest{Payload: []byte(c.payload)}, &resp)
		if resp.Error == nil || resp.Error.Type != c.want {
			t.Errorf("payload %s: %+v, want errorType %s", c.payload, resp.Error, c.want)
		}
	}
}

func TestWireRefusesEmbeddedStores(t *testing.T) {
	lambdatest.RefusesEmbeddedStores(t, func(getenv func(string) string) error {
		_, err := wire(context.Background(), getenv, slog.New(slog.DiscardHandler))
		return err
	})
}

func TestEnvelopeShape(t *testing.T) {
	var env ingest.Envelope
	if err := json.Unmarshal([]byte(`{"stage":"Verify","input":{"tenant":"t"}}`), &env); err != nil || env.Stage != "Verify" || string(env.Input) != `{"tenant":"t"}` {
		t.Fatalf("%+v %v", env, err)
	}
}

// On AWS, auto and textract read scans with Amazon Textract against the documents bucket; off and
// tesseract (no binary on Lambda) give no engine.
func TestOCREngine(t *testing.T) {
	for mode, want := range map[string]bool{"auto": true, "textract": true, "off": false, "tesseract": false, "vision": false} {
		var cfg config.Config
		cfg.Ingest.OCR, cfg.Blob.Bucket = mode, "docs-bucket"
		got := ocrEngine(cfg, aws.Config{Region: "eu-west-1"}, slog.New(slog.DiscardHandler))
		if (got != nil) != want {
			t.Errorf("DOCMIND_OCR=%s: engine %v, want one: %v", mode, got, want)
		}
		if c, ok := got.(*textract.Client); ok && c.Bucket != "docs-bucket" {
			t.Errorf("Textract reads from bucket %q", c.Bucket)
		}
	}
}

// DOCMIND_OCR=vision reads scans with the chat model inside the Extract task: the model named by
// DOCMIND_OCR_MODEL, else the main model.
func TestVisionOCR(t *testing.T) {
	var cfg config.Config
	cfg.Ingest.OCR, cfg.Chat.MainModel = "vision", "main"
	if v := visionOCR(cfg); v.String() != "vision(main)" {
		t.Errorf("engine %s", v)
	}
	cfg.Ingest.OCRModel = "reader"
	if v := visionOCR(cfg); v.String() != "vision(reader)" {
		t.Errorf("engine %s", v)
	}
}
