package ingest

import (
	"context"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// pageOCR is an OCR engine that reads every image as the same two pages, the second poorly.
type pageOCR struct{}

func (pageOCR) Recognize(context.Context, []byte, string) ([]extract.OCRPage, error) {
	return []extract.OCRPage{
		{Markdown: "# Leave policy\n\nEmployees may carry over five vacation days.", Confidence: 93, Words: 9, Langs: "eng"},
		{Markdown: "Sick leave is [?recorded] separately.", Confidence: 55, Words: 5, LowWords: 1, Langs: "eng"},
	}, nil
}

// A scanned image is ingested through OCR and the document row says what OCR did, with the page of
// low confidence (issue 21).
func TestIngestImageRecordsOCRNote(t *testing.T) {
	e := newEnv(t)
	e.svc.Runner.Stages.Limits.OCR = pageOCR{}
	ctx := context.Background()
	png := []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 64))
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "hr", URI: "inbox/hr/leave.png", Name: "leave.png", Data: png})
	if err != nil || rep.Status != rag.StatusReady {
		t.Fatalf("ingest: %+v, %v", rep, err)
	}
	doc, err := e.db.GetDocument(ctx, tenant, rep.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	if want := "OCR (eng) on 2 page(s), mean confidence 74%; low confidence on page(s) 2: check the scan"; doc.OCRNote != want {
		t.Errorf("OCR note %q, want %q", doc.OCRNote, want)
	}
	cs, err := e.db.ListChunks(ctx, tenant, rep.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, c := range cs {
		all.WriteString(c.Content)
	}
	if !strings.Contains(all.String(), "carry over five vacation days") || !strings.Contains(all.String(), "[?recorded]") {
		t.Errorf("chunks do not hold both recognised pages:\n%s", all.String())
	}
}
