package extract

import (
	"archive/zip"
	"bytes"
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// Budget bounds the memory that the extractions running at once in a process may need together: each
// extraction reserves its estimate (EstimateMemory) before it starts and gives it back when its parser
// has returned. The upload queue, the watched folder and IngestBatch extract concurrently; without a
// shared bound, a few large files arriving together could grow the process past what it was sized for.
//
// Waiting is first come, first served: a reservation that does not fit waits, and so does every one
// after it, even a small one that would fit; otherwise a steady stream of small files would starve a
// large one for good. (The algorithm is golang.org/x/sync/semaphore's Weighted, kept here with counters
// so the queue can be observed.)
type Budget struct {
	mu    sync.Mutex
	size  int64
	used  int64
	queue list.List // of *budgetWaiter, oldest first
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed when the reservation is granted
}

// NewBudget returns a budget of size bytes (at least 1).
func NewBudget(size int64) *Budget {
	return &Budget{size: max(size, 1)}
}

// Size is the whole budget in bytes.
func (b *Budget) Size() int64 { return b.size }

// InUse is the bytes reserved now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// Waiting is the number of reservations queued for room.
func (b *Budget) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queue.Len()
}

// reserve takes n bytes (n <= b.size), waiting in line for them. It reports whether it had to queue.
// When ctx ends first it takes nothing and returns ctx's error.
func (b *Budget) reserve(ctx context.Context, n int64) (queued bool, err error) {
	b.mu.Lock()
	if b.size-b.used >= n && b.queue.Len() == 0 {
		b.used += n
		b.mu.Unlock()
		return false, nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	elem := b.queue.PushBack(w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return true, nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready: // granted while ctx ended: give it back
			b.used -= n
			b.grant()
		default:
			front := b.queue.Front() == elem
			b.queue.Remove(elem)
			if front { // the ones behind it may fit now
				b.grant()
			}
		}
		b.mu.Unlock()
		return true, ctx.Err()
	}
}

// release gives n bytes back.
func (b *Budget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.used < 0 {
		panic("extract: budget released more than was reserved")
	}
	b.grant()
}

// grant wakes the waiters at the head of the line that now fit, in order. Caller holds b.mu.
func (b *Budget) grant() {
	for {
		front := b.queue.Front()
		if front == nil {
			return
		}
		w := front.Value.(*budgetWaiter)
		if b.size-b.used < w.n {
			return // FIFO: nobody behind it goes first
		}
		b.used += w.n
		b.queue.Remove(front)
		close(w.ready)
	}
}

// Estimate is what extracting one file is expected to need at its peak: Go heap (including the PDF
// engine's WebAssembly memory, which wazero allocates on the Go heap) above what the process held
// before.
type Estimate struct {
	Format string
	Input  int64 // bytes the format's PerByte factor applies to (see memoryInput)
	Bytes  int64 // the estimate: Base + file size x PerFileByte + Input x PerByte of the format
}

// memoryCost is one format's cost model: a fixed part, a part proportional to the file and a part
// proportional to its input (the text it parses).
type memoryCost struct {
	Base        int64
	PerFileByte int64 // PDF only: the file's copies (ours and PDFium's); its content is the input
	PerByte     int64
}

// memoryCosts were measured with TestMeasureExtractMemory (docs/bench/extract-memory.md has the
// method and the figures): the peak Go heap growth (live and not yet collected: what the process
// holds) while extracting generated files of 1, 4 and 8 MiB of each format and real files, fitted as
// Base + Input x PerByte (+ file x PerFileByte) over the highest of several runs, with 10-30%
// headroom: the same file peaks up to 1.5x higher from run to run as the collector's pace changes
// with the machine's load. The text formats decode, clean and build markdown, each a copy of the
// input; CSV and HTML build rows and a DOM; the OOXML formats build an element tree of their XML.
// PDFium copies the file into its WebAssembly memory (on the Go heap: wazero allocates it there) and
// lays out every page, about 19 MB per parse however small the file, the memory growing by doubling;
// a PDF's input is its content streams inflated, images left out (pdfContentBytes), and its file
// bytes count on their own (32 MiB of JPEG pages peaked at 204 MiB). The PDF engine's compiled
// runtime (outside the Go heap, released when idle: Limits.PDFIdle) is a cost of the process, not of
// a document, and is in no estimate.
var memoryCosts = map[string]memoryCost{
	"text":     {Base: 1 << 20, PerByte: 12},
	"markdown": {Base: 1 << 20, PerByte: 12},
	"csv":      {Base: 16 << 20, PerByte: 28},
	"html":     {Base: 16 << 20, PerByte: 44},
	"docx":     {Base: 8 << 20, PerByte: 24},
	"xlsx":     {Base: 24 << 20, PerByte: 30},
	"pptx":     {Base: 8 << 20, PerByte: 30},
	"pdf":      {Base: 40 << 20, PerFileByte: 7, PerByte: 20},
	// An image is recognised by a Tesseract process, whose memory is bounded on its own (ocr.Tesseract
	// Memory x Procs); this process holds the file and the markdown.
	"image": {Base: 4 << 20, PerByte: 3},
}

// EstimateMemory estimates what extracting data (the file named name) needs at its peak. An
// unsupported name is estimated as text (Extract refuses it before reserving anything).
func EstimateMemory(name string, data []byte, l Limits) Estimate {
	l = l.withDefaults()
	_, format := parserFor(name)
	if format == "" {
		format = "text"
	}
	c := memoryCosts[format]
	in := memoryInput(format, data, l)
	return Estimate{Format: format, Input: in, Bytes: c.Base + int64(len(data))*c.PerFileByte + in*c.PerByte}
}

// memoryInput is the size an extraction's memory grows with: the file's bytes, except for the OOXML
// formats, whose parsers inflate XML parts, so it is the declared uncompressed size of the .xml and
// .rels entries (at most MaxTotalBytes, which the parser enforces), and PDFs, whose content streams
// are inflated and laid out (pdfContentBytes, at most MaxTotalBytes). A declared zip size can be
// trusted: the archive reader refuses an entry that inflates past it. An unreadable zip is estimated
// by its file size; the parser refuses it at once.
func memoryInput(format string, data []byte, l Limits) int64 {
	switch format {
	case "docx", "xlsx", "pptx":
	case "pdf":
		return pdfContentBytes(data, l.MaxTotalBytes)
	default:
		return int64(len(data))
	}
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil || zr == nil {
		return int64(len(data))
	}
	var total uint64
	for _, f := range zr.File {
		if n := strings.ToLower(f.Name); strings.HasSuffix(n, ".xml") || strings.HasSuffix(n, ".rels") {
			total += f.UncompressedSize64
		}
	}
	return int64(min(total, uint64(l.MaxTotalBytes)))
}

// ReserveMemory reserves est's bytes of the budget for an extraction, waiting in line while others
// use it, and returns the release (to be called once the parser has returned) and how long it waited
// (0 when it did not queue; at least 1 ms when it did, so a wait is always visible). An estimate larger
// than the whole budget is Terminal: the file can never be extracted under this setting, and the
// message says what to raise. ctx ending while waiting is Unavailable, with nothing taken.
func (b *Budget) ReserveMemory(ctx context.Context, name string, size int, est Estimate) (release func(), waited time.Duration, err error) {
	if est.Bytes > b.size {
		return nil, 0, Terminal("%s is %s; extracting it (%s) needs about %s of memory, more than the extraction memory "+
			"budget of %s: raise DOCMIND_EXTRACT_MEMORY (ingest.extract_memory) to at least %d to ingest it",
			name, mib(int64(size)), est.Format, mib(est.Bytes), mib(b.size), est.Bytes)
	}
	start := time.Now()
	queued, err := b.reserve(ctx, est.Bytes)
	if err != nil {
		return nil, 0, rag.E("extract", rag.KindUnavailable, fmt.Errorf("waiting for %s of the extraction memory budget: %w", mib(est.Bytes), err))
	}
	if queued {
		waited = max(time.Since(start), time.Millisecond)
	}
	var once sync.Once
	return func() { once.Do(func() { b.release(est.Bytes) }) }, waited, nil
}

// mib formats a byte count for people: "12.5 MiB", "512 KiB".
func mib(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
