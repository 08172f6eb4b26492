package main

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/bench"
)

func cmdBench(e env, args []string) int {
	if len(args) > 0 && args[0] == "--measure-int8" { // the vector-int8 suite's fresh process
		return benchQuantChild(e, args[1:])
	}
	if len(args) > 0 && args[0] == "--measure-million" { // the million suite's fresh process
		return benchMillionChild(e, args[1:])
	}
	var c common
	fs := newFlags("bench", e, &c)
	suite := fs.String("suite", "all", "suites to run: all, or a comma-separated list of "+suiteNames())
	out := fs.String("out", "", "folder for results.json and results.md (default: print only)")
	quick := fs.Bool("quick", false, "small sizes (a CI smoke run of a few minutes)")
	chunks := fs.Int("chunks", 0, "the million suite's size in child chunks (default 1,000,000; 20,000 with --quick)")
	profile := fs.String("cpuprofile", "", "write the CPU profile of the million suite's measured queries to this file (and its heap profile to FILE.heap)")
	conc := fs.Int("concurrency", bench.DefaultConcurrency, "the million suite's second round of queries: how many in flight at once (the first round runs them one at a time)")
	keep := fs.String("keep", "", "leave the million suite's data folder, queries and measure.json (every latency of its measurement) in this new folder (to measure them again with --measure-million DIR/data DIR/queries.txt COUNT CONCURRENCY)")
	same := fs.Bool("same-process", false, "measure the million suite's start-up, memory and queries in this process instead of a fresh one")
	if _, err := parseInterspersed(fs, args); err != nil {
		return exitConfig
	}
	var suites []bench.Suite
	want := strings.Split(*suite, ",")
	for _, s := range bench.Suites() {
		if *suite == "all" || slices.Contains(want, s.Name) {
			suites = append(suites, s)
		}
	}
	if len(suites) == 0 || (*suite != "all" && len(suites) != len(want)) {
		fmt.Fprintf(e.stderr, "docmind: --suite %q is not one of all, %s\n", *suite, suiteNames())
		return exitConfig
	}
	if *suite != "all" && !slices.Contains(want, "roofline") {
		suites = append([]bench.Suite{bench.Suites()[0]}, suites...) // every "% of floor" needs the roofline
	}
	runtime.GOMAXPROCS(runtime.NumCPU()) // fixed for the whole run
	if *chunks < 0 {
		fmt.Fprintf(e.stderr, "docmind: --chunks must be positive, got %d\n", *chunks)
		return exitConfig
	}
	if *conc < 1 {
		fmt.Fprintf(e.stderr, "docmind: --concurrency must be at least 1, got %d\n", *conc)
		return exitConfig
	}
	if *profile != "" {
		var err error
		if *profile, err = filepath.Abs(*profile); err != nil {
			return fail(e, err)
		}
	}
	o := bench.Options{Quick: *quick, Chunks: *chunks, Concurrency: *conc, Open: benchLocal, Fresh: benchFresh, CPUProfile: *profile, Keep: *keep,
		Progress: func(s string) { fmt.Fprintln(e.stderr, s) }}
	if *same {
		o.Fresh = nil
	}
	rep := bench.Run(e.ctx, suites, o)
	if *out != "" {
		if err := rep.Write(*out); err != nil {
			return fail(e, err)
		}
	}
	if c.json {
		printJSON(e.stdout, rep)
	} else {
		fmt.Fprint(e.stdout, rep.Markdown())
	}
	if len(rep.Errors) > 0 {
		return exitFail
	}
	return exitOK
}

func suiteNames() string {
	var n []string
	for _, s := range bench.Suites() {
		n = append(n, s.Name)
	}
	return strings.Join(n, ", ")
}
