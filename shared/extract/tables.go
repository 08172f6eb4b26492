package extract

// TextBox is a run of text at a position on a page, y growing upwards: PDF points as they are, or an
// image's pixel rows negated (OCR word boxes).
type TextBox struct {
	Text                     string
	Left, Top, Right, Bottom float64
}

// Table is a table recovered from text positions (FindTables): its rows of cells, the first row the
// header, and the vertical span of its rows.
type Table struct {
	Rows        [][]string
	Top, Bottom float64
}

// FindTables returns the tables among a page's text boxes, top to bottom, by the column alignment
// digital PDFs are read with (pdftable.go): OCR'd pages use it on their word boxes, so a scanned table
// becomes a markdown table too, whichever blocks the OCR engine put its columns in.
func FindTables(boxes []TextBox) []Table {
	in := make([]textBox, len(boxes))
	for i, b := range boxes {
		in[i] = textBox{text: b.Text, left: b.Left, top: b.Top, right: b.Right, bottom: b.Bottom}
	}
	var out []Table
	for _, t := range findTables(in) {
		out = append(out, Table{Rows: t.rows, Top: t.top, Bottom: t.bottom})
	}
	return out
}

// Markdown renders the table with its first row as the header.
func (t Table) Markdown() string { return pdfTable{rows: t.Rows}.markdown() }
