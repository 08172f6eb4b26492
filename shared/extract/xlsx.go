package extract

import (
	"context"
	"strconv"
	"strings"
)

// parseXLSX turns every visible sheet into "## sheet name" and markdown tables (first row as header,
// 20 rows per table). Hidden sheets are skipped and counted.
func parseXLSX(ctx context.Context, data []byte, l Limits) (Result, error) {
	a, err := openArchive(data, l)
	if err != nil {
		return Result{}, err
	}
	wb, err := a.xml(ctx, "xl/workbook.xml")
	if err != nil {
		return Result{}, err
	}
	if wb == nil {
		return Result{}, missingPart("Excel", "xl/workbook.xml")
	}
	rels, err := a.rels(ctx, "xl/workbook.xml")
	if err != nil {
		return Result{}, err
	}
	var shared []string
	if ss, err := a.xml(ctx, "xl/sharedStrings.xml"); err != nil {
		return Result{}, err
	} else if ss != nil {
		for _, si := range ss.child("sst").kids {
			if si.name != "si" {
				continue
			}
			var b strings.Builder
			si.each(func(n *node) bool {
				if n.name == "t" {
					b.WriteString(n.text.String())
				}
				return n.name != "rPh" // phonetic hints are not cell text
			})
			shared = append(shared, b.String())
		}
	}
	var out strings.Builder
	res := Result{}
	for _, sh := range wb.child("workbook").child("sheets").kids {
		if sh.name != "sheet" {
			continue
		}
		name := sh.attr("name")
		if st := sh.attr("state"); st == "hidden" || st == "veryHidden" {
			res.Hidden++
			continue
		}
		target := rels[sh.attr("id")]
		ws, err := a.xml(ctx, target)
		if err != nil {
			return Result{}, err
		}
		if ws == nil {
			continue
		}
		rows := sheetRows(ws, shared)
		if len(rows) == 0 {
			continue
		}
		out.WriteString("## " + name + "\n\n" + tables(rows, tableRows) + "\n")
	}
	res.Markdown = out.String()
	return res, nil
}

func sheetRows(ws *node, shared []string) [][]string {
	var rows [][]string
	data := ws.child("worksheet").child("sheetData")
	if data == nil {
		return nil
	}
	for _, r := range data.kids {
		if r.name != "row" || r.attr("hidden") == "1" {
			continue
		}
		var row []string
		for _, c := range r.kids {
			if c.name != "c" {
				continue
			}
			col := colIndex(c.attr("r"))
			if col < 0 {
				col = len(row)
			}
			if col > 1000 {
				continue // a stray far-right cell would make every row 1000 columns wide
			}
			for len(row) <= col {
				row = append(row, "")
			}
			v := c.child("v")
			val := ""
			if v != nil {
				val = v.text.String()
			}
			switch c.attr("t") {
			case "s":
				if i, err := strconv.Atoi(val); err == nil && i >= 0 && i < len(shared) {
					val = shared[i]
				}
			case "inlineStr":
				var b strings.Builder
				c.each(func(n *node) bool {
					if n.name == "t" {
						b.WriteString(n.text.String())
					}
					return true
				})
				val = b.String()
			case "b":
				val = map[string]string{"1": "TRUE", "0": "FALSE"}[val]
			}
			row[col] = val
		}
		for len(row) > 0 && row[len(row)-1] == "" {
			row = row[:len(row)-1]
		}
		if len(row) > 0 {
			rows = append(rows, row)
		}
	}
	return rows
}

// colIndex turns "C12" into 2; -1 when the reference has no column letters.
func colIndex(ref string) int {
	n := 0
	i := 0
	for ; i < len(ref) && ref[i] >= 'A' && ref[i] <= 'Z'; i++ {
		n = n*26 + int(ref[i]-'A'+1)
		if n > 20000 {
			return -1
		}
	}
	if i == 0 {
		return -1
	}
	return n - 1
}
