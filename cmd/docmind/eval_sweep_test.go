package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/eval"
)

func TestParseSweep(t *testing.T) {
	base := sweepSetting{"k1": 0.9, "b": 0.4, "title": 2}
	grid, err := parseSweep("k1=0.9,1.2; title=1,2,3 fb_docs=10", base)
	if err != nil || len(grid) != 6 {
		t.Fatalf("grid %v, %v", grid, err)
	}
	for _, s := range grid {
		if s["b"] != 0.4 || s["fb_docs"] != 10 {
			t.Fatalf("setting %v: unnamed keys keep the base, named ones their value", s)
		}
	}
	if base["fb_docs"] != 0 {
		t.Fatal("parseSweep changed its base")
	}
	for _, bad := range []string{"", "k1", "k3=1", "k1=a", "k1=-1", "k1=1 k1=2", "k1=1,2,3,4,5,6,7,8,9,10 b=1,2,3,4,5,6,7,8,9,10 title=1,2,3,4,5"} {
		if _, err := parseSweep(bad, base); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The chosen setting is the best mean no worse than the configured one on any dataset and at most
// twice its p50.
func TestChooseSweep(t *testing.T) {
	row := func(name string, ms float64, ndcg ...float64) sweepRow {
		r := sweepRow{Setting: name}
		for _, n := range ndcg {
			r.Results = append(r.Results, eval.Result{NDCG10: n, P50ms: ms})
			r.Mean += n / float64(len(ndcg))
		}
		return r
	}
	rows := []sweepRow{row("configured", 1, 0.70, 0.78), row("loses hotpot", 1, 0.75, 0.77), row("slow", 2.5, 0.72, 0.80), row("good", 1.5, 0.71, 0.79)}
	chooseSweep(rows)
	for _, r := range rows {
		if r.Chosen != (r.Setting == "good") {
			t.Fatalf("%s chosen %v", r.Setting, r.Chosen)
		}
	}
	rows = []sweepRow{row("configured", 1, 0.70), row("worse", 1, 0.69)}
	chooseSweep(rows)
	if !rows[0].Chosen || rows[1].Chosen {
		t.Fatal("nothing better: the configured setting stays")
	}
}

func TestEvalSweepCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(`{"_id":"d1","title":"Aspirin","text":"Aspirin prevents heart attacks in adults."}
{"_id":"d2","title":"Statins","text":"Statins lower cholesterol levels."}
{"_id":"d3","title":"Heart","text":"A heart attack follows a blocked artery."}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(`{"_id":"q1","text":"aspirin heart attack"}
{"_id":"q2","text":"lowering cholesterol"}
`), 0o644)
	os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
	os.WriteFile(filepath.Join(dir, "qrels", "train.tsv"), []byte("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n"), 0o644)
	data := t.TempDir()
	code, out, errOut := runCLI(t, nil, "eval", "--data", data, "--dataset", dir, "--sweep", "k1=0.9,1.2 title=1,2 fb_docs=0,2 fb_terms=5 orig_weight=0.5", "--json")
	var rows []sweepRow
	if code != 0 || json.Unmarshal([]byte(out), &rows) != nil {
		t.Fatalf("sweep: exit %d %s %s", code, out, errOut)
	}
	// the configured setting first, then the 8 others of the grid (none repeats it: fb_terms differs)
	if len(rows) != 9 || !strings.Contains(rows[0].Setting, "k1=0.9 b=0.4 delta=0 title=2 context=0.3 fb_docs=0") {
		t.Fatalf("%d rows, first %q", len(rows), rows[0].Setting)
	}
	chosen := 0
	for _, r := range rows {
		if len(r.Results) != 1 || r.Results[0].Queries != 2 || r.Results[0].Variant != "bm25" {
			t.Fatalf("row %s: %+v", r.Setting, r.Results)
		}
		if r.Chosen {
			chosen++
		}
	}
	if chosen != 1 {
		t.Fatalf("%d rows chosen", chosen)
	}
	code, out, _ = runCLI(t, nil, "eval", "--data", data, "--dataset", dir, "--sweep", "k1=0.9,1.2")
	if code != 0 || !strings.Contains(out, "(configured)") || !strings.Contains(out, "chosen (queries not in CJK") {
		t.Fatalf("markdown sweep: %d %s", code, out)
	}
	if code, _, errOut := runCLI(t, nil, "eval", "--data", data, "--dataset", dir, "--sweep", "k9=1"); code != exitConfig || !strings.Contains(errOut, "k9=1") {
		t.Fatalf("bad spec: %d %s", code, errOut)
	}
	if code, _, _ := runCLI(t, nil, "eval", "--data", data, "--dataset", dir, "--sweep", "k1=1", "--variant", "full"); code != exitConfig {
		t.Fatalf("sweep of another variant: %d", code)
	}
}
