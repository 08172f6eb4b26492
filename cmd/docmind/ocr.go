package main

import (
	"cmp"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/ocr"
)

// ocrEngine builds the engine DOCMIND_OCR asks for. off gives nil; auto gives nil when Tesseract is not
// installed (said once in the log: images and scanned PDFs are then refused with the install command,
// and everything else works); tesseract fails the start when it or a language is missing; vision reads
// pages with the chat model (the config check made sure one is set); textract is refused: it runs in
// the AWS ingestion workflow only.
func ocrEngine(cfg config.Config, log *slog.Logger) (extract.OCR, error) {
	switch cfg.Ingest.OCR {
	case "off":
		return nil, nil
	case "textract":
		return nil, fmt.Errorf("DOCMIND_OCR=textract: Amazon Textract reads documents in the AWS ingestion workflow only (its jobs are waited for by the state machine); on one machine use auto, tesseract or vision")
	case "vision":
		// its own client: a page of small print takes longer than an answer, and the engine bounds
		// each page itself
		model := llm.NewOpenAI(cfg.Chat.BaseURL, cfg.Chat.APIKey, &http.Client{Timeout: 5 * time.Minute})
		return ocr.NewVision(model, cmp.Or(cfg.Ingest.OCRModel, cfg.Chat.MainModel)), nil
	}
	t, err := ocr.New(cfg.Ingest.OCRLangs)
	if err != nil {
		if cfg.Ingest.OCR == "auto" {
			if log != nil { // the CLI's commands pass none: a refused image says the install command itself
				log.Info("OCR is off: images and scanned PDFs will be refused", "reason", err.Error())
			}
			return nil, nil
		}
		return nil, err
	}
	return t, nil
}
