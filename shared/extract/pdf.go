package extract

import (
	"context"
	"strings"
	"sync"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
)

// PDFium runs as WebAssembly inside the process (pure Go, no cgo); starting it costs seconds, so the pool
// is created on first use and kept. Keep PDF parsing out of latency-sensitive paths.
var (
	pdfOnce sync.Once
	pdfPool pdfium.Pool
	pdfErr  error
)

func pdfInstance(ctx context.Context) (pdfium.Pdfium, error) {
	pdfOnce.Do(func() {
		pdfPool, pdfErr = webassembly.Init(webassembly.Config{MinIdle: 0, MaxIdle: 1, MaxTotal: 2})
	})
	if pdfErr != nil {
		return nil, pdfErr
	}
	return pdfPool.GetInstanceWithContext(ctx)
}

// parsePDF extracts each page's text in reading order with a page marker before it. The instance is
// killed when the deadline passes, so a pathological file cannot hold a worker forever.
func parsePDF(ctx context.Context, data []byte, l Limits) (Result, error) {
	if !strings.HasPrefix(string(data[:min(len(data), 1024)]), "%PDF") && !strings.Contains(string(data[:min(len(data), 1024)]), "%PDF-") {
		return Result{}, Terminal("not a PDF file (no %%PDF header)")
	}
	inst, err := pdfInstance(ctx)
	if err != nil {
		return Result{}, err
	}
	killed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { inst.Kill(); close(killed) })
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
	for i := 0; i < pc.PageCount; i++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		t, err := inst.GetPageText(&requests.GetPageText{Page: requests.Page{ByIndex: &requests.PageByIndex{Document: doc.Document, Index: i}}})
		if err != nil {
			return Result{}, Terminal("page %d of the PDF cannot be read: %v", i+1, err)
		}
		b.WriteString("\n" + PageMarker(i+1) + "\n\n" + pdfText(t.Text) + "\n")
	}
	return Result{Markdown: b.String(), Pages: pc.PageCount}, nil
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
