// Package bench measures docmind's speed side by side with references run in the same process, as
// ratios: these machines are shared and noisy (absolute figures drift by about 25% between runs), so
// every comparison is interleaved A/B/A/B after a warm-up, repeated, and reported as medians and tail
// percentiles. Suites return rows; docmind bench writes them as results.json and results.md.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// Row is one measured comparison.
type Row struct {
	Suite     string  `json:"suite"`
	What      string  `json:"what"`
	Ours      float64 `json:"ours"`
	Reference float64 `json:"reference,omitempty"`
	RefName   string  `json:"reference_name,omitempty"`
	Unit      string  `json:"unit"`
	Ratio     float64 `json:"ratio,omitempty"` // ours relative to the reference, oriented so that > 1 is better for us
	Target    string  `json:"target,omitempty"`
	Pass      *bool   `json:"pass,omitempty"`
	Note      string  `json:"note,omitempty"`
}

// Options tune a run.
type Options struct {
	Quick bool // small sizes, for a CI smoke run
	Reps  int  // repetitions per comparison (default 5, at least 5)
	// Chunks is the million suite's size in child chunks (0: 1,000,000, or 20,000 with Quick).
	Chunks int
	// Open opens the one-machine stack the million suite ingests into and queries (docmind bench wires
	// the stores and chain of `docmind serve`); nil skips that suite with an error.
	Open OpenLocal
	// Fresh starts this program measuring the million suite's stack in a fresh process, so its resident
	// memory is a server's; nil measures in this process.
	Fresh func(args ...string) *exec.Cmd
	// Concurrency is the million suite's second round of queries: how many in flight at once (0:
	// DefaultConcurrency). The first round runs them one at a time.
	Concurrency int
	// CPUProfile names a file for the CPU profile of the million suite's measured queries.
	CPUProfile string
	// Keep names a folder (created; it must not exist) where the million suite leaves its data folder
	// and queries, so another binary can measure the same knowledge base (`docmind bench
	// --measure-million KEEP/data KEEP/queries.txt N C`); "" removes them.
	Keep string
	// Progress receives a line now and then during long builds; nil discards.
	Progress func(string)
}

// Suite is one named group of measurements.
type Suite struct {
	Name string
	Run  func(ctx context.Context, o Options) ([]Row, error)
}

// Report is a run's result.
type Report struct {
	Date       string   `json:"date"`
	CPU        string   `json:"cpu"`
	Cores      int      `json:"cores"`
	GOMAXPROCS int      `json:"gomaxprocs"`
	Go         string   `json:"go"`
	Quick      bool     `json:"quick"`
	Suites     []string `json:"suites,omitempty"` // the suites this run ran
	Rows       []Row    `json:"rows"`
	Errors     []string `json:"errors,omitempty"`
	// Earlier holds the rows of suites this run did not run, carried over from the results it
	// replaced (each with the date of its run), so a run of one suite keeps the others' figures.
	Earlier []EarlierRow `json:"earlier,omitempty"`
}

// EarlierRow is a row carried over from an earlier run.
type EarlierRow struct {
	Row
	Date  string `json:"date"`
	Quick bool   `json:"quick,omitempty"`
}

// Interleave runs each fn once per round, in order, for warmup + reps rounds, and returns every fn's
// timings of the measured rounds: A/B/A/B, so a noisy neighbour slows both sides alike.
func Interleave(warmup, reps int, fns ...func()) [][]time.Duration {
	out := make([][]time.Duration, len(fns))
	for round := 0; round < warmup+reps; round++ {
		for i, fn := range fns {
			start := time.Now()
			fn()
			if d := time.Since(start); round >= warmup {
				out[i] = append(out[i], d)
			}
		}
	}
	return out
}

// Percentile of durations (p in [0,1]).
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(p*float64(len(s)-1)+0.5)]
}

// PairedSpeedup is the median over rounds of ref[i]/ours[i]: how many times faster ours was than the
// reference in the same round. Each pair ran back to back, so load that changes between rounds (these
// machines are shared) cancels out, which a ratio of the two separate medians does not.
func PairedSpeedup(ours, ref []time.Duration) float64 {
	n := min(len(ours), len(ref))
	if n == 0 {
		return 0
	}
	r := make([]float64, n)
	for i := range n {
		r[i] = float64(ref[i]) / float64(max(ours[i], 1))
	}
	slices.Sort(r)
	return r[n/2]
}

// Median of durations.
func Median(ds []time.Duration) time.Duration { return Percentile(ds, 0.5) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pass(ok bool) *bool { return &ok }

// Run executes suites, collecting rows and per-suite errors (one failing suite does not stop the others).
func Run(ctx context.Context, suites []Suite, o Options) Report {
	if o.Reps < 5 {
		o.Reps = 5
	}
	r := Report{Date: time.Now().UTC().Format("2006-01-02"), CPU: cpuModel(), Cores: runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version(), Quick: o.Quick}
	for _, s := range suites {
		if ctx.Err() != nil {
			break
		}
		r.Suites = append(r.Suites, s.Name)
		rows, err := s.Run(ctx, o)
		if err != nil {
			r.Errors = append(r.Errors, fmt.Sprintf("%s: %v", s.Name, err))
		}
		r.Rows = append(r.Rows, rows...)
		settle(s.Name, o.Progress)
	}
	return r
}

// settle runs after each suite, so that the next one measures itself rather than what this one left:
// the collector frees the suite's garbage and the heap goes back to the system (a suite holding
// gigabytes would otherwise leave a heap goal and a page-cache pressure behind it), and the file
// system writes back what the suite wrote (its snapshots), instead of doing it during the next suite's
// timed loop. It says what stayed live and how long it took.
func settle(suite string, progress func(string)) {
	start := time.Now()
	runtime.GC()
	debug.FreeOSMemory()
	syncFS()
	if progress != nil {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		progress(fmt.Sprintf("after %s: %.0f MB of heap live, %.0f MB held from the system; settled in %.1f s", suite,
			float64(m.HeapAlloc)/1e6, float64(m.HeapSys-m.HeapReleased)/1e6, time.Since(start).Seconds()))
	}
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			if _, v, ok := strings.Cut(l, ":"); ok {
				return strings.TrimSpace(v)
			}
		}
	}
	return runtime.GOARCH
}

// Write stores results.json and results.md in dir. Rows of suites this run did not run are carried
// over from the results.json it replaces (see Report.Earlier).
func (r Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if old, err := os.ReadFile(filepath.Join(dir, "results.json")); err == nil {
		var prev Report
		if json.Unmarshal(old, &prev) == nil {
			r.Earlier = r.carry(prev)
		}
	}
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "results.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.md"), []byte(r.Markdown()), 0o644)
}

// carry returns prev's rows (and rows prev itself carried) of the suites r did not run.
func (r Report) carry(prev Report) []EarlierRow {
	ran := map[string]bool{}
	for _, s := range r.Suites {
		ran[s] = true
	}
	for _, row := range r.Rows {
		ran[row.Suite] = true
	}
	var out []EarlierRow
	for _, row := range prev.Rows {
		if !ran[row.Suite] {
			out = append(out, EarlierRow{Row: row, Date: prev.Date, Quick: prev.Quick})
		}
	}
	for _, e := range prev.Earlier {
		if !ran[e.Suite] {
			out = append(out, e)
		}
	}
	return out
}

// Markdown renders the report.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# docmind bench\n\nRun %s on %s (%d cores, GOMAXPROCS %d), %s%s. Every comparison ran interleaved in one process after a warm-up; figures are medians unless the row says otherwise.\n\n",
		r.Date, r.CPU, r.Cores, r.GOMAXPROCS, r.Go, map[bool]string{true: ", quick sizes", false: ""}[r.Quick])
	b.WriteString("| suite | what | ours | reference | ratio | target | pass |\n|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		writeRow(&b, row, "")
	}
	if len(r.Earlier) > 0 {
		b.WriteString("\nFrom earlier runs (suites this run did not run), each with its run's date:\n\n")
		b.WriteString("| suite | what | ours | reference | ratio | target | pass |\n|---|---|---|---|---|---|---|\n")
		for _, e := range r.Earlier {
			writeRow(&b, e.Row, e.Date+map[bool]string{true: ", quick sizes", false: ""}[e.Quick])
		}
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "\nerror: %s\n", e)
	}
	return b.String()
}

// writeRow renders one table row; from, when set, names the earlier run it comes from.
func writeRow(b *strings.Builder, row Row, from string) {
	{
		ref, ratio, p := "", "", ""
		if row.RefName != "" {
			ref = fmt.Sprintf("%.4g %s (%s)", row.Reference, row.Unit, row.RefName)
		}
		if row.Ratio != 0 {
			ratio = fmt.Sprintf("%.2fx", row.Ratio)
		}
		if row.Pass != nil {
			p = map[bool]string{true: "pass", false: "**fail**"}[*row.Pass]
		}
		what := row.What
		if row.Note != "" {
			what += " (" + row.Note + ")"
		}
		if from != "" {
			what += " [run of " + from + "]"
		}
		fmt.Fprintf(b, "| %s | %s | %.4g %s | %s | %s | %s | %s |\n", row.Suite, what, row.Ours, row.Unit, ref, ratio, row.Target, p)
	}
}
