package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/bench"
)

// TestBenchMillionSmall runs the million suite at a few thousand chunks in this process: the generated
// knowledge base goes through the real ingestion into the default stores, is opened again from disk,
// queried with the default chain and checked by reconcile, and every row of the suite is reported.
func TestBenchMillionSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("ingests a few thousand chunks")
	}
	code, out, errOut := runCLI(t, nil, "bench", "--suite", "million", "--chunks", "3000", "--same-process", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	rows := map[string]bench.Row{}
	for _, r := range rep.Rows {
		if r.Suite != "million" {
			continue
		}
		switch {
		case strings.HasPrefix(r.What, "ingest "):
			rows["ingest"] = r
		case strings.HasPrefix(r.What, "start-up"):
			rows["start-up"] = r
		case strings.HasSuffix(r.What, ": p50"):
			rows["p50"] = r
		case strings.HasSuffix(r.What, ": p99"):
			rows["p99"] = r
		case strings.HasPrefix(r.What, "reconcile"):
			rows["reconcile"] = r
		case strings.Contains(r.What, "resident memory"):
			rows["memory"] = r
		}
	}
	for _, k := range []string{"ingest", "start-up", "p50", "p99", "reconcile", "memory"} {
		r, ok := rows[k]
		if !ok {
			t.Fatalf("no %s row in %+v", k, rep.Rows)
		}
		if r.Ours <= 0 {
			t.Errorf("%s row measured %v: %+v", k, r.Ours, r)
		}
	}
	if !strings.Contains(rows["ingest"].What, "ingest 3k chunks") && !strings.Contains(rows["ingest"].What, "ingest 4k chunks") {
		t.Errorf("ingested %q, want about 3,000 chunks", rows["ingest"].What)
	}
	if p := rows["reconcile"].Pass; p == nil || !*p {
		t.Errorf("reconcile found drift after a clean ingest: %+v", rows["reconcile"])
	}
	if !strings.Contains(rows["p50"].Note, " 0 with no evidence") {
		t.Errorf("queries drawn from the corpus came back empty: %s", rows["p50"].Note)
	}
	if rows["p99"].Ours < rows["p50"].Ours {
		t.Errorf("p99 %v below p50 %v", rows["p99"].Ours, rows["p50"].Ours)
	}
}

func TestBenchChunksFlag(t *testing.T) {
	if code, _, errOut := runCLI(t, nil, "bench", "--suite", "million", "--chunks", "-5"); code != exitConfig || !strings.Contains(errOut, "--chunks") {
		t.Fatalf("--chunks -5: exit %d, %s", code, errOut)
	}
}
