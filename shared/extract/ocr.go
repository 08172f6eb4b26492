package extract

import (
	"context"
	"fmt"
	"strings"
	"unicode"
)

// OCR recognises the text of page images (ocr.Tesseract runs Tesseract). Recognize returns one page
// per page of image, in order; langs is "" for the engine's configured languages, or the languages
// an earlier page of the same document was recognised with (OCRPage.Langs), so that one document
// detects its language once. Errors are Terminal for an image that cannot be recognised and
// Unavailable for a missing engine or an ended ctx.
type OCR interface {
	Recognize(ctx context.Context, image []byte, langs string) ([]OCRPage, error)
}

// OCRPage is one recognised page.
type OCRPage struct {
	Markdown   string  // headings and paragraphs; uncertain words marked [?word]
	Confidence float64 // mean word confidence, 0-100, weighted by word length
	Words      int
	LowWords   int    // words below the engine's confidence floor (marked)
	Langs      string // languages used, tesseract's names ("eng", "chi_sim+eng")
	// Unscored: the engine gives no confidence (a vision model), so Confidence means nothing and the
	// page is neither averaged nor reported as poorly read; LowWords are the words it marked unreadable.
	Unscored bool
}

// LowConfidence is the mean word confidence under which a page is reported as poorly recognised:
// below it about one word in five is wrong (Tesseract's confidences on our generated pages).
const LowConfidence = 70

// OCRReport is what OCR did to a document: which pages were recognised and how well.
type OCRReport struct {
	Pages      []int   `json:"pages"`               // recognised pages, 1-based
	Confidence float64 `json:"confidence"`          // mean over the recognised pages
	LowPages   []int   `json:"low_pages,omitempty"` // pages whose confidence is below LowConfidence
	LowWords   int     `json:"low_words,omitempty"` // words marked uncertain
	Langs      string  `json:"langs,omitempty"`     // languages used
	// Unscored counts recognised pages without a confidence (read by a vision model); Confidence is the
	// mean over the others.
	Unscored int `json:"unscored,omitempty"`
	// Unread are pages the engine reported it could not read (Textract's PARTIAL_SUCCESS warnings):
	// they are in the document, empty.
	Unread []int `json:"unread_pages,omitempty"`
}

// Note is the one-line summary a document's status shows ("" when nothing is worth saying).
func (r *OCRReport) Note() string {
	if r == nil || len(r.Pages) == 0 {
		return ""
	}
	scored := len(r.Pages) - r.Unscored
	var s string
	switch {
	case scored == 0:
		s = fmt.Sprintf("OCR (vision model) on %d page(s), no confidence measure", len(r.Pages))
		if r.LowWords > 0 {
			s += fmt.Sprintf("; %d word(s) marked unreadable: check the scan", r.LowWords)
		}
		return s
	case r.Unscored > 0:
		s = fmt.Sprintf("OCR (%s) on %d page(s), mean confidence %.0f%% over %d scored", r.Langs, len(r.Pages), r.Confidence, scored)
	default:
		s = fmt.Sprintf("OCR (%s) on %d page(s), mean confidence %.0f%%", r.Langs, len(r.Pages), r.Confidence)
	}
	if len(r.LowPages) > 0 {
		s += fmt.Sprintf("; low confidence on page(s) %s: check the scan", joinInts(r.LowPages))
	}
	if len(r.Unread) > 0 {
		s += fmt.Sprintf("; page(s) %s could not be read", joinInts(r.Unread))
	}
	return s
}

func (r *OCRReport) add(page int, p OCRPage) {
	r.Pages = append(r.Pages, page)
	r.LowWords += p.LowWords
	if r.Langs == "" {
		r.Langs = p.Langs
	}
	if p.Unscored {
		r.Unscored++
		return
	}
	n := float64(len(r.Pages) - 1 - r.Unscored) // scored pages before this one
	r.Confidence = (r.Confidence*n + p.Confidence) / (n + 1)
	if p.Words > 0 && p.Confidence < LowConfidence {
		r.LowPages = append(r.LowPages, page)
	}
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = fmt.Sprint(n)
	}
	return strings.Join(s, ", ")
}

// noOCR is the error of a document that needs OCR when none is configured.
func noOCR(what string) error {
	return Terminal("%s needs OCR, which is off: install Tesseract (apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim) and set DOCMIND_OCR=auto", what)
}

// imageFormats are the image extensions recognised by OCR.
var imageFormats = []string{".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp", ".bmp"}

// parseImage recognises every page of an image (a multi-page TIFF has several), each after a page
// marker.
func parseImage(ctx context.Context, data []byte, l Limits) (Result, error) {
	if l.OCR == nil {
		return Result{}, noOCR("an image")
	}
	if !isImage(data) {
		return Result{}, Terminal("not an image in a format OCR reads (PNG, JPEG, TIFF, WebP, BMP)")
	}
	pages, err := l.OCR.Recognize(ctx, data, "")
	if err != nil {
		return Result{}, err
	}
	if len(pages) > l.MaxPages {
		return Result{}, Terminal("the image has %d pages, the limit is %d", len(pages), l.MaxPages)
	}
	var b strings.Builder
	rep := &OCRReport{}
	for i, p := range pages {
		b.WriteString("\n" + PageMarker(i+1) + "\n\n" + p.Markdown + "\n")
		rep.add(i+1, p)
	}
	return Result{Markdown: b.String(), Pages: len(pages), OCR: rep}, nil
}

// isImage checks the magic bytes of the formats OCR reads, so a misnamed file fails with a clear
// message before a process is started.
func isImage(b []byte) bool {
	h := string(b[:min(len(b), 16)])
	switch {
	case strings.HasPrefix(h, "\x89PNG\r\n\x1a\n"), strings.HasPrefix(h, "\xff\xd8\xff"),
		strings.HasPrefix(h, "II*\x00"), strings.HasPrefix(h, "MM\x00*"), strings.HasPrefix(h, "BM"):
		return true
	case len(h) >= 12 && h[:4] == "RIFF" && h[8:12] == "WEBP":
		return true
	}
	return false
}

// textLayerUsable reports whether a PDF page's text layer is real text rather than nothing or the
// garbage of a scan's hidden layer or a font without a Unicode map: at least 20 letters or digits, and
// at least 70% of the non-space characters readable (letters, digits, CJK, common punctuation), not
// replacement characters, private-use glyphs or control codes.
func textLayerUsable(s string) bool {
	good, all, letters := 0, 0, 0
	for _, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		all++
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			good++
			letters++
		case unicode.IsPunct(r) || unicode.IsSymbol(r) && r < 0x2000:
			good++
		}
	}
	return letters >= 20 && good*10 >= all*7
}
