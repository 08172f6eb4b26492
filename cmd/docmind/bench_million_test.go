package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
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
	kept := filepath.Join(t.TempDir(), "kept")
	code, out, errOut := runCLI(t, nil, "bench", "--suite", "million", "--chunks", "3000", "--concurrency", "3", "--same-process", "--json", "--keep", kept)
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	// --keep leaves the knowledge base for another binary to measure again
	code, again, errOut := runCLI(t, nil, "bench", "--measure-million", filepath.Join(kept, "data"), filepath.Join(kept, "queries.txt"), "40", "2")
	var res bench.MillionResult
	if code != exitOK || json.Unmarshal([]byte(again), &res) != nil || len(res.LatencyMS) != 40 || len(res.ColdMS) != 40 || res.Empty != 0 {
		t.Fatalf("measuring the kept folder again: exit %d, %d latencies, %d cold ones, %d empty: %s", code, len(res.LatencyMS), len(res.ColdMS), res.Empty, errOut)
	}
	if res.QueryAllocKB <= 0 {
		t.Errorf("measuring again reported %v KB allocated a query", res.QueryAllocKB)
	}
	// and the suite's own measurement is kept beside the data, every latency in it
	var first bench.MillionResult
	if b, err := os.ReadFile(filepath.Join(kept, "measure.json")); err != nil || json.Unmarshal(b, &first) != nil || len(first.LatencyMS) != 1000 {
		t.Errorf("kept measure.json: %v, %d latencies", err, len(first.LatencyMS))
	}
	if code, out, errOut := runCLI(t, nil, "bench", "--suite", "million", "--chunks", "3000", "--same-process", "--keep", kept); code == exitOK || !strings.Contains(out+errOut, "--keep: mkdir") {
		t.Errorf("--keep over an existing folder: exit %d, %s", code, errOut)
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
		case strings.HasSuffix(r.What, "the first queries after start-up, one at a time: p50"):
			rows["cold p50"] = r
		case strings.HasSuffix(r.What, "the first queries after start-up, one at a time: p99"):
			rows["cold p99"] = r
		case strings.HasSuffix(r.What, "one query at a time: p50"):
			rows["p50"] = r
		case strings.HasSuffix(r.What, "one query at a time: p99"):
			rows["p99"] = r
		case strings.HasSuffix(r.What, "3 queries in flight: p50"):
			rows["p50 at 3"] = r
		case strings.HasSuffix(r.What, "3 queries in flight: p99"):
			rows["p99 at 3"] = r
		case strings.HasPrefix(r.What, "reconcile"):
			rows["reconcile"] = r
		case strings.Contains(r.What, "resident memory"):
			rows["memory"] = r
		}
	}
	for _, k := range []string{"ingest", "start-up", "cold p50", "cold p99", "p50", "p99", "p50 at 3", "p99 at 3", "reconcile", "memory"} {
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
	if !regexp.MustCompile(`\d+ KB allocated a query, \d+ collections`).MatchString(rows["p50"].Note) {
		t.Errorf("p50 note %q does not say what the queries allocated", rows["p50"].Note)
	}
	if !strings.Contains(rows["p50"].Note, " 0 with no evidence") {
		t.Errorf("queries drawn from the corpus came back empty: %s", rows["p50"].Note)
	}
	for _, c := range []string{"", " at 3"} {
		if rows["p99"+c].Ours < rows["p50"+c].Ours {
			t.Errorf("p99%s %v below p50%s %v", c, rows["p99"+c].Ours, c, rows["p50"+c].Ours)
		}
		// each round says the load average at its start and at its end (on Linux, where there is one)
		if note := rows["p99"+c].Note; runtime.GOOS == "linux" && !regexp.MustCompile(`load average \d+\.\d+ .+ at the start, \d+\.\d+ .+ at the end`).MatchString(note) {
			t.Errorf("p99%s note %q has no load averages", c, note)
		}
	}
	if !strings.Contains(rows["p50"].Note, "after 3000 others") || !strings.Contains(rows["cold p50"].Note, "1000 queries") {
		t.Errorf("steady round %q, cold round %q: want 1000 cold queries and 2000 of warm-up before the steady round", rows["p50"].Note, rows["cold p50"].Note)
	}
	if !strings.Contains(rows["p50 at 3"].Note, "1000 queries") || !strings.Contains(rows["p50"].Note, "1000 queries") {
		t.Errorf("rounds of %q and %q, want 1000 queries each", rows["p50"].Note, rows["p50 at 3"].Note)
	}
}

func TestBenchConcurrencyFlag(t *testing.T) {
	if code, _, errOut := runCLI(t, nil, "bench", "--suite", "million", "--concurrency", "0"); code != exitConfig || !strings.Contains(errOut, "--concurrency") {
		t.Fatalf("--concurrency 0: exit %d, %s", code, errOut)
	}
}

func TestBenchChunksFlag(t *testing.T) {
	if code, _, errOut := runCLI(t, nil, "bench", "--suite", "million", "--chunks", "-5"); code != exitConfig || !strings.Contains(errOut, "--chunks") {
		t.Fatalf("--chunks -5: exit %d, %s", code, errOut)
	}
}
