package extract

import (
	"context"
	"fmt"
	"strings"
)

// parsePPTX reads the slides in presentation order: each slide's title placeholder becomes a "##"
// heading (or "Slide N"), its other text paragraphs and its tables follow. Hidden slides are skipped.
func parsePPTX(ctx context.Context, data []byte, l Limits) (Result, error) {
	a, err := openArchive(data, l)
	if err != nil {
		return Result{}, err
	}
	pres, err := a.xml(ctx, "ppt/presentation.xml")
	if err != nil {
		return Result{}, err
	}
	if pres == nil {
		return Result{}, missingPart("PowerPoint", "ppt/presentation.xml")
	}
	rels, err := a.rels(ctx, "ppt/presentation.xml")
	if err != nil {
		return Result{}, err
	}
	var out strings.Builder
	res := Result{}
	n := 0
	for _, sid := range pres.child("presentation").child("sldIdLst").kids {
		if sid.name != "sldId" {
			continue
		}
		n++
		slide, err := a.xml(ctx, rels[sid.attr("id")])
		if err != nil {
			return Result{}, err
		}
		if slide == nil {
			continue
		}
		sld := slide.child("sld")
		if sld.attr("show") == "0" {
			res.Hidden++
			continue
		}
		title, body := slideText(sld)
		if title == "" {
			title = fmt.Sprintf("Slide %d", n)
		}
		if res.Title == "" {
			res.Title = title
		}
		out.WriteString("## " + title + "\n\n" + body + "\n")
	}
	res.Markdown = out.String()
	return res, nil
}

func slideText(sld *node) (title, body string) {
	var b strings.Builder
	sld.each(func(n *node) bool {
		switch n.name {
		case "sp":
			ph := n.child("nvSpPr").child("nvPr").child("ph")
			isTitle := ph != nil && (ph.attr("type") == "title" || ph.attr("type") == "ctrTitle")
			for _, para := range paragraphs(n.child("txBody")) {
				if isTitle && title == "" {
					title = para
					continue
				}
				b.WriteString(para + "\n\n")
			}
			return false
		case "tbl":
			var rows [][]string
			for _, tr := range n.kids {
				if tr.name != "tr" {
					continue
				}
				var row []string
				for _, tc := range tr.kids {
					if tc.name == "tc" {
						row = append(row, strings.Join(paragraphs(tc.child("txBody")), " "))
					}
				}
				rows = append(rows, row)
			}
			if len(rows) > 0 {
				b.WriteString(tables(rows, tableRows) + "\n")
			}
			return false
		}
		return true
	})
	return strings.Join(strings.Fields(title), " "), b.String()
}

// paragraphs returns the non-empty text paragraphs (a:p) of a text body.
func paragraphs(txBody *node) []string {
	if txBody == nil {
		return nil
	}
	var out []string
	for _, p := range txBody.kids {
		if p.name != "p" {
			continue
		}
		var b strings.Builder
		p.each(func(n *node) bool {
			switch n.name {
			case "t":
				b.WriteString(n.text.String())
			case "br":
				b.WriteString(" ")
			}
			return true
		})
		if s := strings.TrimSpace(b.String()); s != "" {
			out = append(out, s)
		}
	}
	return out
}
