package extract

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/docmind/docmind/shared/rag"
)

// pdfEngine owns the PDFium WebAssembly runtime (pure Go, no cgo). Starting it costs seconds and its
// runtime holds a few hundred MB, so it is started on first use and released once no PDF has been
// parsed for its idle period (Limits.PDFIdle): a server that parsed the demo's one PDF otherwise kept
// about 359 MB resident for good. Keep PDF parsing out of latency-sensitive paths.
type pdfEngine struct {
	mu      sync.Mutex
	pool    pdfium.Pool
	users   int           // instances checked out
	idle    time.Duration // release after this long without users
	timer   *time.Timer   // pending release, nil when none
	starts  int           // times the runtime was started (tests)
	release func()        // returns memory to the OS after a release (debug.FreeOSMemory; tests may count)
}

// pdf is the process's engine: the runtime is one per process whatever the callers.
var pdf = &pdfEngine{release: debug.FreeOSMemory}

// acquire returns an instance and how long starting the runtime took (0 when it was running). done
// must be called when the instance is no longer used.
// memLimit is the WebAssembly memory of one instance, in bytes; it takes effect when the runtime
// starts (a running engine keeps the limit it started with).
func (e *pdfEngine) acquire(ctx context.Context, idle time.Duration, memLimit int64) (inst pdfium.Pdfium, start time.Duration, done func(), err error) {
	pages := uint32(min(max(memLimit>>16, 1), 1<<16)) // 64 KiB pages, at most the 4 GiB WebAssembly allows
	e.mu.Lock()
	e.idle = idle
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	if e.pool == nil {
		t0 := time.Now()
		pool, err := webassembly.Init(webassembly.Config{MinIdle: 0, MaxIdle: 1, MaxTotal: 2,
			// Each instance's WebAssembly memory is capped: a hostile or huge PDF fails with an error
			// instead of growing the process. PDFium reads the bytes it is given and needs no files, so
			// no directory is mounted (the library's default mounts "/").
			FSConfig: wazero.NewFSConfig(),
			RuntimeConfig: wazero.NewRuntimeConfig().
				WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
				WithMemoryLimitPages(pages),
		})
		if err != nil {
			e.scheduleRelease()
			e.mu.Unlock()
			return nil, 0, nil, err
		}
		e.pool, e.starts, start = pool, e.starts+1, time.Since(t0)
	}
	e.users++
	pool := e.pool
	e.mu.Unlock()
	done = func() {
		e.mu.Lock()
		e.users--
		e.scheduleRelease()
		e.mu.Unlock()
	}
	inst, err = pool.GetInstanceWithContext(ctx)
	if err != nil {
		done()
		return nil, start, nil, err
	}
	return inst, start, done, nil
}

// scheduleRelease arms the idle timer when nobody uses the runtime. Caller holds e.mu.
func (e *pdfEngine) scheduleRelease() {
	if e.users > 0 || e.pool == nil || e.timer != nil {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(e.idle, func() { e.expire(t) })
	e.timer = t
}

// expire is timer t's release. A timer that fires while a parse is starting may run after acquire
// has stopped it (Stop cannot recall a callback already started): it then finds another timer (or
// none) armed, or a user, and leaves the engine alone. A parse that starts after the release starts
// a new runtime; the old one is closed outside the lock, so that start does not wait for it.
func (e *pdfEngine) expire(t *time.Timer) {
	e.mu.Lock()
	if e.timer != t || e.users > 0 || e.pool == nil { // re-armed or in use since
		e.mu.Unlock()
		return
	}
	pool := e.pool
	e.pool, e.timer = nil, nil
	e.mu.Unlock()
	pool.Close()
	if e.release != nil {
		e.release() // the runtime's memory goes back to the OS now, not at the scavenger's pace
	}
}

// running reports whether the runtime is started (tests and diagnostics).
func (e *pdfEngine) running() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pool != nil
}

// parsePDF extracts each page's text in reading order with a page marker before it. The instance is
// killed when the deadline passes, so a pathological file cannot hold a worker forever.
func parsePDF(ctx context.Context, data []byte, l Limits) (Result, error) {
	if !strings.HasPrefix(string(data[:min(len(data), 1024)]), "%PDF") && !strings.Contains(string(data[:min(len(data), 1024)]), "%PDF-") {
		return Result{}, Terminal("not a PDF file (no %%PDF header)")
	}
	inst, start, done, err := pdf.acquire(ctx, l.PDFIdle, l.PDFMemory)
	if err != nil {
		return Result{}, err
	}
	defer done()
	stop := context.AfterFunc(ctx, func() { inst.Kill() })
	defer func() {
		if stop() {
			inst.Close()
		}
	}()
	doc, err := inst.OpenDocument(&requests.OpenDocument{File: &data})
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "password") {
			return Result{}, Terminal("the PDF is encrypted; upload an unprotected copy")
		}
		return Result{}, Terminal("the PDF cannot be opened: %v", err)
	}
	defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: doc.Document})
	pc, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: doc.Document})
	if err != nil {
		return Result{}, Terminal("the PDF page tree is damaged: %v", err)
	}
	if pc.PageCount > l.MaxPages {
		return Result{}, Terminal("the PDF has %d pages, the limit is %d", pc.PageCount, l.MaxPages)
	}
	var b strings.Builder
	var rep *OCRReport
	langs := "" // detected on the first recognised page, kept for the others
	for i := 0; i < pc.PageCount; i++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		t, err := inst.GetPageText(&requests.GetPageText{Page: requests.Page{ByIndex: &requests.PageByIndex{Document: doc.Document, Index: i}}})
		if err != nil {
			return Result{}, Terminal("page %d of the PDF cannot be read: %v", i+1, err)
		}
		text, err := pageText(inst, doc.Document, i, t.Text)
		if err != nil {
			return Result{}, err
		}
		if l.OCR != nil && !textLayerUsable(t.Text) {
			md, p, err := ocrPage(ctx, inst, doc.Document, i, l.OCR, langs)
			if err != nil {
				return Result{}, fmt.Errorf("page %d: %w", i+1, err)
			}
			// A short real text layer (a caption, a page number) beats recognising its rendering.
			if len([]rune(strings.TrimSpace(md))) > len([]rune(strings.TrimSpace(text))) {
				text, langs = md, p.Langs
				if rep == nil {
					rep = &OCRReport{}
				}
				rep.add(i+1, p)
			}
		}
		b.WriteString("\n" + PageMarker(i+1) + "\n\n" + text + "\n")
	}
	return Result{Markdown: b.String(), Pages: pc.PageCount, EngineStartMS: start.Milliseconds(), OCR: rep,
		Properties: pdfProperties(inst, doc.Document)}, nil
}

// OCRDPI is the resolution a PDF page without a text layer is rendered at for OCR: Tesseract reads
// body text best at 300 dpi (its documentation's advice; our CER figures in docs/ocr.md agree).
const OCRDPI = 300

// ocrPage renders page i in grey at OCRDPI and recognises it. The rendering lives in the engine's
// WebAssembly memory (bounded by Limits.PDFMemory) until encoded as PNG for the OCR process.
func ocrPage(ctx context.Context, inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, i int, o OCR, langs string) (string, OCRPage, error) {
	r, err := inst.RenderPageInDPI(&requests.RenderPageInDPI{Page: requests.Page{ByIndex: &requests.PageByIndex{Document: doc, Index: i}},
		DPI: OCRDPI, ImageFormat: requests.RenderImageFormatGrayscale})
	if err != nil {
		return "", OCRPage{}, Terminal("the page cannot be rendered for OCR: %v", err)
	}
	var img bytes.Buffer
	err = (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&img, r.Result.RenderedImage)
	r.Cleanup()
	if err != nil {
		return "", OCRPage{}, rag.E("extract", rag.KindInternal, err)
	}
	pages, err := o.Recognize(ctx, img.Bytes(), langs)
	if err != nil {
		return "", OCRPage{}, err
	}
	if len(pages) != 1 {
		return "", OCRPage{}, rag.Errorf("extract", rag.KindInternal, "OCR returned %d pages for one rendered page", len(pages))
	}
	return pages[0].Markdown, pages[0], nil
}

// pageText is a page's text as markdown: paragraphs (pdfText), with the tables found from the text's
// positions (findTables) as markdown tables in their place.
func pageText(inst pdfium.Pdfium, doc references.FPDF_DOCUMENT, i int, raw string) (string, error) {
	if strings.Count(raw, "\n") < 1 {
		return pdfText(raw), nil // one line: no table
	}
	st, err := inst.GetPageTextStructured(&requests.GetPageTextStructured{Page: requests.Page{ByIndex: &requests.PageByIndex{Document: doc, Index: i}},
		Mode: requests.GetPageTextStructuredModeRects})
	if err != nil {
		return "", Terminal("page %d of the PDF cannot be read: %v", i+1, err)
	}
	boxes := make([]textBox, 0, len(st.Rects))
	for _, r := range st.Rects {
		p := r.PointPosition
		boxes = append(boxes, textBox{text: r.Text, left: p.Left, top: p.Top, right: p.Right, bottom: p.Bottom})
	}
	tables := findTables(boxes)
	if len(tables) == 0 {
		return pdfText(raw), nil
	}
	lines, placed := placeTables(strings.Split(strings.ReplaceAll(strings.ReplaceAll(raw, "\r\n", "\n"), "\r", "\n"), "\n"), tables)
	text := pdfText(strings.Join(lines, "\n"))
	for k, t := range placed {
		text = strings.Replace(text, tableSlot+string(rune('A'+k)), t.markdown(), 1)
	}
	return text, nil
}

// pdfText turns a page's text lines into paragraphs. PDFs have no paragraphs, only positioned lines, so
// a line much shorter than the page's longest line ends a paragraph (a heading, or a paragraph's last
// line), as does a line ending a sentence; other lines are joined (CJK without a space, others with one).
func pdfText(s string) string {
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n"), "\n")
	longest := 0
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l)
		longest = max(longest, len([]rune(lines[i])))
	}
	var b strings.Builder
	for i, line := range lines {
		if line == "" {
			b.WriteString("\n\n")
			continue
		}
		b.WriteString(line)
		if i == len(lines)-1 {
			break
		}
		rs := []rune(line)
		last := rs[len(rs)-1]
		switch {
		case len(rs)*10 < longest*6, strings.ContainsRune("。！？；：.!?:;", last):
			b.WriteString("\n\n")
		case last > 0x2E80: // CJK: no space between wrapped lines
		default:
			b.WriteString(" ")
		}
	}
	return b.String()
}
