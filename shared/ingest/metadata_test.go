package ingest

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/extract/extracttest"
	"github.com/docmind/docmind/shared/extract/ooxmltest"
	"github.com/docmind/docmind/shared/rag"
)

// Front matter becomes the document's metadata, through the single-document path and the batch path
// (over the derived fields: "source: wiki" wins over the derived "file"); a new version without it
// clears it, leaving the derived fields.
func TestFrontMatterBecomesMetadata(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	md := "---\ntitle: Leave policy\nyear: 2025\nversion: 1.10\neffective_date: 2025年3月1日\ntags: [hr, policy]\nOwner Name: x\n---\n# Leave\n\nStaff get 25 days.\n"
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "inbox/kb/leave.md", Name: "leave.md", Data: []byte(md)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.db.GetDocumentMetadata(ctx, tenant, rep.DocumentID)
	if err != nil || m["title"] != "Leave policy" || m["year"] != 2025.0 || m["version"] != "1.10" || m["effective_date"] != "2025-03-01" ||
		!slices.Equal(m["tags"].([]string), []string{"hr", "policy"}) {
		t.Fatalf("metadata = %v, %v; want the front matter (year a number, version text, the date normalised, tags a list)", m, err)
	}
	if _, ok := m["owner name"]; ok {
		t.Errorf("a key a filter cannot name was kept: %v", m)
	}
	reps := e.svc.IngestBatch(ctx, tenant, []Source{{KBName: "kb", URI: "inbox/kb/b.md", Name: "b.md", Data: []byte("---\nsource: wiki\n---\n# B\n\nText.\n")}})
	if reps[0].Error != "" {
		t.Fatal(reps[0].Error)
	}
	if m, _ := e.db.GetDocumentMetadata(ctx, tenant, reps[0].DocumentID); m["source"] != "wiki" {
		t.Fatalf("batch path metadata = %v; want source wiki", m)
	}
	if _, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "inbox/kb/leave.md", Name: "leave.md", Data: []byte("# Leave\n\nStaff get 26 days.\n")}); err != nil {
		t.Fatal(err)
	}
	if m, _ := e.db.GetDocumentMetadata(ctx, tenant, rep.DocumentID); m["title"] != nil || m["year"] != nil || m["tags"] != nil || m["source"] != "file" {
		t.Fatalf("metadata after a version without front matter = %v; want only the derived fields", m)
	}
	f, _ := rag.ParseMetaFilter([]byte(`{"key":"year","gte":2025}`))
	kb, _ := e.db.GetKBByName(ctx, tenant, "kb")
	if ids, err := e.db.MatchDocuments(ctx, tenant, []string{kb.ID}, f); err != nil || len(ids) != 0 {
		t.Fatalf("MatchDocuments(year >= 2025) = %v, %v; want none now", ids, err)
	}
}

// Metadata layers (docs/metadata-filters.md): derived fields (source, file_type, created, modified,
// language) under the file's own properties (DOCX core properties, PDF Info dictionary) under front
// matter; through the single-document path, the batch path and an upload.
func TestFileMetadataLayers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	core := `<?xml version="1.0" encoding="UTF-8"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" ` +
		`xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/"><dc:title>Travel policy</dc:title>` +
		`<dc:creator>Ann Lee</dc:creator><cp:keywords>travel, expenses</cp:keywords><dcterms:modified>2024-05-06T07:08:09Z</dcterms:modified></cp:coreProperties>`
	english := strings.Repeat("Employees book economy class for flights that are shorter than six hours, and the travel desk approves the rest. ", 3)
	docx := ooxmltest.DOCXWithParts(ooxmltest.P("", ooxmltest.R(english)), [2]string{"docProps/core.xml", core})
	pdf := extracttest.PDFWithInfo([]string{"Les employés voyagent en classe économique pour les vols de moins de six heures et le service des voyages approuve les autres demandes."},
		map[string]string{"Author": "Bob", "CreationDate": "D:20230102"})
	before := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)

	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "inbox/kb/travel.docx", Name: "travel.docx", Data: docx})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := e.db.GetDocumentMetadata(ctx, tenant, rep.DocumentID)
	if m["title"] != "Travel policy" || m["author"] != "Ann Lee" || !slices.Equal(m["keywords"].([]string), []string{"travel", "expenses"}) ||
		m["modified"] != "2024-05-06T07:08:09Z" || m["source"] != "file" || m["file_type"] != "docx" || m["language"] != "en" {
		t.Fatalf("docx metadata = %v; want its properties over the derived fields (modified from the file)", m)
	}
	if c, _ := m["created"].(string); c < before { // no created property: the derived one, when first indexed
		t.Fatalf("docx created = %v; want the derived time of first indexing", m["created"])
	}
	reps := e.svc.IngestBatch(ctx, tenant, []Source{{KBName: "kb", URI: "inbox/kb/voyages.pdf", Name: "voyages.pdf", Data: pdf}})
	if reps[0].Error != "" {
		t.Fatal(reps[0].Error)
	}
	m, _ = e.db.GetDocumentMetadata(ctx, tenant, reps[0].DocumentID)
	if m["author"] != "Bob" || m["created"] != "2023-01-02T00:00:00Z" || m["language"] != "fr" || m["file_type"] != "pdf" {
		t.Fatalf("pdf metadata (batch path) = %v; want the Info dictionary and French", m)
	}
	md := "---\ntitle: Front matter title\nauthor: Cy\n---\n# Policy\n\n" + english
	rep, err = e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "upload/up_1", Name: "policy.md", Data: []byte(md)})
	if err != nil {
		t.Fatal(err)
	}
	m, _ = e.db.GetDocumentMetadata(ctx, tenant, rep.DocumentID)
	if m["title"] != "Front matter title" || m["author"] != "Cy" || m["source"] != "upload" || m["file_type"] != "md" {
		t.Fatalf("uploaded markdown metadata = %v; want the front matter, source upload", m)
	}
	f, _ := rag.ParseMetaFilter([]byte(`{"key":"language","eq":"fr"}`))
	kb, _ := e.db.GetKBByName(ctx, tenant, "kb")
	if ids, err := e.db.MatchDocuments(ctx, tenant, []string{kb.ID}, f); err != nil || !slices.Equal(ids, []string{reps[0].DocumentID}) {
		t.Fatalf("MatchDocuments(language fr) = %v, %v; want the PDF", ids, err)
	}
}

func TestDetectLanguage(t *testing.T) {
	for want, text := range map[string]string{
		"en": "The employee handbook says that staff are entitled to twenty days of paid leave for each year of service with the company.",
		"de": "Die Mitarbeiter haben Anspruch auf zwanzig Tage bezahlten Urlaub für jedes Jahr, das sie mit dem Unternehmen verbringen, und das ist nicht alles.",
		"zh": "员工每年享有二十天带薪年假，入职满一年后开始计算，未休假期可以顺延至下一年度使用。",
		"ja": "従業員は毎年二十日間の有給休暇を取得することができます。休暇の申請は上司に提出してください。",
		"":   "Q3 KPI: 42%",
	} {
		if got := detectLanguage(text); got != want {
			t.Errorf("detectLanguage(%.30q) = %q; want %q", text, got, want)
		}
	}
}
