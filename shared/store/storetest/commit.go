package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// testCommitDocuments: a batched commit lands whole (every document's rows and chunks, one version bump
// per knowledge base) or, when one document of it is bad, not at all; another tenant's document is
// Invalid. db is migrated and empty.
func testCommitDocuments(t *testing.T, db *sqldb.DB) {
	ctx := workCtx(t, 200)
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "batch"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	made := 0
	batch := func(ctx context.Context, n int) []rag.DocumentChunks {
		var out []rag.DocumentChunks
		for range n {
			made++
			d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: fmt.Sprintf("batch/%d", made), FileName: "a.md", FileType: "md", Status: rag.StatusProcessing}
			if err := db.CreateDocument(ctx, &d); err != nil {
				t.Fatal(err)
			}
			d.Status, d.ChunkCount, d.ContentHash = rag.StatusReady, 1, hash(d.SourceURI)
			p := chunk("t1", kb.ID, d.ID, fmt.Sprintf("p_batch_%d", made), 0, rag.LevelParent, fmt.Sprintf("Parent %d", made))
			c := chunk("t1", kb.ID, d.ID, fmt.Sprintf("c_batch_%d", made), 0, rag.LevelChild, fmt.Sprintf("Child %d of the batch", made))
			c.ParentID, c.VectorID = p.ID, "v"+c.ID
			out = append(out, rag.DocumentChunks{Document: d, Add: []rag.Chunk{p, c}})
		}
		return out
	}

	good := batch(ctx, 3)
	if err := db.CommitDocuments(ctx, "t1", good); err != nil {
		t.Fatalf("CommitDocuments = %v", err)
	}
	for _, d := range good {
		got, err := db.GetDocument(ctx, "t1", d.Document.ID)
		if err != nil || got.Status != rag.StatusReady || got.ChunkCount != 1 || got.ContentHash != d.Document.ContentHash {
			t.Errorf("document %s = %+v, %v; want ready with 1 chunk and its content hash", d.Document.ID, got, err)
		}
		if cs, err := db.ListChunks(ctx, "t1", d.Document.ID); err != nil || len(cs) != 2 {
			t.Errorf("document %s has %d chunks (%v), want 2", d.Document.ID, len(cs), err)
		}
	}
	if got, _ := db.GetKB(ctx, "t1", kb.ID); got.Version != kb.Version+1 {
		t.Errorf("kb version %d after one batch, want %d (one bump per batch)", got.Version, kb.Version+1)
	}

	bad := batch(ctx, 3)
	bad[2].Add[1].ID = good[0].Add[1].ID // a chunk id that exists: Conflict, and the whole batch is undone
	if err := db.CommitDocuments(ctx, "t1", bad); err == nil {
		t.Fatal("CommitDocuments with an existing chunk id succeeded")
	}
	for _, d := range bad {
		got, _ := db.GetDocument(ctx, "t1", d.Document.ID)
		cs, _ := db.ListChunks(ctx, "t1", d.Document.ID)
		if got.Status != rag.StatusProcessing || len(cs) != 0 {
			t.Errorf("after a failed batch document %s is %s with %d chunks, want processing with none", d.Document.ID, got.Status, len(cs))
		}
	}
	if got, _ := db.GetKB(ctx, "t1", kb.ID); got.Version != kb.Version+1 {
		t.Errorf("kb version %d after a failed batch, want %d (unchanged)", got.Version, kb.Version+1)
	}
	if err := db.CommitDocuments(ctx, "t2", batch(ctx, 1)); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("CommitDocuments of another tenant's document = %v, want Invalid", err)
	}
}
