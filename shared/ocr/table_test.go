package ocr_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-pdf/fpdf"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ocr"
	"github.com/docmind/docmind/shared/ocr/ocrtest"
)

var (
	cellWords = []string{"North", "South", "East", "West", "Central", "Premium", "Basic", "Refund", "Uptime", "Invoice", "Storage", "Support"}
	heads     = []string{"Region", "Plan", "Owner", "Item", "Category", "Status"}
)

// tableScan draws a paragraph, a table (ruled or not) and a paragraph with fpdf, and renders the page
// at 300 dpi in grey with Ghostscript: a scan of a printed table, with the cells it holds.
func tableScan(t *testing.T, dir string, r *rand.Rand, ruled bool, n int) (string, [][]string) {
	cols, rows := 3+r.IntN(2), 3+r.IntN(4)
	want := [][]string{make([]string, cols)}
	want[0][0] = heads[r.IntN(len(heads))]
	for c := 1; c < cols; c++ {
		want[0][c] = fmt.Sprintf("Year %d", 2020+c)
	}
	for range rows {
		row := make([]string, cols)
		row[0] = cellWords[r.IntN(len(cellWords))]
		for c := 1; c < cols; c++ {
			if r.IntN(2) == 0 {
				row[c] = fmt.Sprint(r.IntN(9000) + 100)
			} else {
				row[c] = fmt.Sprintf("%d.%d%%", r.IntN(90)+10, r.IntN(10))
			}
		}
		want = append(want, row)
	}
	pdf := fpdf.New("P", "mm", "A4", "")
	pdf.SetMargins(20, 20, 20)
	pdf.AddPage()
	pdf.SetFont("Helvetica", "", 12)
	pdf.MultiCell(170, 6, "The figures below are the generated table of this test; this paragraph stays text.", "", "L", false)
	pdf.Ln(6)
	border := ""
	if ruled {
		border = "1"
	}
	for _, row := range want {
		for c, s := range row {
			pdf.CellFormat([]float64{40, 32, 32, 32}[c], 9, s, border, 0, "L", false, 0, "")
		}
		pdf.Ln(-1)
	}
	pdf.Ln(6)
	pdf.MultiCell(170, 6, "After the table, a closing paragraph says who approved the figures.", "", "L", false)
	in := filepath.Join(dir, fmt.Sprintf("table-%d.pdf", n))
	if err := pdf.OutputFileAndClose(in); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, fmt.Sprintf("table-%d.png", n))
	ocrtest.Run(t, "gs", "-q", "-dSAFER", "-sDEVICE=pnggray", "-r300", "-o", out, in)
	return out, want
}

// markdownTables reads the markdown tables of md: rows of cells, the delimiter row left out.
func markdownTables(md string) [][][]string {
	var out [][][]string
	var cur [][]string
	for _, l := range strings.Split(md+"\n", "\n") {
		if !strings.HasPrefix(l, "|") {
			if cur != nil {
				out, cur = append(out, cur), nil
			}
			continue
		}
		if strings.HasPrefix(l, "| ---") {
			continue
		}
		var row []string
		for _, c := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|"), "|") {
			row = append(row, strings.TrimSpace(c))
		}
		cur = append(cur, row)
	}
	return out
}

// Scanned tables become markdown tables: cells found from Tesseract's word boxes by column alignment,
// ruling left out, the paragraphs around kept as text in order. Cell accuracy over generated scans,
// ruled and unruled (printed in docs/ocr.md).
func TestOCRTableCells(t *testing.T) {
	ocrtest.Need(t, true)
	e, err := ocr.New("eng")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(21, 4))
	for _, ruled := range []bool{false, true} {
		exact, total := 0, 0
		for n := range 4 {
			path, want := tableScan(t, dir, r, ruled, n+boolInt(ruled)*10)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := extract.Extract(context.Background(), filepath.Base(path), b, extract.Limits{OCR: e})
			if err != nil {
				t.Fatal(err)
			}
			md := res.Markdown
			before, after := strings.Index(md, "stays text"), strings.Index(md, "closing paragraph")
			tables := markdownTables(md)
			if before < 0 || after < 0 || len(tables) != 1 || !(before < strings.Index(md, "|") && strings.LastIndex(md, "|") < after) {
				t.Errorf("ruled %v, table %d: want one table between the two paragraphs, got %d tables in\n%s", ruled, n, len(tables), md)
				total += len(want) * len(want[0])
				continue
			}
			got := tables[0]
			for i, row := range want {
				for c, cell := range row {
					total++
					if i < len(got) && c < len(got[i]) && got[i][c] == cell {
						exact++
					} else if testing.Verbose() {
						g := "(missing)"
						if i < len(got) && c < len(got[i]) {
							g = got[i][c]
						}
						t.Logf("ruled %v table %d cell %d,%d: want %q got %q", ruled, n, i, c, cell, g)
					}
				}
			}
		}
		acc := float64(exact) / float64(total)
		t.Logf("ruled %v: %d of %d cells exact (%.1f%%)", ruled, exact, total, 100*acc)
		if acc < 0.95 {
			t.Errorf("ruled %v: cell accuracy %.1f%%, want at least 95%%", ruled, 100*acc)
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
