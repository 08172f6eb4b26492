package ingest

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/extract/extracttest"
)

// procStatus reads a kB field of /proc/self/status (Linux) in bytes; 0 when it cannot.
func procStatus(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			var kb int64
			fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}

// TestExtractBudgetPeakMemory is the figure for the extraction memory budget: a folder of large files
// of every format ingested all at once (as the upload queue, the watched folder and a batch can), with
// no budget, the default budget and a small one. It prints the peak Go heap above the start (sampled;
// the PDF engine's WebAssembly memory is on the Go heap), the peak reserved budget, the process's peak
// RSS (VmHWM, reset before each run) and the longest extract_wait. Opt-in, as it takes minutes:
//
//	DOCMIND_MEASURE_EXTRACT=1 go test ./shared/ingest -run TestExtractBudgetPeakMemory -v -count=1
func TestExtractBudgetPeakMemory(t *testing.T) {
	if os.Getenv("DOCMIND_MEASURE_EXTRACT") == "" {
		t.Skip("set DOCMIND_MEASURE_EXTRACT=1 to measure peak memory while ingesting large files at once")
	}
	var srcs []Source
	for i := range 2 { // two of each format, 4 MiB each
		for _, ext := range []string{".html", ".csv", ".txt", ".md", ".docx", ".xlsx", ".pptx", ".pdf"} {
			name := fmt.Sprintf("big%d%s", i, ext)
			srcs = append(srcs, Source{KBName: "kb", URI: name, Name: name, Data: extracttest.BigFile(ext, 4<<20)})
		}
	}
	lim := extract.Limits{Timeout: 10 * time.Minute}
	estimates := int64(0)
	for _, s := range srcs {
		estimates += extract.EstimateMemory(s.Name, s.Data, lim).Bytes
	}
	// the PDF engine's runtime is the process's, not a document's: started before measuring
	if _, err := extract.Extract(context.Background(), "warm.pdf", extracttest.PDF([]string{"warm up"}), lim); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files, %d MiB, estimates summing to %d MiB, GOMAXPROCS %d", len(srcs), total(srcs)>>20, estimates>>20, runtime.GOMAXPROCS(0))
	t.Logf("%-13s %-16s %14s %14s %10s %10s %16s %6s", "stage", "budget", "peak heap +MiB", "peak reserved", "RSS before", "VmHWM", "max extract_wait", "failed")
	for _, mode := range []string{"extract", "whole ingest"} {
		for _, c := range []struct {
			name   string
			budget int64
		}{{"none", 0}, {"512 MiB default", 512 << 20}, {"256 MiB", 256 << 20}} {
			t.Run(mode+" "+c.name, func(t *testing.T) {
				e := newEnv(t)
				l := lim
				var b *extract.Budget
				if c.budget > 0 {
					b = extract.NewBudget(c.budget)
					l.Budget = b
				}
				e.svc.Runner.Stages.Limits = l
				run := func() []Report { return ingestAtOnce(e, srcs) }
				if mode == "extract" {
					run = func() []Report { return extractAtOnce(e.svc.Runner.Stages, srcs) }
				}
				runtime.GC()
				debug.FreeOSMemory()
				rss := procStatus("VmRSS")
				os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // resets VmHWM to the current RSS
				var reps []Report
				var reserved int64
				peak := heapPeakWhile(func() { reps = run() }, func() {
					if b != nil {
						reserved = max(reserved, b.InUse())
					}
				})
				hwm := procStatus("VmHWM")
				failed, wait := 0, int64(0)
				for _, r := range reps {
					if r.Error != "" {
						failed++
						t.Logf("  %s: %s", r.File, r.Error)
					}
					wait = max(wait, r.StageMS["extract_wait"])
				}
				t.Logf("%-13s %-16s %14d %14d %10d %10d %13d ms %6d", mode, c.name, peak>>20, reserved>>20, rss>>20, hwm>>20, wait, failed)
				if b != nil && reserved > b.Size() {
					t.Errorf("%d bytes reserved at once, over the budget", reserved)
				}
			})
		}
	}
}

// extractAtOnce runs only the extract stage (what Ingest and IngestBatch call) of every source, each
// in its own goroutine, dropping the markdown.
func extractAtOnce(st *Stages, srcs []Source) []Report {
	reps := make([]Report, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Go(func() {
			in := ExtractIn{Doc: Doc{Tenant: tenant, KBID: "kb", DocumentID: fmt.Sprintf("doc%d", i)}, FileName: s.Name}
			ex, _, err := st.parseSource(context.Background(), in, s.Data)
			reps[i] = Report{File: s.Name, Outcome: Outcome{StageMS: map[string]int64{"extract_wait": ex.BudgetWaitMS}}}
			if err != nil {
				reps[i].Error = err.Error()
			}
		})
	}
	wg.Wait()
	return reps
}

func total(srcs []Source) (n int64) {
	for _, s := range srcs {
		n += int64(len(s.Data))
	}
	return n
}

// ingestAtOnce ingests every source in its own goroutine.
func ingestAtOnce(e *env, srcs []Source) []Report {
	reps := make([]Report, len(srcs))
	var wg sync.WaitGroup
	for i, s := range srcs {
		wg.Go(func() { reps[i], _ = e.svc.Ingest(context.Background(), tenant, s) })
	}
	wg.Wait()
	return reps
}

// heapPeakWhile returns the peak Go heap object bytes above the level before fn, sampling (and calling
// also) every 50 µs while fn runs.
func heapPeakWhile(fn func(), also func()) int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() int64 { metrics.Read(s); return int64(s[0].Value.Uint64()) }
	runtime.GC()
	base := read()
	stop, done := make(chan struct{}), make(chan int64)
	go func() {
		top := base
		for {
			select {
			case <-stop:
				done <- top
				return
			default:
			}
			top = max(top, read())
			also()
			time.Sleep(50 * time.Microsecond)
		}
	}()
	fn()
	close(stop)
	return <-done - base
}
