package ingest

import (
	"context"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// Front matter becomes the document's metadata, through the single-document path and the batch path;
// a new version without it clears it.
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
	if m, _ := e.db.GetDocumentMetadata(ctx, tenant, rep.DocumentID); len(m) != 0 {
		t.Fatalf("metadata after a version without front matter = %v; want none", m)
	}
	f, _ := rag.ParseMetaFilter([]byte(`{"key":"year","gte":2025}`))
	kb, _ := e.db.GetKBByName(ctx, tenant, "kb")
	if ids, err := e.db.MatchDocuments(ctx, tenant, []string{kb.ID}, f); err != nil || len(ids) != 0 {
		t.Fatalf("MatchDocuments(year >= 2025) = %v, %v; want none now", ids, err)
	}
}
