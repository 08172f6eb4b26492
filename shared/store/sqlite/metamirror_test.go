package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// newKBStore is a migrated database in a temporary folder, closed when the test ends, with knowledge
// base "kb" of tenant t1.
func newKBStore(t *testing.T) (*sqldb.DB, rag.KnowledgeBase) {
	ctx := context.Background()
	db, err := Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	return db, kb
}

// TestMetadataMirror: every metadata write (a source's, an editor's) calls the mirror after it
// commits, with the document's metadata as written (edits laid over the sources) and a generation
// that grows; a failing mirror makes the write's error (its kind kept) while the metadata stays saved.
func TestMetadataMirror(t *testing.T) {
	ctx := context.Background()
	db, kb := newKBStore(t)
	d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "upload/x", FileName: "x", Status: rag.StatusReady}
	if err := db.CreateDocument(ctx, &d); err != nil {
		t.Fatal(err)
	}
	type call struct {
		doc string
		m   rag.Metadata
		gen int64
	}
	var calls []call
	var fail error
	db.SetMetadataMirror(func(ctx context.Context, tenant, kbID, docID string, m rag.Metadata, gen int64) error {
		if tenant != "t1" || kbID != kb.ID {
			t.Errorf("mirror called for %s/%s", tenant, kbID)
		}
		calls = append(calls, call{docID, m, gen})
		return fail
	})
	if err := db.SetDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"team": "hr", "year": 2024}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EditDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"team": "legal"}, []string{"year"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"team": "eng", "year": 2025, "draft": "yes"}); err != nil {
		t.Fatal(err)
	}
	want := []rag.Metadata{{"team": "hr", "year": 2024.0}, {"team": "legal"}, {"team": "legal", "draft": "yes"}}
	if len(calls) != len(want) {
		t.Fatalf("%d mirror calls; want %d", len(calls), len(want))
	}
	for i, c := range calls {
		if c.doc != d.ID || !reflect.DeepEqual(c.m, want[i]) || (i > 0 && c.gen <= calls[i-1].gen) {
			t.Fatalf("call %d: %s %v at generation %d; want %v at a higher generation than %d", i, c.doc, c.m, c.gen, want[i], calls[max(0, i-1)].gen)
		}
	}
	fail = rag.E("milvus", rag.KindUnavailable, errors.New("down"))
	err := db.SetDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"team": "ops"})
	if _, ok := err.(*rag.Error); !ok || !rag.Is(err, rag.KindUnavailable) {
		t.Fatalf("a failing mirror: %T %v; want the *rag.Error itself, Unavailable", err, err)
	}
	if m, err := db.GetDocumentMetadata(ctx, "t1", d.ID); err != nil || m["team"] != "legal" || len(m) != 1 {
		// the editor's team stays over the source's ops: what matters is that the write was saved
		t.Fatalf("after a failed mirror the metadata is %v, %v", m, err)
	}
	if _, err := db.EditDocumentMetadata(ctx, "t1", kb.ID, d.ID, rag.Metadata{"team": "sec"}, nil); !rag.Is(err, rag.KindUnavailable) {
		t.Fatalf("a failing mirror on an edit: %v", err)
	}
	if m, _ := db.GetDocumentMetadata(ctx, "t1", d.ID); m["team"] != "sec" {
		t.Fatalf("the edit was not saved: %v", m)
	}

	// the backfill: every document not being deleted, with its metadata (empty when none), at the
	// current generation
	bare := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "upload/y", FileName: "y", Status: rag.StatusReady}
	gone := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "upload/z", FileName: "z", Status: rag.StatusDeleted}
	for _, doc := range []*rag.Document{&bare, &gone} {
		if err := db.CreateDocument(ctx, doc); err != nil {
			t.Fatal(err)
		}
	}
	fail, calls = nil, nil
	n, err := db.MirrorAllMetadata(ctx, "t1")
	if err != nil || n != 2 || len(calls) != 2 {
		t.Fatalf("MirrorAllMetadata = %d, %v with %d calls; want the 2 live documents", n, err, len(calls))
	}
	for _, c := range calls {
		if c.doc == gone.ID || (c.doc == bare.ID && len(c.m) != 0) || (c.doc == d.ID && c.m["team"] != "sec") {
			t.Fatalf("backfill call %v", c)
		}
	}
	db.SetMetadataMirror(nil)
	if _, err := db.MirrorAllMetadata(ctx, "t1"); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("MirrorAllMetadata without a mirror = %v", err)
	}
}
