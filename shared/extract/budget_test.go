package extract

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/extract/extracttest"
	"github.com/docmind/docmind/shared/extract/ooxmltest"
	"github.com/docmind/docmind/shared/rag"
)

// until polls cond, for states another goroutine reaches (a reservation queued), which take
// microseconds; a minute without it means the state is never reached.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(200 * time.Microsecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// Many extractions at once never hold more than the budget: the parses that run together never add up
// to more than it, the others queue, and everything is given back at the end.
func TestBudgetBoundsConcurrentExtractions(t *testing.T) {
	const n = 12
	data := bytes.Repeat([]byte("refund policy text\n"), 1<<14)
	est := EstimateMemory("f.txt", data, Limits{})
	b := NewBudget(est.Bytes * 5 / 2) // room for two
	var inFlight, peak atomic.Int64
	started := make(chan struct{}, n)
	proceed := make(chan struct{})
	p := func(ctx context.Context, data []byte, l Limits) (Result, error) {
		cur := inFlight.Add(est.Bytes)
		for old := peak.Load(); cur > old && !peak.CompareAndSwap(old, cur); old = peak.Load() {
		}
		started <- struct{}{}
		<-proceed
		inFlight.Add(-est.Bytes)
		return Result{Markdown: "refunds"}, nil
	}
	type outcome struct {
		res Result
		err error
	}
	out := make(chan outcome, n)
	for range n {
		go func() {
			res, err := run(context.Background(), "f.txt", "text", p, data, Limits{Budget: b})
			out <- outcome{res, err}
		}()
	}
	<-started
	<-started
	until(t, "the other extractions to queue", func() bool { return b.Waiting() == n-2 })
	if got := inFlight.Load(); got != 2*est.Bytes {
		t.Fatalf("with two parses running: %d bytes in flight, want %d", got, 2*est.Bytes)
	}
	if got := b.InUse(); got != 2*est.Bytes {
		t.Fatalf("budget in use %d, want %d", got, 2*est.Bytes)
	}
	waited := 0
	for i := range n {
		proceed <- struct{}{}
		o := <-out
		if o.err != nil {
			t.Fatalf("extraction %d: %v", i, o.err)
		}
		if o.res.BudgetWaitMS > 0 {
			waited++
		}
		if i < n-2 {
			<-started // the next in line has started
		}
	}
	if peak.Load() > b.Size() {
		t.Errorf("peak in flight %d bytes, over the budget of %d", peak.Load(), b.Size())
	}
	if waited < n-2 {
		t.Errorf("%d extractions report a budget wait, want at least %d (those that queued)", waited, n-2)
	}
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Errorf("after all: in use %d, waiting %d, want 0 and 0", b.InUse(), b.Waiting())
	}
}

// A large reservation is not overtaken by later small ones that would fit: they wait behind it.
func TestBudgetIsFirstComeFirstServed(t *testing.T) {
	b := NewBudget(100)
	ctx := context.Background()
	if _, err := b.reserve(ctx, 60); err != nil {
		t.Fatal(err)
	}
	granted := make(chan string, 2)
	go func() {
		b.reserve(ctx, 80)
		granted <- "big"
	}()
	until(t, "the big reservation to queue", func() bool { return b.Waiting() == 1 })
	go func() {
		b.reserve(ctx, 30) // 40 bytes are free, but the big one came first
		granted <- "small"
	}()
	until(t, "the small reservation to queue", func() bool { return b.Waiting() == 2 })
	if b.InUse() != 60 {
		t.Fatalf("in use %d while both wait, want 60 (the small one must not go first)", b.InUse())
	}
	b.release(60)
	if got := <-granted; got != "big" {
		t.Fatalf("first granted %q, want big", got)
	}
	if b.InUse() != 80 || b.Waiting() != 1 {
		t.Fatalf("after the big one: in use %d, waiting %d, want 80 and 1", b.InUse(), b.Waiting())
	}
	b.release(80)
	if got := <-granted; got != "small" {
		t.Fatalf("then granted %q, want small", got)
	}
	b.release(30)
	if b.InUse() != 0 {
		t.Fatalf("in use %d at the end", b.InUse())
	}
}

// A file whose estimate exceeds the whole budget fails at once, Terminal, saying how big it is, what
// it would need and which setting to raise; it takes nothing.
func TestBudgetRefusesAFileLargerThanTheBudget(t *testing.T) {
	data := bytes.Repeat([]byte("a line of the handbook\n"), 1<<16) // 1.4 MiB
	b := NewBudget(8 << 20)
	est := EstimateMemory("handbook.txt", data, Limits{})
	_, err := Extract(context.Background(), "handbook.txt", data, Limits{Budget: b})
	if !rag.Is(err, rag.KindTerminal) {
		t.Fatalf("got %v, want a Terminal error", err)
	}
	for _, want := range []string{"handbook.txt is 1.4 MiB", mib(est.Bytes), "8.0 MiB", "DOCMIND_EXTRACT_MEMORY", "ingest.extract_memory"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not contain %q", err, want)
		}
	}
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Errorf("in use %d, waiting %d after a refusal", b.InUse(), b.Waiting())
	}
	// the same file fits a budget of its estimate
	if _, err := Extract(context.Background(), "handbook.txt", data, Limits{Budget: NewBudget(est.Bytes)}); err != nil {
		t.Errorf("with a budget of exactly the estimate: %v", err)
	}
}

// Cancelled while waiting: the extraction returns Unavailable (retryable, the file is fine) without
// taking anything, and the reservations queued behind it move up.
func TestBudgetCancelWhileWaiting(t *testing.T) {
	data := []byte("short text")
	est := EstimateMemory("a.txt", data, Limits{})
	b := NewBudget(2 * est.Bytes)
	hold, err := b.reserve(context.Background(), est.Bytes+1) // leaves less than one estimate free
	if err != nil || hold {
		t.Fatal(err, hold)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := Extract(ctx, "a.txt", data, Limits{Budget: b})
		errc <- err
	}()
	until(t, "the extraction to queue", func() bool { return b.Waiting() == 1 })
	// one behind it, smaller, that fits once the first leaves the line
	behind := make(chan error, 1)
	go func() {
		_, err := b.reserve(context.Background(), est.Bytes-1)
		behind <- err
	}()
	until(t, "the second reservation to queue", func() bool { return b.Waiting() == 2 })
	cancel()
	err = <-errc
	if !rag.Is(err, rag.KindUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting: %v, want Unavailable wrapping context.Canceled", err)
	}
	if err := <-behind; err != nil {
		t.Fatalf("the reservation behind: %v", err)
	}
	if got, want := b.InUse(), 2*est.Bytes; got != want {
		t.Fatalf("in use %d, want %d (the hold and the one behind; nothing of the cancelled one)", got, want)
	}
	b.release(est.Bytes + 1)
	b.release(est.Bytes - 1)
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Fatalf("in use %d, waiting %d at the end", b.InUse(), b.Waiting())
	}
}

// A parser that overruns its deadline keeps its reservation until it actually returns: the memory is
// still in use although the caller was told the parse failed.
func TestBudgetHeldUntilAnOverrunningParserReturns(t *testing.T) {
	b := NewBudget(64 << 20)
	unblock := make(chan struct{})
	returned := make(chan struct{})
	stuck := func(ctx context.Context, data []byte, l Limits) (Result, error) {
		defer close(returned)
		<-unblock // ignores ctx, as a parser must not
		return Result{Markdown: "late"}, nil
	}
	_, err := run(context.Background(), "slow.txt", "text", stuck, []byte("x"), Limits{Budget: b, Timeout: 20 * time.Millisecond})
	if !rag.Is(err, rag.KindTerminal) || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("got %v, want the deadline's Terminal error", err)
	}
	if b.InUse() == 0 {
		t.Fatal("reservation given back while the parser still runs")
	}
	close(unblock)
	<-returned
	until(t, "the reservation to be given back", func() bool { return b.InUse() == 0 })
}

// OOXML files are estimated by their declared uncompressed XML, not their (compressed) file size.
func TestEstimateUsesInflatedXMLForOfficeFiles(t *testing.T) {
	var body strings.Builder
	for range 5000 {
		body.WriteString(ooxmltest.P("", ooxmltest.R("the same sentence again and again")))
	}
	docx := ooxmltest.DOCX(body.String())
	est := EstimateMemory("big.docx", docx, Limits{})
	if est.Format != "docx" || est.Input < int64(body.Len()) || est.Input < 10*int64(len(docx)) {
		t.Fatalf("estimate %+v for a %d-byte docx of %d bytes of body XML", est, len(docx), body.Len())
	}
	if want := memoryCosts["docx"].Base + est.Input*memoryCosts["docx"].PerByte; est.Bytes != want {
		t.Errorf("estimate %d, want %d", est.Bytes, want)
	}
	if got := EstimateMemory("broken.docx", []byte("not a zip"), Limits{}); got.Input != 9 {
		t.Errorf("unreadable zip: input %d, want its file size 9", got.Input)
	}
	pdf := extracttest.PDF([]string{"one page of text"})
	c := memoryCosts["pdf"]
	if got := EstimateMemory("x.pdf", pdf, Limits{}); got.Input != pdfContentBytes(pdf, 1<<30) || got.Input == 0 ||
		got.Bytes != c.Base+int64(len(pdf))*c.PerFileByte+got.Input*c.PerByte {
		t.Errorf("pdf estimate %+v for %d bytes", got, len(pdf))
	}
}

// A PDF's content is its non-image streams, inflated when compressed: a compressed PDF counts the text
// PDFium will lay out, a photo-heavy one little beyond its file.
func TestPDFContentBytes(t *testing.T) {
	pages := []string{strings.Repeat("Refunds within thirty days. ", 200), strings.Repeat("Shipping is free. ", 300)}
	plain := pdfContentBytes(extracttest.PDF(pages), 1<<30)
	flate := extracttest.FlatePDF(pages)
	// the uncompressed streams end with the line break before "endstream": a byte a page
	if got := pdfContentBytes(flate, 1<<30); got < plain-int64(len(pages)) || got > plain || int64(len(flate)) >= plain {
		t.Errorf("compressed PDF of %d bytes: content %d, want the uncompressed one's %d", len(flate), got, plain)
	}
	if want := int64(len(pages[0]) + len(pages[1])); plain < want {
		t.Errorf("content %d bytes, less than the pages' text (%d)", plain, want)
	}
	photos := extracttest.ImagePDF(3, 100_000)
	if got := pdfContentBytes(photos, 1<<30); got > 1000 {
		t.Errorf("3 pages of 100 kB images: content %d bytes, want only the pages' text streams", got)
	}
	if got := pdfContentBytes(flate, 100); got != 100 {
		t.Errorf("limit 100: %d", got)
	}
	if got := pdfContentBytes([]byte("%PDF-1.4 garbage stream\nno end"), 1<<30); got != int64(len("no end")) {
		t.Errorf("unterminated stream: %d", got)
	}
}
