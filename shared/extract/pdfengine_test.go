package extract

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klippa-app/go-pdfium/requests"

	"github.com/docmind/docmind/shared/rag"
)

// The PDF engine starts on first use, reports its start time on that parse only, is released after
// the idle period (memory returned to the OS), and starts again for the next PDF.
func TestPDFEngineReleasedWhenIdle(t *testing.T) {
	var released atomic.Int32
	old := pdf
	pdf = &pdfEngine{release: func() { released.Add(1) }}
	t.Cleanup(func() { pdf = old })
	doc := makePDF([]string{"Engine lifetime."}, nil, false)
	l := Limits{PDFIdle: 200 * time.Millisecond}

	first, err := Extract(context.Background(), "a.pdf", doc, l)
	if err != nil {
		t.Fatal(err)
	}
	if first.EngineStartMS <= 0 {
		t.Errorf("first PDF: engine start %d ms, want > 0", first.EngineStartMS)
	}
	// A second parse inside the idle period reuses the running engine. (Under heavy load the idle
	// period may already have passed; then the engine has restarted, which the counts below show.)
	second, err := Extract(context.Background(), "b.pdf", doc, l)
	if err != nil {
		t.Fatal(err)
	}
	if starts := pdf.starts; (starts == 1) != (second.EngineStartMS == 0) {
		t.Errorf("second PDF: engine start %d ms with %d starts", second.EngineStartMS, starts)
	}
	// Not released while a parse holds an instance, however long past the idle period.
	inst, _, done, err := pdf.acquire(context.Background(), time.Millisecond, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // 50x the idle period
	if !pdf.running() {
		t.Fatal("engine released while an instance was in use")
	}
	inst.Close()
	done()
	waitReleased(t)
	if released.Load() == 0 {
		t.Error("engine released without returning memory")
	}
	startsBefore := pdf.starts
	third, err := Extract(context.Background(), "c.pdf", doc, l)
	if err != nil {
		t.Fatal(err)
	}
	if pdf.starts != startsBefore+1 || third.EngineStartMS <= 0 {
		t.Errorf("after release: %d starts (want %d), start %d ms", pdf.starts, startsBefore+1, third.EngineStartMS)
	}
	waitReleased(t)
}

// waitReleased waits for the idle release; no deadline but go test's own (the release has no upper
// bound on a loaded machine, only a lower one).
func waitReleased(t *testing.T) {
	t.Helper()
	for pdf.running() {
		time.Sleep(20 * time.Millisecond)
	}
}

// A PDF parse is bounded by its memory budget: with a budget too small for the engine, the document
// fails with a Terminal error (never retried, never a crash).
func TestPDFMemoryBudget(t *testing.T) {
	old := pdf
	pdf = &pdfEngine{}
	t.Cleanup(func() { pdf = old })
	doc := makePDF([]string{"Budget."}, nil, false)
	_, err := Extract(context.Background(), "a.pdf", doc, Limits{PDFMemory: 1 << 20, PDFIdle: time.Millisecond})
	if !rag.Is(err, rag.KindTerminal) {
		t.Fatalf("1 MiB budget: %v (kind %v), want Terminal", err, rag.KindOf(err))
	}
	if !strings.Contains(err.Error(), "limit") {
		t.Errorf("1 MiB budget: %v, want the memory limit named", err)
	}
	if pdf.running() {
		t.Error("an engine that could not start is held")
	}
}

// A release timer that fires just as a parse starts (its callback already running when acquire
// stops it) leaves the engine to that parse; once the parse is done the engine is released and the
// next parse starts a fresh runtime that works.
func TestPDFEngineReleaseRacingParse(t *testing.T) {
	var released atomic.Int32
	old := pdf
	pdf = &pdfEngine{release: func() { released.Add(1) }}
	t.Cleanup(func() { pdf = old })
	doc := makePDF([]string{"Racing the release."}, nil, false)
	hour := time.Hour // the real timers never fire here: the test fires them by hand

	if _, err := Extract(context.Background(), "a.pdf", doc, Limits{PDFIdle: hour}); err != nil {
		t.Fatal(err)
	}
	pdf.mu.Lock()
	late := pdf.timer // armed by the parse's end; "fires" below after the next acquire stopped it
	pdf.mu.Unlock()
	if late == nil {
		t.Fatal("no release armed after the parse")
	}
	inst, _, done, err := pdf.acquire(context.Background(), hour, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	pdf.expire(late) // the stale callback
	if !pdf.running() || released.Load() != 0 {
		t.Fatal("engine released by a stale timer while a parse was starting")
	}
	d, err := inst.OpenDocument(&requests.OpenDocument{File: &doc})
	if err != nil {
		t.Fatalf("instance after the stale release: %v", err)
	}
	if _, err := inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: d.Document}); err != nil {
		t.Fatal(err)
	}
	inst.Close()
	done()
	pdf.mu.Lock()
	armed := pdf.timer
	pdf.mu.Unlock()
	pdf.expire(armed) // the idle period passes
	if pdf.running() || released.Load() != 1 {
		t.Fatalf("after the idle period: running %v, %d releases, want released once", pdf.running(), released.Load())
	}
	starts := pdf.starts
	res, err := Extract(context.Background(), "b.pdf", doc, Limits{PDFIdle: hour})
	if err != nil {
		t.Fatal(err)
	}
	if pdf.starts != starts+1 || !strings.Contains(res.Markdown, "Racing the release.") {
		t.Errorf("parse after release: %d starts (want %d), markdown %q", pdf.starts, starts+1, res.Markdown)
	}
	pdf.mu.Lock()
	armed = pdf.timer
	pdf.mu.Unlock()
	armed.Stop()
	pdf.expire(armed)
	if pdf.running() {
		t.Error("engine kept after the last release")
	}
}

// The default idle period meets the footprint goal: the engine is gone well inside the 30 s after a
// batch that the goal allows, leaving time for the release itself on a loaded machine.
func TestDefaultPDFIdle(t *testing.T) {
	if got := (Limits{}).withDefaults().PDFIdle; got != DefaultPDFIdle || got > 20*time.Second {
		t.Errorf("default PDF idle %v, want DefaultPDFIdle (%v) and at most 20 s", got, DefaultPDFIdle)
	}
}
