package extract

import (
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Tables in digital PDFs. A PDF has no tables, only text placed at positions, so a table is recovered
// from column alignment: a run of nearby lines, each split into pieces by wide gaps, whose pieces fall
// into the same vertical bands (columns). The first row is the header; a header piece spanning several
// bands (a merged header) is repeated in each, so that every column says what it holds. Ruling lines
// are not read: a ruled table's cells are separate pieces already, which alignment finds. The table
// replaces its rows in the page text as a markdown table, which the chunker keeps whole. Without this,
// "below 95%: refund 50%" of the demo's service agreement reached the model as one run of text, and a
// question about the 50% row was answered from the 99.9% one.

// textBox is a run of text at a position, in PDF points (y grows upwards).
type textBox struct {
	text                     string
	left, top, right, bottom float64
}

// piece is a run of boxes on one line with no wide gap inside.
type piece struct {
	text        string
	left, right float64
}

type textLine struct {
	pieces      []piece
	top, bottom float64
}

// pdfTable is a recovered table: rows of cells (the first row is the header), and the text of each
// row as the page text has it (spaces removed), to find its lines there.
type pdfTable struct {
	rows        [][]string
	keys        []string
	top, bottom float64 // the first row's top and the last row's bottom
}

// findTables returns the tables among a page's text boxes, top to bottom.
func findTables(boxes []textBox) []pdfTable {
	lines := groupLines(boxes)
	var out []pdfTable
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && len(lines[j].pieces) >= 2 && (j == i || closeBelow(lines[j-1], lines[j])) {
			j++
		}
		if j-i >= 2 {
			// A merged header whose first cell is blank is one piece above the run: it joins the
			// table when it is close, short and within the table's columns.
			run := lines[i:j]
			if i > 0 && len(lines[i-1].pieces) == 1 && closeBelow(lines[i-1], lines[i]) && len([]rune(lines[i-1].pieces[0].text)) <= 40 {
				if b := bands(run); lines[i-1].pieces[0].left > b[0][1] && lines[i-1].pieces[0].right <= b[len(b)-1][1]+(lines[i].top-lines[i].bottom) {
					run = lines[i-1 : j]
				}
			}
			if t, ok := tableOf(run); ok {
				t.top, t.bottom = run[0].top, run[len(run)-1].bottom
				out = append(out, t)
			}
		}
		i = max(j, i+1)
	}
	return out
}

// groupLines puts boxes whose vertical centres fall within each other's band on one line, and splits
// each line into pieces at gaps wider than half the line's height (a word space is about a quarter).
func groupLines(boxes []textBox) []textLine {
	bs := slices.Clone(boxes)
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].top > bs[j].top })
	var lines []textLine
	var members [][]textBox
	for _, b := range bs {
		if strings.TrimSpace(b.text) == "" {
			continue
		}
		c := (b.top + b.bottom) / 2
		placed := false
		for k := len(lines) - 1; k >= 0 && k >= len(lines)-3; k-- {
			if c <= lines[k].top && c >= lines[k].bottom {
				members[k] = append(members[k], b)
				lines[k].top, lines[k].bottom = max(lines[k].top, b.top), min(lines[k].bottom, b.bottom)
				placed = true
				break
			}
		}
		if !placed {
			lines = append(lines, textLine{top: b.top, bottom: b.bottom})
			members = append(members, []textBox{b})
		}
	}
	for k := range lines {
		m := members[k]
		sort.SliceStable(m, func(i, j int) bool { return m[i].left < m[j].left })
		h := lines[k].top - lines[k].bottom
		for i, b := range m {
			// Boxes keep the spaces the PDF has ("99.0% " then "至 "): a piece is their text as it
			// is, whitespace collapsed at the end.
			if i > 0 && b.left-m[i-1].right < h/2 {
				p := &lines[k].pieces[len(lines[k].pieces)-1]
				p.text += b.text
				p.right = max(p.right, b.right)
				continue
			}
			lines[k].pieces = append(lines[k].pieces, piece{text: b.text, left: b.left, right: b.right})
		}
		for i := range lines[k].pieces {
			lines[k].pieces[i].text = strings.Join(strings.Fields(lines[k].pieces[i].text), " ")
		}
	}
	return lines
}

// closeBelow reports whether line b follows line a closely enough to be the next row of a table:
// within four line heights (ruled tables pad their rows).
func closeBelow(a, b textLine) bool {
	h := max(a.top-a.bottom, b.top-b.bottom)
	return a.bottom-b.top < 4*h
}

// tableOf lays the lines out in columns, or says they are not a table: fewer than two columns, a row
// with two pieces in one column, or long pieces (prose set in two columns, not a table).
func tableOf(lines []textLine) (pdfTable, bool) {
	// Columns are the bands the pieces of the body rows cover. Up to two leading rows with fewer
	// pieces than the fullest row are headers that may span bands (merged headers) and are left out.
	most := 0
	for _, l := range lines {
		most = max(most, len(l.pieces))
	}
	head := 0
	for head < min(2, len(lines)-2) && len(lines[head].pieces) < most {
		head++
	}
	cols := mergeApart(bands(lines[head:]), lines[head:])
	if len(cols) < 2 {
		return pdfTable{}, false
	}
	long, pieces := 0, 0
	t := pdfTable{}
	for li, l := range lines {
		row := make([]string, len(cols))
		var key strings.Builder
		for _, p := range l.pieces {
			key.WriteString(strings.Join(strings.Fields(p.text), ""))
			pieces++
			if len([]rune(p.text)) > 40 {
				long++
			}
			spanned, overlaps := 0, false
			for ci, c := range cols {
				if p.left < c[1] && p.right > c[0] {
					overlaps = true
					if row[ci] != "" {
						if li >= head || spanned == 0 {
							return pdfTable{}, false
						}
						continue
					}
					row[ci] = p.text
					spanned++
					if li >= head {
						break // only a header spans
					}
				}
			}
			if !overlaps {
				return pdfTable{}, false // a header piece beside the columns: not a grid
			}
		}
		t.rows = append(t.rows, row)
		t.keys = append(t.keys, key.String())
	}
	if long*4 > pieces {
		return pdfTable{}, false
	}
	return t, true
}

// bands merges the pieces' x-ranges into disjoint column bands, left to right.
func bands(lines []textLine) [][2]float64 {
	var iv [][2]float64
	for _, l := range lines {
		for _, p := range l.pieces {
			iv = append(iv, [2]float64{p.left, p.right})
		}
	}
	sort.Slice(iv, func(i, j int) bool { return iv[i][0] < iv[j][0] })
	var out [][2]float64
	for _, v := range iv {
		if n := len(out); n > 0 && v[0] < out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], v[1])
			continue
		}
		out = append(out, v)
	}
	return out
}

// mergeApart merges neighbouring bands that no row occupies both of: they are one column whose
// pieces do not overlap (a short left-aligned header over right-aligned numbers), not two.
func mergeApart(cols [][2]float64, lines []textLine) [][2]float64 {
	in := func(p piece, c [2]float64) bool { return p.left < c[1] && p.right > c[0] }
	for k := 0; k+1 < len(cols); {
		both := false
		for _, l := range lines {
			a, b := false, false
			for _, p := range l.pieces {
				a, b = a || in(p, cols[k]), b || in(p, cols[k+1])
			}
			both = both || a && b
		}
		if both {
			k++
			continue
		}
		cols[k][1] = cols[k+1][1]
		cols = append(cols[:k+1], cols[k+2:]...)
	}
	return cols
}

// markdown renders the table with its first row as the header.
func (t pdfTable) markdown() string {
	var b strings.Builder
	for i, row := range t.rows {
		b.WriteString("|")
		for _, c := range row {
			b.WriteString(" " + strings.ReplaceAll(strings.Join(strings.Fields(c), " "), "|", "\\|") + " |")
		}
		b.WriteString("\n")
		if i == 0 {
			b.WriteString(strings.Repeat("| --- ", len(row)) + "|\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// placeTables replaces each table's rows in the page's text lines with a placeholder line (tableSlot
// and its index) set apart by blank lines, and returns the lines and the tables placed. A table whose
// rows cannot be found in order (the page text orders them otherwise) is left as text.
func placeTables(lines []string, tables []pdfTable) ([]string, []pdfTable) {
	var placed []pdfTable
	from := 0
	for _, t := range tables {
		start, end, ok := findRows(lines, from, t.keys)
		if !ok {
			continue
		}
		slot := tableSlot + string(rune('A'+len(placed)))
		out := append(slices.Clone(lines[:start]), "", slot, "")
		from = len(out)
		lines = append(out, lines[end:]...)
		placed = append(placed, t)
	}
	return lines, placed
}

// tableSlot starts the placeholder of a table in the page text: private-use characters no PDF text
// extracted here contains after cleaning.
const tableSlot = "\uE000table\uE000"

// findRows finds consecutive lines, from line from on, whose text without spaces is the rows' keys in
// order (a row may span lines), and returns their range.
func findRows(lines []string, from int, keys []string) (int, int, bool) {
	norm := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) {
				return -1
			}
			return r
		}, s)
	}
	for s := from; s < len(lines); s++ {
		i, ok := s, true
		for _, k := range keys {
			acc := ""
			for acc != k && i < len(lines) && len(acc) < len(k) {
				acc += norm(lines[i])
				i++
			}
			if acc != k {
				ok = false
				break
			}
		}
		if ok {
			return s, i, true
		}
	}
	return 0, 0, false
}
