package main

import (
	"bytes"
	"fmt"
	"image"
	pngenc "image/png"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/ocr"
)

// Without Tesseract, auto starts with OCR off and tesseract refuses to start, naming the packages.
func TestOCREngineChoice(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Setenv("PATH", t.TempDir())
	for _, mode := range []string{"off", "auto"} {
		if e, err := ocrEngine(config.Config{Ingest: config.Ingest{OCR: mode, OCRLangs: "auto"}}, log); e != nil || err != nil {
			t.Errorf("%s without tesseract: %v, %v; want no engine and no error", mode, e, err)
		}
	}
	_, err := ocrEngine(config.Config{Ingest: config.Ingest{OCR: "tesseract", OCRLangs: "auto"}}, log)
	if err == nil || !strings.Contains(err.Error(), ocr.Install) {
		t.Errorf("tesseract without tesseract: %v; want the install command", err)
	}
	// vision needs no tesseract: the model named by DOCMIND_OCR_MODEL, else the main model
	for model, want := range map[string]string{"": "vision(main)", "reader": "vision(reader)"} {
		cfg := config.Config{Ingest: config.Ingest{OCR: "vision", OCRModel: model}, Chat: config.Chat{Provider: "openai", BaseURL: "http://127.0.0.1:1/v1", MainModel: "main"}}
		e, err := ocrEngine(cfg, log)
		if err != nil || e == nil || e.(fmt.Stringer).String() != want {
			t.Errorf("vision with DOCMIND_OCR_MODEL=%q: %v, %v; want %s", model, e, err, want)
		}
	}
	// Textract's jobs are waited for by the AWS state machine: one machine refuses it, saying what to use
	_, err = ocrEngine(config.Config{Ingest: config.Ingest{OCR: "textract", OCRLangs: "auto"}}, log)
	if err == nil || !strings.Contains(err.Error(), "AWS ingestion workflow only") || !strings.Contains(err.Error(), "use auto, tesseract or vision") {
		t.Errorf("textract on one machine: %v", err)
	}
}

// `docmind ingest`, `eval` and `connector sync` open the ingestion without a logger; without Tesseract
// the auto setting said "OCR is off" through it and the command crashed (nil logger). A text file is
// ingested and an image refused with the install command.
func TestIngestWithoutTesseract(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if e, err := ocrEngine(config.Config{Ingest: config.Ingest{OCR: "auto", OCRLangs: "auto"}}, nil); e != nil || err != nil {
		t.Fatalf("auto without tesseract and without a logger: %v, %v", e, err)
	}
	data, docs := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(docs, "leave.md"), []byte("# Leave\n\nEmployees get 20 days of annual leave.\n"), 0o644)
	var png bytes.Buffer
	if err := pngenc.Encode(&png, image.NewGray(image.Rect(0, 0, 40, 20))); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(docs, "scan.png"), png.Bytes(), 0o644)
	code, out, errOut := runCLI(t, nil, "ingest", "--kb", "handbook", "--data", data, docs)
	all := out + errOut
	if !strings.Contains(all, "1 embedded") || !strings.Contains(all, "1 failed") || !strings.Contains(all, "scan.png") || !strings.Contains(all, ocr.Install) {
		t.Fatalf("ingest without tesseract: exit %d\n%s\n%s", code, out, errOut)
	}
}
