package main

import (
	"fmt"
	"log/slog"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ocr"
)

// ocrEngine builds the engine DOCMIND_OCR asks for. off gives nil; auto gives nil when Tesseract is not
// installed (said once in the log: images and scanned PDFs are then refused with the install command,
// and everything else works); tesseract fails the start when it or a language is missing.
func ocrEngine(cfg config.Ingest, log *slog.Logger) (extract.OCR, error) {
	switch cfg.OCR {
	case "off":
		return nil, nil
	case "textract":
		return nil, fmt.Errorf("DOCMIND_OCR=textract: Amazon Textract reads documents in the AWS ingestion workflow only (its jobs are waited for by the state machine); on one machine use auto or tesseract")
	}
	t, err := ocr.New(cfg.OCRLangs)
	if err != nil {
		if cfg.OCR == "auto" {
			log.Info("OCR is off: images and scanned PDFs will be refused", "reason", err.Error())
			return nil, nil
		}
		return nil, err
	}
	return t, nil
}
