// Package extract turns source files into markdown: headings, tables (as markdown tables), code fences
// and lists survive, so the chunker can split by structure. Every parser runs under recover, a deadline
// and size limits; a file that cannot be parsed is a Terminal error with a message a person can act on,
// never a crash and never a silently empty document. Hidden text (zero-width characters, hidden runs,
// hidden HTML elements, hidden sheets) is stripped and counted.
package extract

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

// DefaultPDFIdle is how long the PDF engine is kept after the last PDF when Limits.PDFIdle is unset.
// A restart costs about 2.5 s, so a PDF more than 15 s after the previous one pays that; in exchange
// the engine's few hundred MB leave an idle process 15 s after its last PDF, which leaves half the
// footprint goal's 30 s (<= 150 MB 30 s after a batch) as margin on a loaded machine.
const DefaultPDFIdle = 15 * time.Second

// Limits bound what one document may cost. The zero value means the defaults.
type Limits struct {
	MaxFileBytes   int64         // the source file (default 64 MiB)
	MaxEntries     int           // zip entries in an OOXML file (default 2,000)
	MaxEntryBytes  int64         // decompressed bytes of one zip entry (default 64 MiB)
	MaxTotalBytes  int64         // decompressed bytes of all entries read (default 256 MiB)
	MaxRatio       int64         // decompressed/compressed ratio of an entry (default 100)
	MaxPages       int           // PDF pages (default 2,000)
	MaxXMLDepth    int           // element nesting (default 256)
	MaxOutputBytes int           // markdown produced (default 32 MiB)
	Timeout        time.Duration // per document (default 60 s)
	// PDFIdle is how long the PDF engine's runtime (a few hundred MB) is kept after the last PDF before
	// it is released (default 15 s: an idle server drops to its small footprint within half a minute of
	// its last batch); the next PDF starts it again, which takes about 2.5 s.
	PDFIdle time.Duration
	// PDFMemory caps the WebAssembly memory of one PDF parse (default 1 GiB): past it the parse fails
	// (Terminal) instead of growing the process. It takes effect when the engine starts.
	PDFMemory int64
	// Budget, shared by the extractions of a process, bounds the memory they need together: each
	// reserves its estimate before parsing and waits in line while others use it (nil: no bound).
	Budget *Budget
	// OCR recognises images and PDF pages without a usable text layer (nil: such files are refused
	// with a message saying how to turn OCR on).
	OCR OCR
}

func (l Limits) withDefaults() Limits {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxFileBytes, 64<<20)
	def(&l.MaxEntryBytes, 64<<20)
	def(&l.MaxTotalBytes, 256<<20)
	def(&l.MaxRatio, 100)
	if l.MaxEntries <= 0 {
		l.MaxEntries = 2000
	}
	if l.MaxPages <= 0 {
		l.MaxPages = 2000
	}
	if l.MaxXMLDepth <= 0 {
		l.MaxXMLDepth = 256
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = 32 << 20
	}
	if l.Timeout <= 0 {
		l.Timeout = 60 * time.Second
	}
	if l.PDFIdle <= 0 {
		l.PDFIdle = DefaultPDFIdle
	}
	if l.PDFMemory <= 0 {
		l.PDFMemory = 1 << 30
	}
	return l
}

// Result is an extracted document.
type Result struct {
	Markdown string `json:"markdown"`
	Title    string `json:"title,omitempty"`
	Pages    int    `json:"pages,omitempty"` // PDFs: page count; pages are marked with PageMarker lines
	Hidden   int    `json:"hidden"`          // hidden characters or runs stripped
	Format   string `json:"format"`
	// Encoding is the character encoding a text-based source (text, markdown, CSV, HTML) was read
	// from ("utf-8", "gb18030", "utf-16le", ...; see the Enc constants); empty for binary formats.
	Encoding string `json:"encoding,omitempty"`
	// EngineStartMS is how long this parse waited for the PDF engine to start (0 when it was running).
	EngineStartMS int64 `json:"engine_start_ms,omitempty"`
	// BudgetWaitMS is how long this parse waited for room in the memory budget (0: it did not wait).
	BudgetWaitMS int64 `json:"budget_wait_ms,omitempty"`
	// OCR reports the pages recognised by OCR and their confidence (nil: no page was).
	OCR *OCRReport `json:"ocr,omitempty"`
	// Properties are the file's own document properties (DOCX core properties, the PDF Info
	// dictionary): title, author, created, modified, keywords; nil when it has none (properties.go).
	Properties map[string]string `json:"properties,omitempty"`
}

// PageMarker is the line a page-aware extractor puts before each page's text; the chunker reads it to
// give chunks their page number and drops it from the text.
func PageMarker(n int) string { return fmt.Sprintf("<!-- page %d -->", n) }

// Formats lists the file extensions Extract understands.
var Formats = append([]string{".md", ".markdown", ".txt", ".html", ".htm", ".csv", ".docx", ".xlsx", ".pptx", ".pdf"}, imageFormats...)

// Supported reports whether a file name has an extension Extract understands.
func Supported(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	for _, f := range Formats {
		if f == ext {
			return true
		}
	}
	return false
}

// parser is one format's extractor; it may panic on hostile input (Extract recovers).
type parser func(ctx context.Context, data []byte, l Limits) (Result, error)

func parserFor(name string) (parser, string) {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".md", ".markdown":
		return parseMarkdown, "markdown"
	case ".txt":
		return parseText, "text"
	case ".html", ".htm":
		return parseHTML, "html"
	case ".csv":
		return parseCSV, "csv"
	case ".docx":
		return parseDOCX, "docx"
	case ".xlsx":
		return parseXLSX, "xlsx"
	case ".pptx":
		return parsePPTX, "pptx"
	case ".pdf":
		return parsePDF, "pdf"
	case ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp":
		return parseImage, "image"
	}
	return nil, ""
}

// Terminal builds the error of a file that can never be parsed: the document is marked failed with msg
// and never retried.
func Terminal(format string, args ...any) error {
	return rag.Errorf("extract", rag.KindTerminal, format, args...)
}

// Guard runs one parse under recover and the per-document deadline. A panic, a deadline or an
// unclassified parser error becomes Terminal (the file is bad: never retried); the caller's own ctx
// ending is Unavailable. Parsers must check ctx in their loops: a parse that ignores it keeps running
// in the background after Guard has given up.
func Guard(ctx context.Context, format string, l Limits, parse func(ctx context.Context) (Result, error)) (Result, error) {
	return guard(ctx, format, l, parse, func() {})
}

// guard is Guard calling finished once the parse has returned (or at once when it never starts):
// what the parse holds is held until then, even after guard has given up waiting for it.
func guard(ctx context.Context, format string, l Limits, parse func(ctx context.Context) (Result, error), finished func()) (Result, error) {
	l = l.withDefaults()
	if err := ctx.Err(); err != nil {
		finished()
		return Result{}, rag.E("extract", rag.KindUnavailable, err)
	}
	dctx, cancel := context.WithTimeout(ctx, l.Timeout)
	defer cancel()
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer finished()
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{err: Terminal("the %s parser crashed on this file (%v); the file is probably damaged", format, r)}
			}
		}()
		r, err := parse(dctx)
		done <- outcome{r, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-dctx.Done():
		if ctx.Err() != nil {
			return Result{}, rag.E("extract", rag.KindUnavailable, ctx.Err())
		}
		return Result{}, Terminal("parsing took longer than %s", l.Timeout)
	}
	if o.err != nil {
		if ctx.Err() != nil {
			return Result{}, rag.E("extract", rag.KindUnavailable, ctx.Err())
		}
		if rag.KindOf(o.err) == rag.KindUnknown || rag.KindOf(o.err) == rag.KindUnavailable {
			o.err = Terminal("%s: %v", format, o.err)
		}
		return Result{}, o.err
	}
	return o.res, nil
}

// Extract converts data (the file named name) to markdown within the limits, first reserving its
// memory estimate in l.Budget when there is one (waiting in line for it). Errors are Terminal for a bad
// or unsupported file (including a parser panic, a size limit, the deadline, or an estimate larger than
// the whole budget) and Unavailable only when ctx itself ended.
func Extract(ctx context.Context, name string, data []byte, l Limits) (res Result, err error) {
	p, format := parserFor(name)
	if p == nil {
		return Result{}, Terminal("unsupported file type %q (supported: %s)", filepath.Ext(name), strings.Join(Formats, " "))
	}
	return run(ctx, name, format, p, data, l)
}

// run is Extract with the parser chosen (tests pass their own).
func run(ctx context.Context, name, format string, p parser, data []byte, l Limits) (res Result, err error) {
	l = l.withDefaults()
	if int64(len(data)) > l.MaxFileBytes {
		return Result{}, Terminal("file is %d bytes, the limit is %d", len(data), l.MaxFileBytes)
	}
	release, waited := func() {}, time.Duration(0)
	if l.Budget != nil {
		if release, waited, err = l.Budget.ReserveMemory(ctx, name, len(data), EstimateMemory(name, data, l)); err != nil {
			return Result{}, err
		}
	}
	// The reservation is held by the parse and by this function (cleaning copies the markdown) and
	// given back when both are done: a parser past its deadline still holds its memory until it notices.
	var holders atomic.Int32
	holders.Store(2)
	done := func() {
		if holders.Add(-1) == 0 {
			release()
		}
	}
	defer done()
	res, err = guard(ctx, format, l, func(ctx context.Context) (Result, error) { return p(ctx, data, l) }, done)
	if err != nil {
		return Result{}, err
	}
	res.BudgetWaitMS = waited.Milliseconds()
	res.Format = format
	md, hidden := Clean(res.Markdown)
	res.Markdown, res.Hidden = md, res.Hidden+hidden
	if len(res.Markdown) > l.MaxOutputBytes {
		return Result{}, Terminal("the document produced more than %d bytes of text", l.MaxOutputBytes)
	}
	if strings.TrimSpace(stripMarkers(res.Markdown)) == "" {
		if l.OCR == nil && format == "pdf" {
			return Result{}, noOCR("this PDF has no text layer: a scanned document")
		}
		return Result{}, Terminal("no text found in this %s file", format)
	}
	return res, nil
}

func stripMarkers(md string) string {
	var b strings.Builder
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "<!-- page ") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Clean normalises extracted text: valid UTF-8, \n line ends, no BOM, no zero-width or bidi control
// characters (a classic carrier of hidden instructions), no other control characters but tab and
// newline, no trailing spaces, at most two consecutive blank lines. It returns the number of hidden
// characters removed.
func Clean(s string) (string, int) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	hidden := 0
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case isHiddenRune(r):
			hidden++
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			// other control characters carry nothing readable
		case r == 0xa0: // no-break space
			b.WriteRune(' ')
		default:
			b.WriteRune(r)
		}
	}
	lines := strings.Split(b.String(), "\n")
	out := lines[:0]
	blank := 0
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			blank++
			if blank > 2 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n")) + "\n", hidden
}

// isHiddenRune reports zero-width, invisible and bidirectional control characters.
func isHiddenRune(r rune) bool {
	switch r {
	case 0x200B, 0x200C, 0x200D, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF, 0x00AD, 0x180E, 0x034F,
		0x200E, 0x200F, 0x061C, 0x115F, 0x1160, 0x3164, 0xFFA0:
		return true
	}
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) || (r >= 0xE0000 && r <= 0xE007F) || (r >= 0xFE00 && r <= 0xFE0F)
}
