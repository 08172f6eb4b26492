package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/docmind/docmind/functions/internal/inittest"
)

// TestInitFigures: the function's init over delayed stores (inittest.Measure).
func TestInitFigures(t *testing.T) {
	inittest.Measure(t, "ingest", func(getenv func(string) string) (func(), error) {
		h, err := wire(context.Background(), getenv, slog.New(slog.DiscardHandler))
		_ = h
		return nil, err
	})
}
