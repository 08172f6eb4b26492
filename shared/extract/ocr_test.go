package extract

import (
	"context"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// fakeOCR returns fixed pages and records the languages it was asked for.
type fakeOCR struct {
	pages []OCRPage
	langs []string
	err   error
}

func (f *fakeOCR) Recognize(_ context.Context, _ []byte, langs string) ([]OCRPage, error) {
	f.langs = append(f.langs, langs)
	return f.pages, f.err
}

var pngHeader = []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 32))

func TestImageWithoutOCRNamesThePackages(t *testing.T) {
	_, err := Extract(context.Background(), "scan.jpg", []byte("\xff\xd8\xff\xe0 jpeg"), Limits{})
	if rag.KindOf(err) != rag.KindTerminal || !strings.Contains(err.Error(), "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim") {
		t.Fatalf("got %v, want Terminal naming the packages", err)
	}
}

// Each recognised page follows its marker, and the report averages the pages and lists the poor ones.
func TestImagePagesAndReport(t *testing.T) {
	f := &fakeOCR{pages: []OCRPage{
		{Markdown: "# Title\n\nGood text.", Confidence: 92, Words: 3, Langs: "eng"},
		{Markdown: "[?Smudged] text.", Confidence: 40, Words: 2, LowWords: 1, Langs: "eng"},
	}}
	res, err := Extract(context.Background(), "fax.tiff", append([]byte("II*\x00"), pngHeader...), Limits{OCR: f})
	if err != nil {
		t.Fatal(err)
	}
	want := PageMarker(1) + "\n\n# Title\n\nGood text.\n\n" + PageMarker(2) + "\n\n[?Smudged] text.\n"
	if res.Markdown != want || res.Pages != 2 || res.Format != "image" {
		t.Errorf("got %q (%d pages, %s), want %q", res.Markdown, res.Pages, res.Format, want)
	}
	r := res.OCR
	if r == nil || r.Confidence != 66 || len(r.LowPages) != 1 || r.LowPages[0] != 2 || r.LowWords != 1 || r.Langs != "eng" {
		t.Fatalf("report %+v, want mean 66, low page 2, 1 low word, eng", r)
	}
	if n := r.Note(); !strings.Contains(n, "low confidence on page(s) 2") || !strings.Contains(n, "mean confidence 66%") {
		t.Errorf("note %q", n)
	}
	if len(f.langs) != 1 || f.langs[0] != "" {
		t.Errorf("languages asked %q, want the configured ones", f.langs)
	}
}

func TestImageErrors(t *testing.T) {
	f := &fakeOCR{err: rag.Errorf("ocr", rag.KindTerminal, "tesseract cannot read this image")}
	if _, err := Extract(context.Background(), "a.png", pngHeader, Limits{OCR: f}); rag.KindOf(err) != rag.KindTerminal {
		t.Errorf("engine error: got %v, want Terminal", err)
	}
	if _, err := Extract(context.Background(), "a.webp", []byte("<html>not an image"), Limits{OCR: f}); err == nil || !strings.Contains(err.Error(), "not an image") {
		t.Errorf("misnamed file: got %v", err)
	}
	if len(f.langs) != 1 {
		t.Errorf("the engine ran %d times, want once (the misnamed file refused before)", len(f.langs))
	}
	empty := &fakeOCR{pages: []OCRPage{{}}}
	if _, err := Extract(context.Background(), "blank.png", pngHeader, Limits{OCR: empty}); rag.KindOf(err) != rag.KindTerminal || !strings.Contains(err.Error(), "no text found") {
		t.Errorf("blank page: got %v, want Terminal no text", err)
	}
}

func TestTextLayerUsable(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"", false},
		{"   \n\n  ", false},
		{"Page 3", false}, // too little to trust: a scan with a page number stamped on it
		{"Employees may carry over up to five unused vacation days.", true},
		{"员工可以将最多五天未使用的年假结转到下一个日历年度。", true},
		{strings.Repeat("\uFFFD\uE000\uE001 ", 20) + "abc", false}, // unmapped glyphs
		{strings.Repeat("\x01\x02\x03", 20) + "some letters here ok", false},
	} {
		if got := textLayerUsable(c.text); got != c.want {
			t.Errorf("textLayerUsable(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}
