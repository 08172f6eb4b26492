package storetest

import (
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// TestMetadataEdits runs the editors' metadata edits contract (EditDocumentMetadata): set and removed
// keys show at once (and in filters), survive every later write of the document's sources
// (SetDocumentMetadata), a refused edit changes nothing, and another tenant's document is not
// touched. open returns a fresh, empty, unmigrated database.
func TestMetadataEdits(t *testing.T, open func(t *testing.T) *sqldb.DB) {
	db := open(t)
	ctx := ctxT(t)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "upload/x", FileName: "x.md", Status: rag.StatusReady}
	if err := db.CreateDocument(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if err := db.SetDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"source": "upload", "draft": "yes", "team": "hr"}); err != nil {
		t.Fatal(err)
	}
	got, err := db.EditDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"team": "legal", "year": 2025}, []string{"draft"})
	if err != nil || got["team"] != "legal" || got["year"] != 2025.0 || got["draft"] != nil || got["source"] != "upload" {
		t.Fatalf("EditDocumentMetadata = %v, %v; want team legal, year 2025, draft gone, source kept", got, err)
	}
	legal, _ := rag.ParseMetaFilter([]byte(`{"key":"team","eq":"legal"}`))
	if ids, err := db.MatchDocuments(ctx, "t1", []string{kb.ID}, legal); err != nil || !slices.Equal(ids, []string{d.ID}) {
		t.Fatalf("MatchDocuments(team legal) after the edit = %v, %v", ids, err)
	}
	// the sources are written again (a re-index): the edits stay on top
	if err := db.SetDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"source": "upload", "draft": "yes", "team": "hr", "title": "New"}); err != nil {
		t.Fatal(err)
	}
	m, _ := db.GetDocumentMetadata(ctx, "t1", d.ID)
	if m["team"] != "legal" || m["year"] != 2025.0 || m["draft"] != nil || m["title"] != "New" {
		t.Fatalf("metadata after a re-index = %v; want the edits kept over the new source values", m)
	}
	// an edit that removes an edited key lets the source's value back on the next write
	if _, err := db.EditDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"draft": "no"}, nil); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]func() error{
		"bad key": func() error {
			_, err := db.EditDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"bad key": "x"}, nil)
			return err
		},
		"bad removal": func() error {
			_, err := db.EditDocumentMetadata(ctx, "t1", kb.ID, d.ID, nil, []string{"no such key!"})
			return err
		},
		"set and removed": func() error {
			_, err := db.EditDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"team": "x"}, []string{"team"})
			return err
		},
		"a value of another type": func() error {
			_, err := db.EditDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"team": map[string]any{"a": 1}}, nil)
			return err
		},
	} {
		if err := bad(); !rag.Is(err, rag.KindInvalid) {
			t.Errorf("%s: %v; want Invalid", name, err)
		}
	}
	if m, _ := db.GetDocumentMetadata(ctx, "t1", d.ID); m["team"] != "legal" || m["draft"] != "no" {
		t.Fatalf("metadata after refused edits = %v; want unchanged (team legal, draft no)", m)
	}
	if m, _ := db.GetDocumentMetadata(ctx, "t2", d.ID); len(m) != 0 {
		t.Fatalf("another tenant reads the document's metadata: %v", m)
	}
}
