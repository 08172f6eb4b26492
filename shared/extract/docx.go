package extract

import (
	"context"
	"regexp"
	"strconv"
	"strings"
)

var headingStyle = regexp.MustCompile(`(?i)^(heading|标题)\s*([1-9])$`)

type docxStyle struct {
	level int  // heading level, 0 for body text
	list  bool // a list paragraph style
}

// parseDOCX reads word/document.xml: headings from paragraph styles (or outline levels), lists, tables
// (first row as header), with hidden runs (vanish, 1 pt or smaller, white text) stripped and counted.
func parseDOCX(ctx context.Context, data []byte, l Limits) (Result, error) {
	a, err := openArchive(data, l)
	if err != nil {
		return Result{}, err
	}
	styles := map[string]docxStyle{}
	if st, err := a.xml(ctx, "word/styles.xml"); err != nil {
		return Result{}, err
	} else if st != nil {
		st.each(func(n *node) bool {
			if n.name != "style" {
				return true
			}
			var s docxStyle
			name := n.child("name").attr("val")
			if m := headingStyle.FindStringSubmatch(strings.TrimSpace(name)); m != nil {
				s.level, _ = strconv.Atoi(m[2])
			} else if strings.EqualFold(name, "Title") {
				s.level = 1
			}
			if lvl := n.child("pPr").child("outlineLvl"); lvl != nil && s.level == 0 {
				if v, err := strconv.Atoi(lvl.attr("val")); err == nil && v < 9 {
					s.level = v + 1
				}
			}
			s.list = strings.Contains(strings.ToLower(name), "list")
			styles[n.attr("styleId")] = s
			return false
		})
	}
	doc, err := a.xml(ctx, "word/document.xml")
	if err != nil {
		return Result{}, err
	}
	if doc == nil {
		return Result{}, missingPart("Word", "word/document.xml")
	}
	body := doc.child("document").child("body")
	if body == nil {
		return Result{}, missingPart("Word", "the document body")
	}
	w := &docxWriter{styles: styles}
	w.blocks(body)
	props, err := docxProperties(ctx, a)
	if err != nil { // damaged properties lose the properties, not the document
		props = nil
	}
	return Result{Markdown: w.b.String(), Title: w.title, Hidden: w.hidden, Properties: props}, nil
}

type docxWriter struct {
	styles map[string]docxStyle
	b      strings.Builder
	title  string
	hidden int
}

func (w *docxWriter) blocks(parent *node) {
	for _, n := range parent.kids {
		switch n.name {
		case "p":
			w.paragraph(n)
		case "tbl":
			w.table(n)
		case "sdt": // content control: its content is ordinary blocks
			if c := n.child("sdtContent"); c != nil {
				w.blocks(c)
			}
		}
	}
}

func (w *docxWriter) paragraph(p *node) {
	text := strings.TrimSpace(w.runs(p))
	if text == "" {
		return
	}
	pPr := p.child("pPr")
	st := w.styles[pPr.child("pStyle").attr("val")]
	level := st.level
	if lvl := pPr.child("outlineLvl"); lvl != nil && level == 0 {
		if v, err := strconv.Atoi(lvl.attr("val")); err == nil && v < 9 {
			level = v + 1
		}
	}
	switch {
	case level > 0:
		text = strings.Join(strings.Fields(text), " ")
		if w.title == "" {
			w.title = text
		}
		w.b.WriteString("\n" + strings.Repeat("#", min(level, 6)) + " " + text + "\n\n")
	case pPr.child("numPr") != nil || st.list:
		w.b.WriteString("- " + text + "\n")
	default:
		w.b.WriteString(text + "\n\n")
	}
}

// hiddenRun reports runs a reader would not see.
func hiddenRun(rPr *node) bool {
	if rPr == nil {
		return false
	}
	if v := rPr.child("vanish"); v != nil && v.attr("val") != "0" && v.attr("val") != "false" {
		return true
	}
	if rPr.child("specVanish") != nil || rPr.child("webHidden") != nil {
		return true
	}
	if sz := rPr.child("sz"); sz != nil {
		if v, err := strconv.Atoi(sz.attr("val")); err == nil && v <= 2 { // half-points: 1 pt or less
			return true
		}
	}
	if c := rPr.child("color"); c != nil && strings.EqualFold(c.attr("val"), "FFFFFF") && rPr.child("highlight") == nil && rPr.child("shd") == nil {
		return true
	}
	return false
}

// runs concatenates the visible text of a paragraph (runs, hyperlinks, insertions; not deletions).
func (w *docxWriter) runs(p *node) string {
	var b strings.Builder
	var walk func(n *node)
	walk = func(n *node) {
		for _, k := range n.kids {
			switch k.name {
			case "r":
				if hiddenRun(k.child("rPr")) {
					k.each(func(t *node) bool {
						if t.name == "t" {
							w.hidden += len([]rune(t.text.String()))
						}
						return true
					})
					continue
				}
				for _, t := range k.kids {
					switch t.name {
					case "t":
						b.WriteString(t.text.String())
					case "tab":
						b.WriteString("\t")
					case "br", "cr":
						b.WriteString(" ")
					}
				}
			case "del", "pPr", "rPr":
				// deleted revisions and properties carry no visible text
			default:
				walk(k) // hyperlink, ins, smartTag, fldSimple ...
			}
		}
	}
	walk(p)
	return b.String()
}

func (w *docxWriter) table(t *node) {
	var rows [][]string
	for _, tr := range t.kids {
		if tr.name != "tr" {
			continue
		}
		var row []string
		for _, tc := range tr.kids {
			if tc.name != "tc" {
				continue
			}
			var parts []string
			tc.each(func(n *node) bool {
				if n.name == "p" {
					if s := strings.TrimSpace(w.runs(n)); s != "" {
						parts = append(parts, s)
					}
					return false
				}
				return true
			})
			row = append(row, strings.Join(parts, " "))
		}
		if len(row) > 0 {
			rows = append(rows, row)
		}
	}
	if len(rows) > 0 {
		w.b.WriteString("\n" + tables(rows, tableRows) + "\n")
	}
}
