package extract

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/extract/ooxmltest"
	"github.com/docmind/docmind/shared/rag"
)

// checkParse is the invariant of every parser fuzz target: Extract returns valid UTF-8 markdown or a
// Terminal error, never a panic, never another kind, within the deadline.
func checkParse(t *testing.T, name string, data []byte) {
	res, err := Extract(context.Background(), name, data, Limits{Timeout: 20 * time.Second, MaxEntryBytes: 8 << 20, MaxTotalBytes: 32 << 20})
	if err != nil {
		if !rag.Is(err, rag.KindTerminal) {
			t.Fatalf("%s: error kind %v: %v", name, rag.KindOf(err), err)
		}
		return
	}
	if !utf8.ValidString(res.Markdown) {
		t.Fatalf("%s: invalid UTF-8 output", name)
	}
}

func seed(f *testing.F, name string) {
	if b, err := os.ReadFile(filepath.Join(corpusDir, name)); err == nil {
		f.Add(b)
	}
}

func FuzzParseDOCX(f *testing.F) {
	seed(f, "employee-handbook.docx")
	f.Add(ooxmltest.DOCX(ooxmltest.P("Heading1", ooxmltest.R("t")) + ooxmltest.P("", ooxmltest.Hidden("h"))))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, "f.docx", data) })
}

func FuzzParseXLSX(f *testing.F) {
	seed(f, "sales-figures.xlsx")
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, "f.xlsx", data) })
}

func FuzzParsePPTX(f *testing.F) {
	seed(f, "product-overview.pptx")
	f.Add(ooxmltest.PPTX([]ooxmltest.Slide{{Title: "a", Body: []string{"b"}, Table: [][]string{{"c"}}}}))
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, "f.pptx", data) })
}

func FuzzParsePDF(f *testing.F) {
	seed(f, "服务协议.pdf")
	f.Add([]byte("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF"))
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, "f.pdf", data) })
}

func FuzzExtractHTML(f *testing.F) {
	seed(f, "faq.html")
	f.Add([]byte("<table><tr><td><table><tr><td>x</td></tr></table></td></tr></table>"))
	f.Add([]byte("<div style='display:none'>a</div><p>b</p><!--c-->"))
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, "f.html", data) })
}

func FuzzCSV(f *testing.F) {
	seed(f, "price-list.csv")
	f.Add([]byte("a,\"b\nc\",d\n1,2"))
	f.Fuzz(func(t *testing.T, data []byte) { checkParse(t, "f.csv", data) })
}
