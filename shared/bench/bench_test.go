package bench

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/rag"
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

// A run of some suites keeps the figures of the others from the results it replaces, labelled with
// their run's date; a suite that ran again replaces its earlier rows.
func TestWriteCarriesOtherSuites(t *testing.T) {
	dir := t.TempDir()
	first := Report{Date: "2026-01-01", Suites: []string{"vector", "bm25"}, Rows: []Row{
		{Suite: "vector", What: "old vector row", Ours: 1, Unit: "ms"},
		{Suite: "bm25", What: "old bm25 row", Ours: 2, Unit: "docs/s"},
	}}
	if err := first.Write(dir); err != nil {
		t.Fatal(err)
	}
	second := Report{Date: "2026-02-02", Suites: []string{"bm25"}, Rows: []Row{{Suite: "bm25", What: "new bm25 row", Ours: 3, Unit: "docs/s"}}}
	if err := second.Write(dir); err != nil {
		t.Fatal(err)
	}
	third := Report{Date: "2026-03-03", Suites: []string{"chunking"}, Rows: []Row{{Suite: "chunking", What: "chunk row", Ours: 4, Unit: "MB/s"}}}
	if err := third.Write(dir); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "results.md"))
	for _, want := range []string{"chunk row", "new bm25 row [run of 2026-02-02]", "old vector row [run of 2026-01-01]"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "old bm25 row") {
		t.Errorf("a suite that ran again kept its old rows:\n%s", md)
	}
}

// The overlap reference and the FTS5 peer work on a tiny corpus: our index agrees with the exhaustive
// ranking exactly.
func TestKeywordReferenceAndPeer(t *testing.T) {
	texts := []string{"aspirin prevents heart attacks", "statins lower cholesterol", "aspirin dosage for adults", "heart rate monitors"}
	ids := []string{"c0000000", "c0000001", "c0000002", "c0000003"}
	ref := exhaustive(texts, bm25.Params{K1: 0.9, B: 0.4, TitleWeight: 1})
	want := ref("aspirin heart")
	if len(want) != 3 || want[0] != "c0000000" {
		t.Fatalf("reference %v", want)
	}
	ix := bm25.New(bm25.Params{K1: 0.9, B: 0.4, TitleWeight: 1})
	for i := range texts {
		ix.Add(bm25.Doc{ID: ids[i], Tenant: "t", KBID: "k", DocumentID: "d", Content: texts[i]})
	}
	hits, _ := ix.Search(context.Background(), "aspirin heart", 10, rag.Filter{Tenant: "t"})
	got := make([]string, len(hits))
	for i, h := range hits {
		got[i] = h.ID
	}
	if overlap(got, want) != 1 || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("index %v, exhaustive %v", got, want)
	}
	p := fts5Peer()
	defer p.close()
	if err := p.index(ids, texts); err != nil {
		t.Fatal(err)
	}
	res, err := p.search("aspirin heart")
	if err != nil || len(res) != 3 {
		t.Fatalf("fts5: %v %v", res, err)
	}
}

// After each suite the run settles (collects, returns the heap, syncs the file system) before the
// next starts: a suite's garbage is gone by then, and the run says what stayed live.
func TestRunSettlesBetweenSuites(t *testing.T) {
	var lines []string
	var garbage [][]byte
	var liveAtSecond uint64
	suites := []Suite{
		{"big", func(context.Context, Options) ([]Row, error) {
			for range 64 {
				garbage = append(garbage, make([]byte, 1<<20))
			}
			garbage = nil // 64 MB the suite no longer needs
			return nil, nil
		}},
		{"next", func(context.Context, Options) ([]Row, error) {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			liveAtSecond = m.HeapAlloc
			return nil, nil
		}},
	}
	Run(context.Background(), suites, Options{Progress: func(s string) { lines = append(lines, s) }})
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "after big: ") || !strings.HasPrefix(lines[1], "after next: ") {
		t.Fatalf("progress %q", lines)
	}
	if liveAtSecond > 32<<20 {
		t.Fatalf("the second suite started with %d MB of heap: the first one's 64 MB of garbage was not collected", liveAtSecond>>20)
	}
}
