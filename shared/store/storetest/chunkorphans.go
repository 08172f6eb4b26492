package storetest

import (
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// testChunkOrphans: chunk rows whose document row is gone are listed per document (this tenant's only)
// and deleted; a live document's rows are never touched.
func testChunkOrphans(t *testing.T, db *sqldb.DB) {
	ctx := workCtx(t, 40)
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
	must(t, db.CreateKB(ctx, &kb))
	other := rag.KnowledgeBase{Tenant: "t2", Name: "kb"}
	must(t, db.CreateKB(ctx, &other))
	var docs []rag.Document
	for i, d := range []rag.Document{{Tenant: "t1", KBID: kb.ID, SourceURI: "live.md"}, {Tenant: "t1", KBID: kb.ID, SourceURI: "gone.md"},
		{Tenant: "t2", KBID: other.ID, SourceURI: "gone.md"}} {
		must(t, db.CreateDocument(ctx, &d))
		var cs []rag.Chunk
		for j := range 3 + i {
			cs = append(cs, chunk(d.Tenant, d.KBID, d.ID, d.ID+"-"+string(rune('a'+j)), j, rag.LevelChild, "text"))
		}
		must(t, db.ApplyChunks(ctx, d.Tenant, d.ID, cs, nil))
		docs = append(docs, d)
	}
	if got, err := db.ListChunkOrphans(ctx, "t1"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("ListChunkOrphans with every document present = %v, %v; want empty", got, err)
	}
	// what a delete racing a chunk write leaves: the document row gone, its chunk rows still there
	for _, d := range docs[1:] {
		if _, err := db.SQL().ExecContext(ctx, `DELETE FROM documents WHERE tenant_id = ? AND id = ?`, d.Tenant, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.ListChunkOrphans(ctx, "t1")
	must(t, err)
	if want := []store.ChunkOrphans{{DocumentID: docs[1].ID, KBID: kb.ID, Rows: 4}}; !slices.Equal(got, want) {
		t.Fatalf("ListChunkOrphans(t1) = %+v, want %+v (t2's orphans and t1's live document excluded)", got, want)
	}
	if n, err := db.DeleteChunkOrphans(ctx, "t1", docs[0].ID); err != nil || n != 0 {
		t.Fatalf("DeleteChunkOrphans of a live document = %d, %v; want 0 rows removed", n, err)
	}
	if n, err := db.DeleteChunkOrphans(ctx, "t1", docs[1].ID); err != nil || n != 4 {
		t.Fatalf("DeleteChunkOrphans = %d, %v; want 4", n, err)
	}
	if got, err := db.ListChunkOrphans(ctx, "t1"); err != nil || len(got) != 0 {
		t.Fatalf("ListChunkOrphans after the delete = %v, %v; want empty", got, err)
	}
	if cs, err := db.ListChunks(ctx, "t1", docs[0].ID); err != nil || len(cs) != 3 {
		t.Fatalf("the live document's chunks: %d, %v; want 3", len(cs), err)
	}
	if got, err := db.ListChunkOrphans(ctx, "t2"); err != nil || len(got) != 1 || got[0].Rows != 5 {
		t.Fatalf("ListChunkOrphans(t2) = %+v, %v; want its one document's 5 rows", got, err)
	}
}
