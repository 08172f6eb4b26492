package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/docmind/docmind/functions/internal/inittest"
)

// TestInitFigures: the function's init over delayed stores (inittest.Measure).
func TestInitFigures(t *testing.T) {
	inittest.Measure(t, "query", func(getenv func(string) string) (func(), error) {
		h, err := open(context.Background(), getenv, nil, slog.New(slog.DiscardHandler))
		_ = h
		return nil, err
	})
}
