package textract

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/textract/types"

	"github.com/docmind/docmind/shared/extract"
)

// WordFloor is the word confidence under which a word is marked [?word], as Tesseract's words are.
const WordFloor = 60

// Langs is what the OCR report names as the engine's languages: Textract does not say which it read.
const Langs = "textract"

// Markdown turns an analysis' blocks (every page of NextToken paging, in the order received) into
// markdown with a page marker per page, and the OCR report: LAYOUT_TITLE and LAYOUT_SECTION_HEADER
// become headings, LAYOUT_TEXT, LAYOUT_LIST and the other layout blocks paragraphs and list items,
// TABLE blocks markdown tables; running headers, footers and page numbers are dropped (they repeat on
// every page and would only pollute chunks). pages is DocumentMetadata.Pages (0: from the blocks).
// Words below WordFloor are marked, and each page's confidence is its words' mean weighted by length.
// Block text is the document's, untrusted: it is only ever placed in markdown, never interpreted.
func Markdown(blocks []types.Block, pages int) (string, *extract.OCRReport, int) {
	d := newDoc(blocks)
	for p := range d.pages {
		pages = max(pages, p)
	}
	var b strings.Builder
	rep := &extract.OCRReport{}
	for p := 1; p <= pages; p++ {
		md, page := d.page(p)
		b.WriteString("\n" + extract.PageMarker(p) + "\n\n" + md + "\n")
		page.Langs = Langs
		addPage(rep, p, page)
	}
	return b.String(), rep, pages
}

// addPage is extract.OCRReport's running mean and low-page list.
func addPage(r *extract.OCRReport, page int, p extract.OCRPage) {
	n := float64(len(r.Pages))
	r.Pages = append(r.Pages, page)
	r.Confidence = (r.Confidence*n + p.Confidence) / (n + 1)
	r.LowWords += p.LowWords
	if p.Words > 0 && p.Confidence < extract.LowConfidence {
		r.LowPages = append(r.LowPages, page)
	}
	r.Langs = p.Langs
}

// doc indexes the blocks by id and by page.
type doc struct {
	byID  map[string]*types.Block
	pages map[int][]*types.Block // in the order received
}

func newDoc(blocks []types.Block) *doc {
	d := &doc{byID: make(map[string]*types.Block, len(blocks)), pages: map[int][]*types.Block{}}
	for i := range blocks {
		b := &blocks[i]
		if b.Id != nil {
			d.byID[*b.Id] = b
		}
		p := 1 // AnalyzeDocument of a single image may leave Page out
		if b.Page != nil && *b.Page > 0 {
			p = int(*b.Page)
		}
		d.pages[p] = append(d.pages[p], b)
	}
	return d
}

// related returns b's related blocks of one relationship type, in order; ids that name no block (a
// truncated or malformed response) are skipped.
func (d *doc) related(b *types.Block, typ types.RelationshipType) []*types.Block {
	var out []*types.Block
	for _, r := range b.Relationships {
		if r.Type != typ {
			continue
		}
		for _, id := range r.Ids {
			if c, ok := d.byID[id]; ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// words are b's WORD descendants through CHILD relationships (a LINE's, a CELL's, a layout block's
// through its lines), at most two levels down.
func (d *doc) words(b *types.Block) []*types.Block {
	var out []*types.Block
	for _, c := range d.related(b, types.RelationshipTypeChild) {
		switch c.BlockType {
		case types.BlockTypeWord:
			out = append(out, c)
		case types.BlockTypeLine:
			out = append(out, d.related(c, types.RelationshipTypeChild)...)
		}
	}
	return out
}

// text is the text of a block made of words: its words marked by confidence, joined as written (no
// space between two CJK characters); a block without word children (a LINE from a trimmed response)
// gives its own Text.
func (d *doc) text(b *types.Block) string {
	var parts []string
	for _, c := range d.related(b, types.RelationshipTypeChild) {
		switch c.BlockType {
		case types.BlockTypeWord:
			parts = append(parts, wordText(c))
		case types.BlockTypeLine, types.BlockTypeLayoutText, types.BlockTypeLayoutTitle, types.BlockTypeLayoutSectionHeader:
			parts = append(parts, d.text(c))
		}
	}
	if len(parts) == 0 && b.Text != nil {
		return clean(*b.Text)
	}
	return joinText(parts)
}

func wordText(w *types.Block) string {
	t := ""
	if w.Text != nil {
		t = clean(*w.Text)
	}
	if t != "" && w.Confidence != nil && *w.Confidence < WordFloor {
		return "[?" + t + "]"
	}
	return t
}

// clean folds whitespace and control characters to single spaces.
func clean(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
}

func joinText(parts []string) string {
	var b strings.Builder
	for _, p := range parts {
		if p == "" {
			continue
		}
		if b.Len() > 0 {
			last, _ := utf8.DecodeLastRuneInString(b.String())
			first, _ := utf8.DecodeRuneInString(p)
			if !(isCJK(last) && isCJK(first)) {
				b.WriteByte(' ')
			}
		}
		b.WriteString(p)
	}
	return b.String()
}

func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) || (r >= 0x3000 && r <= 0x303f) || (r >= 0xff00 && r <= 0xffef)
}

// page renders one page and measures its words.
func (d *doc) page(p int) (string, extract.OCRPage) {
	blocks := d.pages[p]
	var page extract.OCRPage
	var sum, weight float64
	for _, b := range blocks {
		if b.BlockType != types.BlockTypeWord || b.Text == nil || b.Confidence == nil {
			continue
		}
		n := float64(max(utf8.RuneCountInString(*b.Text), 1))
		sum += float64(*b.Confidence) * n
		weight += n
		page.Words++
		if *b.Confidence < WordFloor {
			page.LowWords++
		}
	}
	if weight > 0 {
		page.Confidence = sum / weight
	}
	tables := d.tables(blocks)
	var out []string
	if hasLayout(blocks) {
		out = d.layout(blocks, tables)
	} else {
		out = d.lines(blocks, tables)
	}
	page.Markdown = strings.Join(out, "\n\n")
	return page.Markdown, page
}

func hasLayout(blocks []*types.Block) bool {
	return slices.ContainsFunc(blocks, func(b *types.Block) bool { return strings.HasPrefix(string(b.BlockType), "LAYOUT_") })
}

// table is a TABLE block with the ids of its words, to find where it stands in the page's text.
type table struct {
	b     *types.Block
	words map[string]bool
	done  bool
}

func (d *doc) tables(blocks []*types.Block) []*table {
	var out []*table
	for _, b := range blocks {
		if b.BlockType != types.BlockTypeTable {
			continue
		}
		t := &table{b: b, words: map[string]bool{}}
		for _, c := range d.related(b, types.RelationshipTypeChild) {
			for _, w := range d.words(c) {
				if w.Id != nil {
					t.words[*w.Id] = true
				}
			}
		}
		out = append(out, t)
	}
	return out
}

// tableOf is the unrendered table holding most of words, or nil when none holds half of them.
func tableOf(tables []*table, words []*types.Block) *table {
	var best *table
	bestN := 0
	for _, t := range tables {
		n := 0
		for _, w := range words {
			if w.Id != nil && t.words[*w.Id] {
				n++
			}
		}
		if n > bestN {
			best, bestN = t, n
		}
	}
	if best == nil || bestN*2 < len(words) {
		return nil
	}
	return best
}

// layout renders the page's layout blocks in the order received (Textract's reading order). A
// LAYOUT_TABLE becomes the TABLE whose words it covers; a table no layout block stands for is added
// where its first line would be, or at the end of the page.
func (d *doc) layout(blocks []*types.Block, tables []*table) []string {
	inList := map[*types.Block]bool{}
	for _, b := range blocks {
		if b.BlockType == types.BlockTypeLayoutList {
			for _, c := range d.related(b, types.RelationshipTypeChild) {
				inList[c] = true
			}
		}
	}
	var out []string
	add := func(s string) {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	for _, b := range blocks {
		if inList[b] {
			continue
		}
		switch b.BlockType {
		case types.BlockTypeLayoutTitle:
			add(heading("# ", d.text(b)))
		case types.BlockTypeLayoutSectionHeader:
			add(heading("## ", d.text(b)))
		case types.BlockTypeLayoutHeader, types.BlockTypeLayoutFooter, types.BlockTypeLayoutPageNumber:
			// repeated on every page: dropped
		case types.BlockTypeLayoutList:
			var items []string
			for _, c := range d.related(b, types.RelationshipTypeChild) {
				if t := listItem(d.text(c)); t != "" {
					items = append(items, "- "+t)
				}
			}
			if len(items) == 0 {
				items = append(items, d.text(b))
			}
			add(strings.Join(items, "\n"))
		case types.BlockTypeLayoutTable:
			if t := tableOf(tables, d.words(b)); t != nil && !t.done {
				t.done = true
				add(d.renderTable(t.b))
			} else if t == nil {
				add(d.text(b))
			}
		case types.BlockTypeLayoutText, types.BlockTypeLayoutFigure, types.BlockTypeLayoutKeyValue:
			add(d.text(b))
		}
	}
	for _, t := range tables {
		if !t.done {
			add(d.renderTable(t.b))
		}
	}
	return out
}

// lines renders a page analysed without LAYOUT: each LINE a paragraph, a table in place of its lines.
func (d *doc) lines(blocks []*types.Block, tables []*table) []string {
	var out []string
	for _, b := range blocks {
		if b.BlockType != types.BlockTypeLine {
			continue
		}
		if ws := d.words(b); len(ws) > 0 {
			if t := tableOf(tables, ws); t != nil {
				if !t.done {
					t.done = true
					out = append(out, d.renderTable(t.b))
				}
				continue
			}
		}
		if s := d.text(b); s != "" {
			out = append(out, s)
		}
	}
	for _, t := range tables {
		if !t.done {
			out = append(out, d.renderTable(t.b))
		}
	}
	return out
}

func heading(mark, s string) string {
	if s == "" {
		return ""
	}
	return mark + strings.TrimLeft(s, "# ")
}

// listItem drops the bullet or number Textract keeps in a list item's text: the list marker is ours.
func listItem(s string) string {
	return strings.TrimSpace(strings.TrimLeft(s, "•·●○▪■-–*"))
}

// maxTableRows and maxTableCols bound a table's grid: a malformed response's indexes cannot make it huge.
const maxTableRows, maxTableCols = 10000, 500

// cellPos is a cell's row and column, 1-based.
type cellPos struct{ r, c int }

func i32(p *int32, def int) int {
	if p == nil || *p <= 0 {
		return def
	}
	return int(*p)
}

// renderTable writes a TABLE as a markdown table. A merged cell's text (the words of the cells it
// covers) is repeated in every row and column it spans, so each column says what it holds. The
// leading rows whose cells are COLUMN_HEADER make the header row (several are joined per column with
// " / "); without one, the first row is the header, as for tables read from PDF text. A TABLE_TITLE
// is a paragraph above the table, a TABLE_FOOTER one below.
func (d *doc) renderTable(tb *types.Block) string {
	grid := map[cellPos]string{}
	header := map[int]bool{} // rows holding a COLUMN_HEADER cell
	rows, cols := 0, 0
	place := func(b *types.Block, text string, isHeader, merged bool) {
		r, c := i32(b.RowIndex, 0), i32(b.ColumnIndex, 0)
		if r == 0 || c == 0 || r > maxTableRows || c > maxTableCols {
			return // a cell without a (sane) position: nowhere to put it
		}
		rs, cs := i32(b.RowSpan, 1), i32(b.ColumnSpan, 1)
		if merged { // a merged cell covers cells: it cannot reach past them (a malformed span)
			rs, cs = max(min(rs, rows-r+1), 1), max(min(cs, cols-c+1), 1)
		} else {
			rs, cs = min(rs, maxTableRows-r+1), min(cs, maxTableCols-c+1)
		}
		for i := r; i < r+rs; i++ {
			for j := c; j < c+cs; j++ {
				grid[cellPos{i, j}] = text
				if isHeader {
					header[i] = true
				}
			}
		}
		rows, cols = max(rows, r+rs-1), max(cols, c+cs-1)
	}
	for _, c := range d.related(tb, types.RelationshipTypeChild) {
		if c.BlockType == types.BlockTypeCell {
			place(c, d.text(c), isColumnHeader(c), false)
		}
	}
	for _, m := range d.related(tb, types.RelationshipTypeMergedCell) {
		cells := d.related(m, types.RelationshipTypeChild)
		if len(cells) == 0 {
			continue // covers nothing we have: its span alone would blank real cells
		}
		sort.SliceStable(cells, func(i, j int) bool {
			a, b := cells[i], cells[j]
			if i32(a.RowIndex, 0) != i32(b.RowIndex, 0) {
				return i32(a.RowIndex, 0) < i32(b.RowIndex, 0)
			}
			return i32(a.ColumnIndex, 0) < i32(b.ColumnIndex, 0)
		})
		var parts []string
		hdr := isColumnHeader(m)
		for _, c := range cells {
			parts = append(parts, d.text(c))
			hdr = hdr || isColumnHeader(c)
		}
		place(m, joinText(parts), hdr, true)
	}
	if rows == 0 || cols == 0 {
		return ""
	}
	nh := 0
	for header[nh+1] && nh+1 < rows {
		nh++
	}
	row := func(r int) []string {
		out := make([]string, cols)
		for c := 1; c <= cols; c++ {
			out[c-1] = grid[cellPos{r, c}]
		}
		return out
	}
	head := row(1)
	body := 2
	if nh > 1 {
		for c := range head {
			var parts []string
			for r := 1; r <= nh; r++ {
				if v := grid[cellPos{r, c + 1}]; v != "" && (len(parts) == 0 || parts[len(parts)-1] != v) {
					parts = append(parts, v)
				}
			}
			head[c] = strings.Join(parts, " / ")
		}
		body = nh + 1
	}
	var b strings.Builder
	for _, t := range d.related(tb, types.RelationshipTypeTableTitle) {
		if s := d.text(t); s != "" {
			b.WriteString(s + "\n\n")
		}
	}
	writeRow(&b, head)
	b.WriteString(strings.Repeat("| --- ", cols) + "|\n")
	for r := body; r <= rows; r++ {
		writeRow(&b, row(r))
	}
	s := strings.TrimSuffix(b.String(), "\n")
	for _, t := range d.related(tb, types.RelationshipTypeTableFooter) {
		if f := d.text(t); f != "" {
			s += "\n\n" + f
		}
	}
	return s
}

func isColumnHeader(b *types.Block) bool {
	return slices.Contains(b.EntityTypes, types.EntityTypeColumnHeader)
}

func writeRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		fmt.Fprintf(b, " %s |", strings.ReplaceAll(c, "|", `\|`))
	}
	b.WriteString("\n")
}
