package textracttest

import (
	"fmt"
	"strings"
)

// Builder makes the blocks of a document page by page, the way Textract lays them out: a PAGE block
// whose CHILD relationship lists the page's LINE and layout blocks, LINE blocks with WORD children,
// layout blocks (LAYOUT_TITLE, LAYOUT_TEXT, ...) whose children are LINE blocks (LAYOUT_LIST: LAYOUT_TEXT
// blocks), and TABLE blocks whose children are CELL blocks holding WORD blocks.
type Builder struct {
	Blocks []Block
	n      int
	page   int
	pageAt int // index of the current PAGE block
}

func (b *Builder) id() string {
	b.n++
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", b.n, b.n)
}

func (b *Builder) add(bl Block) string {
	bl.Id = b.id()
	bl.Page = b.page
	b.Blocks = append(b.Blocks, bl)
	return bl.Id
}

func (b *Builder) child(ids ...string) {
	p := &b.Blocks[b.pageAt]
	if len(p.Relationships) == 0 {
		p.Relationships = []Relationship{{Type: "CHILD"}}
	}
	p.Relationships[0].Ids = append(p.Relationships[0].Ids, ids...)
}

// Page starts page n.
func (b *Builder) Page(n int) {
	b.page = n
	b.add(Block{BlockType: "PAGE", Geometry: map[string]any{"BoundingBox": map[string]any{"Width": 1, "Height": 1, "Left": 0, "Top": 0}}})
	b.pageAt = len(b.Blocks) - 1
}

// words adds a WORD block per word of text, all with confidence conf.
func (b *Builder) words(text string, conf float64) []string {
	var ids []string
	for _, w := range strings.Fields(text) {
		ids = append(ids, b.add(Block{BlockType: "WORD", Text: w, Confidence: conf, TextType: "PRINTED"}))
	}
	return ids
}

// Line adds a LINE (and its words) and returns its id.
func (b *Builder) Line(text string, conf float64) string {
	ws := b.words(text, conf)
	id := b.add(Block{BlockType: "LINE", Text: text, Confidence: conf, Relationships: []Relationship{{Type: "CHILD", Ids: ws}}})
	b.child(id)
	return id
}

// Layout adds a layout block of type typ (LAYOUT_TITLE, LAYOUT_TEXT, ...) over one LINE per line.
func (b *Builder) Layout(typ string, conf float64, lines ...string) string {
	var ids []string
	for _, l := range lines {
		ids = append(ids, b.Line(l, conf))
	}
	id := b.add(Block{BlockType: typ, Confidence: conf, Relationships: []Relationship{{Type: "CHILD", Ids: ids}}})
	b.child(id)
	return id
}

// List adds a LAYOUT_LIST whose items are LAYOUT_TEXT blocks of one line each.
func (b *Builder) List(conf float64, items ...string) string {
	var ids []string
	for _, it := range items {
		lid := b.Line(it, conf)
		ids = append(ids, b.add(Block{BlockType: "LAYOUT_TEXT", Confidence: conf, Relationships: []Relationship{{Type: "CHILD", Ids: []string{lid}}}}))
	}
	id := b.add(Block{BlockType: "LAYOUT_LIST", Confidence: conf, Relationships: []Relationship{{Type: "CHILD", Ids: ids}}})
	b.child(id)
	return id
}

// Merge is a merged cell: its top-left cell and its spans (1-based).
type Merge struct{ Row, Col, RowSpan, ColSpan int }

// Table adds a TABLE of rows (an empty string: an empty cell), its first headerRows rows
// COLUMN_HEADER cells, merged cells as MERGED_CELL blocks over the cells they cover (the merged
// text sits in the top-left cell, as Textract assigns a word to the cell it falls in), an optional
// TABLE_TITLE, and a LAYOUT_TABLE over one LINE per non-empty cell.
func (b *Builder) Table(rows [][]string, headerRows int, title string, merges ...Merge) string {
	var lines, cells []string
	at := map[[2]int]string{}
	for r, row := range rows {
		for c, text := range row {
			rel := []Relationship(nil)
			if text != "" {
				ws := b.words(text, 99)
				lines = append(lines, b.add(Block{BlockType: "LINE", Text: text, Confidence: 99, Relationships: []Relationship{{Type: "CHILD", Ids: ws}}}))
				rel = []Relationship{{Type: "CHILD", Ids: ws}}
			}
			var ent []string
			if r < headerRows {
				ent = []string{"COLUMN_HEADER"}
			}
			id := b.add(Block{BlockType: "CELL", Confidence: 95, RowIndex: r + 1, ColumnIndex: c + 1, RowSpan: 1, ColumnSpan: 1, EntityTypes: ent, Relationships: rel})
			cells = append(cells, id)
			at[[2]int{r + 1, c + 1}] = id
		}
	}
	rels := []Relationship{{Type: "CHILD", Ids: cells}}
	var merged []string
	for _, m := range merges {
		var ids []string
		for r := m.Row; r < m.Row+m.RowSpan; r++ {
			for c := m.Col; c < m.Col+m.ColSpan; c++ {
				ids = append(ids, at[[2]int{r, c}])
			}
		}
		var ent []string
		if m.Row <= headerRows {
			ent = []string{"COLUMN_HEADER"}
		}
		merged = append(merged, b.add(Block{BlockType: "MERGED_CELL", Confidence: 90, RowIndex: m.Row, ColumnIndex: m.Col, RowSpan: m.RowSpan,
			ColumnSpan: m.ColSpan, EntityTypes: ent, Relationships: []Relationship{{Type: "CHILD", Ids: ids}}}))
	}
	if len(merged) > 0 {
		rels = append(rels, Relationship{Type: "MERGED_CELL", Ids: merged})
	}
	if title != "" {
		ws := b.words(title, 98)
		lines = append([]string{b.add(Block{BlockType: "LINE", Text: title, Confidence: 98, Relationships: []Relationship{{Type: "CHILD", Ids: ws}}})}, lines...)
		tid := b.add(Block{BlockType: "TABLE_TITLE", Confidence: 90, Relationships: []Relationship{{Type: "CHILD", Ids: ws}}})
		rels = append(rels, Relationship{Type: "TABLE_TITLE", Ids: []string{tid}})
	}
	b.child(lines...)
	id := b.add(Block{BlockType: "TABLE", Confidence: 97, EntityTypes: []string{"STRUCTURED_TABLE"}, Relationships: rels})
	b.child(id)
	lt := b.add(Block{BlockType: "LAYOUT_TABLE", Confidence: 90, Relationships: []Relationship{{Type: "CHILD", Ids: lines}}})
	b.child(lt)
	return id
}
