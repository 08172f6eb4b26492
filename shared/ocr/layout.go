package ocr

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/docmind/docmind/shared/extract"
)

// word is one TSV row of level 5.
type word struct {
	page, block, par, line int
	left, top              int
	width, height          int
	conf                   float64
	text                   string
}

// Layout turns tesseract's TSV output into one markdown page per page of the image. Tesseract's
// paragraphs become paragraphs; a paragraph of one or two lines set clearly larger than the page's
// body text becomes a heading (# at twice the body height, ## at 1.6x, ### at 1.3x); a table (rows of
// words aligned in columns, found from the word boxes as in digital PDFs) becomes a markdown table in
// place of its words; words whose confidence is below floor are marked [?word]; the page's confidence
// is the mean of its words' confidences weighted by their length. A page with no words has an empty
// Markdown.
func Layout(tsv []byte, floor float64) ([]extract.OCRPage, error) {
	var words []word
	pages := 0
	for i, row := range strings.Split(string(tsv), "\n") {
		if i == 0 || row == "" {
			continue
		}
		f := strings.Split(row, "\t")
		if len(f) < 12 {
			return nil, fmt.Errorf("tsv row %d has %d fields, want 12", i+1, len(f))
		}
		n := make([]int, 10)
		for j := range n {
			v, err := strconv.Atoi(f[j])
			if err != nil {
				return nil, fmt.Errorf("tsv row %d field %d: %w", i+1, j+1, err)
			}
			n[j] = v
		}
		pages = max(pages, n[1])
		if n[0] != 5 {
			continue
		}
		conf, err := strconv.ParseFloat(f[10], 64)
		if err != nil {
			return nil, fmt.Errorf("tsv row %d confidence: %w", i+1, err)
		}
		text := strings.TrimSpace(strings.Join(f[11:], "\t"))
		if text == "" {
			continue
		}
		words = append(words, word{page: n[1], block: n[2], par: n[3], line: n[4], left: n[6], top: n[7], width: n[8], height: n[9], conf: conf, text: text})
	}
	out := make([]extract.OCRPage, pages)
	for p := 1; p <= pages; p++ {
		var pw []word
		for _, w := range words {
			if w.page == p {
				pw = append(pw, w)
			}
		}
		out[p-1] = layoutPage(pw, floor)
	}
	return out, nil
}

type line struct {
	words  []word
	height int
}

type para struct{ lines []line }

func layoutPage(ws []word, floor float64) extract.OCRPage {
	var pg extract.OCRPage
	if len(ws) == 0 {
		return pg
	}
	var paras []para
	var heights []int
	for i, w := range ws {
		if i == 0 || w.block != ws[i-1].block || w.par != ws[i-1].par {
			paras = append(paras, para{})
		}
		p := &paras[len(paras)-1]
		if i == 0 || w.line != ws[i-1].line || len(p.lines) == 0 {
			p.lines = append(p.lines, line{})
		}
		l := &p.lines[len(p.lines)-1]
		l.words = append(l.words, w)
		l.height = max(l.height, w.height)
	}
	for _, p := range paras {
		for _, l := range p.lines {
			heights = append(heights, lineHeight(l))
		}
	}
	body := median(heights)
	tables := pageTables(ws, floor)
	placed := 0
	var b strings.Builder
	var confSum, weight float64
	for _, p := range paras {
		var text strings.Builder
		first := -1 // the paragraph's first word outside a table
		for li, l := range p.lines {
			for wi, w := range l.words {
				n := float64(len([]rune(w.text)))
				confSum += w.conf * n
				weight += n
				pg.Words++
				t := w.text
				if w.conf < floor {
					pg.LowWords++
					t = "[?" + t + "]"
				}
				if inTable(w, tables) {
					continue // written as the table's cell
				}
				if first < 0 {
					first = w.top
				}
				if (wi > 0 || li > 0) && text.Len() > 0 && !(cjkEnd(text.String()) && cjkStart(w.text)) {
					text.WriteByte(' ')
				}
				text.WriteString(t)
			}
		}
		s := strings.TrimSpace(text.String())
		if s == "" {
			continue
		}
		// a table goes before the first paragraph that starts below its top
		for ; placed < len(tables) && -tables[placed].Top <= float64(first); placed++ {
			b.WriteString(tables[placed].Markdown() + "\n\n")
		}
		if h := heading(p, body); h != "" && len([]rune(s)) <= 120 {
			s = h + " " + s
		}
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	for ; placed < len(tables); placed++ {
		b.WriteString(tables[placed].Markdown() + "\n\n")
	}
	pg.Markdown = strings.TrimSpace(b.String())
	if weight > 0 {
		pg.Confidence = confSum / weight
	}
	return pg
}

// lineHeight is a line's typical word height: the median, so that one tall glyph (a bracket, a
// descender-heavy word) does not make a body line look like a heading.
// pageTables finds the tables among a page's words by their boxes (y negated: extract's boxes grow
// upwards), with uncertain words marked as in the text. A ruled table's lines come back from
// tesseract as words of bars and dashes; they are left out, as a digital PDF's ruling is.
func pageTables(ws []word, floor float64) []extract.Table {
	var boxes []extract.TextBox
	for _, w := range ws {
		if ruling(w.text) {
			continue
		}
		t := w.text
		if w.conf < floor {
			t = "[?" + t + "]"
		}
		if !cjkEnd(t) {
			t += " " // boxes join as they are (a PDF's keep their spaces); Chinese words join without
		}
		boxes = append(boxes, extract.TextBox{Text: t, Left: float64(w.left), Right: float64(w.left + w.width),
			Top: -float64(w.top), Bottom: -float64(w.top + w.height)})
	}
	return extract.FindTables(boxes)
}

// inTable reports whether w's vertical centre falls within a table's rows: its words are the table's
// cells (or ruling).
func inTable(w word, tables []extract.Table) bool {
	c := -(float64(w.top) + float64(w.height)/2)
	for _, t := range tables {
		if c <= t.Top && c >= t.Bottom {
			return true
		}
	}
	return false
}

// ruling reports whether a word is only the marks a table's ruling lines are read as: bars and
// brackets (vertical lines), or a run of three or more rule characters (horizontal ones). A lone dash
// stays: in a table it is a cell's value.
func ruling(s string) bool {
	if strings.Trim(s, "|[]") == "" {
		return true
	}
	return len([]rune(s)) >= 3 && strings.Trim(s, "_-—–=") == ""
}

func lineHeight(l line) int {
	hs := make([]int, len(l.words))
	for i, w := range l.words {
		hs[i] = w.height
	}
	return median(hs)
}

func heading(p para, body int) string {
	if len(p.lines) > 2 || body <= 0 {
		return ""
	}
	h := 0
	for _, l := range p.lines {
		h = max(h, lineHeight(l))
	}
	switch r := float64(h) / float64(body); {
	case r >= 2:
		return "#"
	case r >= 1.6:
		return "##"
	case r >= 1.3:
		return "###"
	}
	return ""
}

func median(v []int) int {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func isCJK(r rune) bool {
	return (r >= 0x2E80 && r <= 0x9FFF) || (r >= 0xF900 && r <= 0xFAFF) || (r >= 0xFF00 && r <= 0xFFEF) || (r >= 0x3000 && r <= 0x303F)
}

func cjkEnd(s string) bool {
	r := []rune(s)
	return len(r) > 0 && (isCJK(r[len(r)-1]) || r[len(r)-1] == ']' && len(r) > 1 && isCJK(r[len(r)-2]))
}

func cjkStart(s string) bool {
	r := []rune(strings.TrimPrefix(s, "[?"))
	return len(r) > 0 && isCJK(r[0])
}
