package main

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"testing"

	"github.com/docmind/docmind/functions/internal/inittest"
)

// TestInitFigures starts the function against every store behind a proxy adding 0, 2 and 10 ms per
// round trip (secrets from a Secrets Manager endpoint, MySQL, Redis, Milvus) and logs its init time: the
// figure in docs/aws-runtime.md. DOCMIND_INIT_RUNS=9 gives a median of nine; by default one run
// checks that init works over the delayed stores.
//
//	DOCMIND_INIT_RUNS=9 go test -count=1 -run TestInitFigures -v ./functions/api/
func TestInitFigures(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("DOCMIND_INIT_RUNS"))
	inittest.Measure(t, "api", max(n, 1), func(getenv func(string) string) (func(), error) {
		h, err := open(context.Background(), getenv, slog.New(slog.DiscardHandler))
		_ = h
		return nil, err
	})
}
