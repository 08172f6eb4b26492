package sqldb_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// TestCommitDocumentsIsAllOrNothing: a batch lands whole (rows, chunks, one version bump per knowledge
// base) or, when one document of it is bad, not at all.
func TestCommitDocumentsIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	made := 0
	batch := func(n int) []rag.DocumentChunks {
		var out []rag.DocumentChunks
		for range n {
			made++
			i := made
			d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: fmt.Sprintf("s%d", i), FileName: "a.md", FileType: "md", Status: rag.StatusProcessing}
			if err := db.CreateDocument(ctx, &d); err != nil {
				t.Fatal(err)
			}
			d.Status, d.ChunkCount = rag.StatusReady, 1
			c := rag.Chunk{ID: fmt.Sprintf("c_%d_%d", n, i), Tenant: "t1", KBID: kb.ID, DocumentID: d.ID, Level: rag.LevelChild, Content: "text",
				ContentHash: strings.Repeat("a", 64), VectorID: fmt.Sprintf("v_%d_%d", n, i), ContentType: rag.ContentGeneral}
			out = append(out, rag.DocumentChunks{Document: d, Add: []rag.Chunk{c}})
		}
		return out
	}

	good := batch(3)
	if err := db.CommitDocuments(ctx, "t1", good); err != nil {
		t.Fatalf("CommitDocuments = %v", err)
	}
	for _, d := range good {
		got, err := db.GetDocument(ctx, "t1", d.Document.ID)
		if err != nil || got.Status != rag.StatusReady || got.ChunkCount != 1 {
			t.Errorf("document %s = %+v, %v; want ready with 1 chunk", d.Document.ID, got, err)
		}
		if cs, _ := db.ListChunks(ctx, "t1", d.Document.ID); len(cs) != 1 {
			t.Errorf("document %s has %d chunks, want 1", d.Document.ID, len(cs))
		}
	}
	if got, _ := db.GetKB(ctx, "t1", kb.ID); got.Version != kb.Version+1 {
		t.Errorf("kb version %d after one batch, want %d (one bump per batch)", got.Version, kb.Version+1)
	}

	bad := batch(3)
	bad[2].Add[0].ID = good[0].Add[0].ID // a duplicate chunk id: Conflict
	if err := db.CommitDocuments(ctx, "t1", bad); err == nil {
		t.Fatal("CommitDocuments with a duplicate chunk id succeeded")
	}
	for _, d := range bad {
		got, _ := db.GetDocument(ctx, "t1", d.Document.ID)
		cs, _ := db.ListChunks(ctx, "t1", d.Document.ID)
		if got.Status != rag.StatusProcessing || len(cs) != 0 {
			t.Errorf("after a failed batch document %s is %s with %d chunks, want processing with none", d.Document.ID, got.Status, len(cs))
		}
	}
	if err := db.CommitDocuments(ctx, "t2", batch(1)); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("CommitDocuments of another tenant's document = %v, want Invalid", err)
	}
}
