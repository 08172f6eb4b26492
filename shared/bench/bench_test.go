package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestInterleaveAndPercentiles(t *testing.T) {
	var order []string
	got := Interleave(1, 3, func() { order = append(order, "a") }, func() { order = append(order, "b") })
	if strings.Join(order, "") != "abababab" || len(got[0]) != 3 || len(got[1]) != 3 {
		t.Fatalf("order %v, timings %d/%d", order, len(got[0]), len(got[1]))
	}
	ds := []time.Duration{5, 1, 4, 2, 3}
	if Median(ds) != 3 || Percentile(ds, 0.99) != 5 || Percentile(ds, 0) != 1 {
		t.Fatalf("median %v p99 %v", Median(ds), Percentile(ds, 0.99))
	}
}

func TestRunWritesReports(t *testing.T) {
	suites := []Suite{{"chunking", Chunking}, {"broken", func(context.Context, Options) ([]Row, error) {
		return nil, os.ErrDeadlineExceeded
	}}}
	rep := Run(context.Background(), suites, Options{Quick: true})
	if len(rep.Rows) != 6 || len(rep.Errors) != 1 || rep.Cores < 1 {
		t.Fatalf("report %+v", rep)
	}
	for _, r := range rep.Rows {
		if r.Pass != nil && !*r.Pass {
			t.Errorf("chunking goal failed: %+v", r)
		}
	}
	dir := t.TempDir()
	if err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	js, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if !strings.Contains(string(md), "| chunking |") || !strings.Contains(string(md), "error: broken") || !strings.Contains(string(js), `"suite": "chunking"`) {
		t.Fatalf("reports:\n%s\n%s", md, js)
	}
}
