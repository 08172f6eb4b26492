package extract

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/extract/extracttest"
	"github.com/docmind/docmind/shared/extract/ooxmltest"
)

// DOCX core properties and the PDF Info dictionary become Result.Properties: dates in RFC 3339 UTC,
// keywords comma-separated, blank values left out; a file without them has none.
func TestDocumentProperties(t *testing.T) {
	core := `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<dc:title>Travel policy 2025</dc:title><dc:creator>Ann  Lee</dc:creator><cp:keywords>travel; expenses</cp:keywords>
<dc:subject>   </dc:subject>
<dcterms:created xsi:type="dcterms:W3CDTF">2025-01-02T09:30:00+01:00</dcterms:created>
<dcterms:modified xsi:type="dcterms:W3CDTF">2025-03-04T10:00:00Z</dcterms:modified></cp:coreProperties>`
	body := ooxmltest.P("", ooxmltest.R("Economy class for flights under six hours."))
	ctx := context.Background()
	for _, c := range []struct {
		name string
		data []byte
		want map[string]string
	}{
		{"policy.docx", ooxmltest.DOCXWithParts(body, [2]string{"docProps/core.xml", core}), map[string]string{
			"title": "Travel policy 2025", "author": "Ann Lee", "keywords": "travel, expenses",
			"created": "2025-01-02T08:30:00Z", "modified": "2025-03-04T10:00:00Z"}},
		{"plain.docx", ooxmltest.DOCX(body), nil},
		{"policy.pdf", extracttest.PDFWithInfo([]string{"Economy class for flights under six hours."}, map[string]string{
			"Title": "Travel policy 2025", "Author": "Ann Lee", "Keywords": "travel, expenses",
			"CreationDate": "D:20250102093000+01'00'", "ModDate": "D:20250304"}), map[string]string{
			"title": "Travel policy 2025", "author": "Ann Lee", "keywords": "travel, expenses",
			"created": "2025-01-02T08:30:00Z", "modified": "2025-03-04T00:00:00Z"}},
		{"plain.pdf", extracttest.PDF([]string{"Economy class for flights under six hours."}), nil},
	} {
		res, err := Extract(ctx, c.name, c.data, Limits{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !maps.Equal(res.Properties, c.want) {
			t.Errorf("%s: properties %v; want %v", c.name, res.Properties, c.want)
		}
	}
}

func TestPDFDate(t *testing.T) {
	for in, want := range map[string]string{
		"D:20250102093000+01'00'": "2025-01-02T08:30:00Z",
		"D:20250102093000Z":       "2025-01-02T09:30:00Z",
		"D:2025":                  "2025-01-01T00:00:00Z",
		"20250304101500-05'30":    "2025-03-04T15:45:00Z",
	} {
		got, ok := PDFDate(in)
		if !ok || got.UTC().Format(time.RFC3339) != want {
			t.Errorf("PDFDate(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "yesterday", "D:20251301", "D:2025-01-01"} {
		if _, ok := PDFDate(bad); ok {
			t.Errorf("PDFDate(%q) accepted", bad)
		}
	}
}
