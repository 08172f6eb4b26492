package ocr_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ocr"
	"github.com/docmind/docmind/shared/ocr/ocrtest"
	"github.com/docmind/docmind/shared/rag"
)

func engine(t testing.TB) *ocr.Tesseract {
	t.Helper()
	e, err := ocr.New("auto")
	if err != nil {
		t.Skipf("%v", err)
	}
	return e
}

func extractFile(t testing.TB, path string, l extract.Limits) (extract.Result, error) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return extract.Extract(context.Background(), filepath.Base(path), b, l)
}

// A scanned English page comes out as markdown: the heading as a heading, both paragraphs, a page
// marker, the languages detected and a confident OCR report.
func TestImageBecomesMarkdown(t *testing.T) {
	ocrtest.Need(t, false)
	e := engine(t)
	pg := ocrtest.Page{DPI: 300, Skew: 1, Noise: 0.3}
	res, err := extractFile(t, pg.PNG(t, t.TempDir()), extract.Limits{OCR: e})
	if err != nil {
		t.Fatal(err)
	}
	md := res.Markdown
	if !strings.Contains(md, extract.PageMarker(1)) {
		t.Errorf("no page marker in\n%s", md)
	}
	if !strings.Contains(md, "# Leave Policy\n") {
		t.Errorf("heading not recognised as a heading in\n%s", md)
	}
	if n := strings.Count(strings.TrimSpace(md), "\n\n"); n < 3 {
		t.Errorf("want marker, heading and two paragraphs separated by blank lines, got %d breaks in\n%s", n, md)
	}
	if res.Format != "image" || res.Pages != 1 || res.OCR == nil || res.OCR.Langs != "eng" || res.OCR.Confidence < extract.LowConfidence || len(res.OCR.LowPages) != 0 {
		t.Errorf("format %q pages %d report %+v; want image, 1 page, eng, confident", res.Format, res.Pages, res.OCR)
	}
}

// Character error rate on generated pages, English and Chinese at 150 and 300 dpi with skew and
// noise; the goals hold at 300 dpi.
func TestCharacterErrorRate(t *testing.T) {
	ocrtest.Need(t, false)
	e := engine(t)
	dir := t.TempDir()
	goal := map[bool]float64{false: 0.02, true: 0.05}
	for _, zh := range []bool{false, true} {
		for _, dpi := range []int{150, 300} {
			pg := ocrtest.Page{Chinese: zh, DPI: dpi, Skew: 1.5, Noise: 0.3}
			t.Run(fmt.Sprintf("chinese=%t/%ddpi", zh, dpi), func(t *testing.T) {
				res, err := extractFile(t, pg.PNG(t, dir), extract.Limits{OCR: e})
				if err != nil {
					t.Fatal(err)
				}
				cer := ocrtest.CER(pg.Text(), res.Markdown)
				t.Logf("CER %.2f%% (langs %s, confidence %.1f, %d uncertain words)", cer*100, res.OCR.Langs, res.OCR.Confidence, res.OCR.LowWords)
				wantLangs := map[bool]string{false: "eng", true: "chi_sim"}[zh]
				if res.OCR.Langs != wantLangs {
					t.Errorf("languages detected %q, want %q", res.OCR.Langs, wantLangs)
				}
				if dpi == 300 && cer > goal[zh] {
					t.Errorf("CER %.2f%% above the goal %.0f%%:\n%s", cer*100, goal[zh]*100, res.Markdown)
				}
			})
		}
	}
}

// A PDF whose page is an image (no text layer) is rendered and recognised; without OCR it is refused
// with the command that installs it.
func TestScannedPDF(t *testing.T) {
	ocrtest.Need(t, true)
	e := engine(t)
	path := ocrtest.Page{DPI: 300, Skew: -1, Noise: 0.2}.PDF(t, t.TempDir())
	res, err := extractFile(t, path, extract.Limits{OCR: e})
	if err != nil {
		t.Fatal(err)
	}
	if cer := ocrtest.CER(ocrtest.Page{}.Text(), res.Markdown); cer > 0.02 || res.OCR == nil || len(res.OCR.Pages) != 1 {
		t.Errorf("CER %.2f%%, report %+v; want <= 2%% and page 1 recognised:\n%s", cer*100, res.OCR, res.Markdown)
	}
	_, err = extractFile(t, path, extract.Limits{})
	if rag.KindOf(err) != rag.KindTerminal || !strings.Contains(fmt.Sprint(err), "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim") {
		t.Errorf("without OCR: %v; want a Terminal error naming the packages", err)
	}
}

// Every image format is read, and a multi-page TIFF page by page.
func TestImageFormats(t *testing.T) {
	ocrtest.Need(t, false)
	e := engine(t)
	dir := t.TempDir()
	en := ocrtest.Page{DPI: 300}.PNG(t, dir)
	zh := ocrtest.Page{DPI: 300, Chinese: true}.PNG(t, dir)
	for _, ext := range []string{"jpg", "webp", "bmp", "tif"} {
		t.Run(ext, func(t *testing.T) {
			out := filepath.Join(dir, "scan."+ext)
			// Leptonica reads only uncompressed BMP; ImageMagick writes grey BMP run-length encoded.
			ocrtest.Run(t, "convert", en, "-compress", "none", "-type", "TrueColor", out)
			res, err := extractFile(t, out, extract.Limits{OCR: e})
			if err != nil {
				t.Fatal(err)
			}
			if cer := ocrtest.CER(ocrtest.Page{}.Text(), res.Markdown); cer > 0.02 {
				t.Errorf("CER %.2f%%:\n%s", cer*100, res.Markdown)
			}
		})
	}
	t.Run("multi-page tiff", func(t *testing.T) {
		out := filepath.Join(dir, "two.tiff")
		ocrtest.Run(t, "convert", en, en, out)
		res, err := extractFile(t, out, extract.Limits{OCR: e})
		if err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(res.Markdown, extract.PageMarker(2))
		if res.Pages != 2 || len(parts) != 2 || !strings.Contains(parts[0], extract.PageMarker(1)) {
			t.Fatalf("pages %d, want 2 with markers:\n%s", res.Pages, res.Markdown)
		}
		for i, p := range parts {
			if cer := ocrtest.CER(ocrtest.Page{}.Text(), p); cer > 0.02 {
				t.Errorf("page %d: CER %.2f%%:\n%s", i+1, cer*100, p)
			}
		}
	})
	t.Run("chinese png", func(t *testing.T) {
		res, err := extractFile(t, zh, extract.Limits{OCR: e})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Markdown, "# 请假制度") {
			t.Errorf("Chinese heading missing:\n%s", res.Markdown)
		}
	})
	t.Run("compressed bmp", func(t *testing.T) {
		out := filepath.Join(dir, "rle.bmp")
		ocrtest.Run(t, "convert", en, "-compress", "RLE", out)
		_, err := extractFile(t, out, extract.Limits{OCR: e})
		if rag.KindOf(err) != rag.KindTerminal || !strings.Contains(fmt.Sprint(err), "compressed BMP") {
			t.Errorf("got %v, want Terminal naming the compressed BMP", err)
		}
	})
	t.Run("not an image", func(t *testing.T) {
		_, err := extract.Extract(context.Background(), "fake.png", []byte("just text, named .png"), extract.Limits{OCR: e})
		if rag.KindOf(err) != rag.KindTerminal || !strings.Contains(err.Error(), "not an image") {
			t.Errorf("got %v, want Terminal 'not an image'", err)
		}
	})
}

// The address-space limit holds: a process allowed less than Tesseract needs to load its models
// fails with a Terminal error saying so, and nothing else breaks.
func TestMemoryBoundHolds(t *testing.T) {
	ocrtest.Need(t, false)
	e := engine(t)
	img, err := os.ReadFile(ocrtest.Page{DPI: 300}.PNG(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	small := &ocr.Tesseract{Bin: e.Bin, Langs: "eng+chi_sim", Memory: 64 << 20}
	_, err = small.Recognize(context.Background(), img, "")
	if rag.KindOf(err) != rag.KindTerminal || !strings.Contains(fmt.Sprint(err), "needs more than the 64 MiB") {
		t.Fatalf("64 MiB limit: got %v, want a Terminal memory error", err)
	}
	pages, err := e.Recognize(context.Background(), img, "")
	if err != nil || len(pages) != 1 {
		t.Fatalf("default limit: %d pages, %v", len(pages), err)
	}
	if s := e.Stats(); s.MaxRSS <= 0 || s.MaxRSS > ocr.DefaultMemory {
		t.Errorf("peak RSS %d, want within (0, %d]", s.MaxRSS, ocr.DefaultMemory)
	}
}

// The timeout stops a process and reports a Terminal error.
func TestTimeout(t *testing.T) {
	ocrtest.Need(t, false)
	e := engine(t)
	img, err := os.ReadFile(ocrtest.Page{DPI: 300}.PNG(t, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	short := &ocr.Tesseract{Bin: e.Bin, Langs: "eng", Timeout: time.Millisecond}
	_, err = short.Recognize(context.Background(), img, "")
	if rag.KindOf(err) != rag.KindTerminal || !strings.Contains(fmt.Sprint(err), "longer than") {
		t.Fatalf("got %v, want a Terminal timeout", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Recognize(ctx, img, ""); rag.KindOf(err) != rag.KindUnavailable || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: got %v, want Unavailable", err)
	}
}

// 16 scanned PDFs extracted at once under one memory budget: every one is recognised, no more OCR
// processes run at once than Procs, and no process outgrows its limit. It logs pages per second.
func TestSixteenScannedPDFsAtOnce(t *testing.T) {
	ocrtest.Need(t, true)
	e := engine(t)
	e.Procs = 2
	path := ocrtest.Page{DPI: 300, Skew: 0.5, Noise: 0.2}.PDF(t, t.TempDir())
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l := extract.Limits{OCR: e, Budget: extract.NewBudget(512 << 20), Timeout: 10 * time.Minute}
	var wg sync.WaitGroup
	errs := make([]error, 16)
	t0 := time.Now()
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := extract.Extract(context.Background(), fmt.Sprintf("scan-%d.pdf", i), data, l)
			if err == nil && ocrtest.CER(ocrtest.Page{}.Text(), res.Markdown) > 0.02 {
				err = fmt.Errorf("CER above 2%%:\n%s", res.Markdown)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	for i, err := range errs {
		if err != nil {
			t.Errorf("document %d: %v", i, err)
		}
	}
	s := e.Stats()
	t.Logf("16 scanned pages in %s: %.2f pages/s with %d processes (shared machine); peak RSS of one process %d MiB (limit %d MiB)",
		el.Round(time.Millisecond), 16/el.Seconds(), e.Procs, s.MaxRSS>>20, ocr.DefaultMemory>>20)
	if s.MaxRunning > e.Procs || s.MaxRunning < 1 {
		t.Errorf("%d processes ran at once, the bound is %d", s.MaxRunning, e.Procs)
	}
	if s.MaxRSS > ocr.DefaultMemory {
		t.Errorf("a process peaked at %d bytes, over its %d limit", s.MaxRSS, ocr.DefaultMemory)
	}
}
