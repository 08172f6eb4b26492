package storetest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// testGetReadyChunks: the joined look-up returns the tenant's chunks of ready documents, in the order
// asked, each once, with their documents' file names; it leaves out chunks of documents that are not
// ready, missing ids and other tenants' chunks, returns the same places and texts as GetChunks, and refuses a
// malformed id.
func testGetReadyChunks(t *testing.T, db *sqldb.DB) {
	ctx := workCtx(t, 30)
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "ready"}
	must(t, db.CreateKB(ctx, &kb))
	other := rag.KnowledgeBase{Tenant: "t2", Name: "ready"}
	must(t, db.CreateKB(ctx, &other))
	var ids []string // two chunks per document: a.md's, b.md's (failed), c.md's
	for i, name := range []string{"a.md", "b.md", "c.md"} {
		d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "file:///" + name, FileName: name, Status: []string{rag.StatusReady, rag.StatusFailed, rag.StatusReady}[i]}
		must(t, db.CreateDocument(ctx, &d))
		var rows []rag.Chunk
		for j := range 2 {
			id := fmt.Sprintf("k%d_%d", i, j)
			rows = append(rows, rag.Chunk{ID: id, Tenant: "t1", KBID: kb.ID, DocumentID: d.ID, ParentID: "p" + id, Level: rag.LevelChild, Index: j, Content: "text " + id,
				ContentHash: strings.Repeat("0", 64), ContentType: rag.ContentGeneral, Chapter: "ch " + id, Page: j + 1, Tags: []string{"t" + id}})
			ids = append(ids, id)
		}
		must(t, db.ApplyChunks(ctx, "t1", d.ID, rows, nil))
	}
	foreign := rag.Document{Tenant: "t2", KBID: other.ID, SourceURI: "file:///x.md", FileName: "x.md", Status: rag.StatusReady}
	must(t, db.CreateDocument(ctx, &foreign))
	must(t, db.ApplyChunks(ctx, "t2", foreign.ID, []rag.Chunk{{ID: "kx", Tenant: "t2", KBID: other.ID, DocumentID: foreign.ID, Level: rag.LevelChild,
		Content: "x", ContentHash: strings.Repeat("0", 64), ContentType: rag.ContentGeneral}}, nil))

	ask := []string{ids[5], "missing", ids[2], "kx", ids[0], ids[5], ids[3], ids[1]}
	got, names, err := db.GetReadyChunks(ctx, "t1", ask)
	must(t, err)
	var gotIDs []string
	for _, c := range got {
		gotIDs = append(gotIDs, c.ID)
	}
	if want := []string{ids[5], ids[0], ids[1]}; !slices.Equal(gotIDs, want) {
		t.Fatalf("GetReadyChunks ids = %v, want %v", gotIDs, want)
	}
	plain, err := db.GetChunks(ctx, "t1", gotIDs)
	must(t, err)
	for i := range got {
		if got[i] != plain[i].Text() {
			t.Fatalf("GetReadyChunks row %+v, GetChunks row %+v", got[i], plain[i])
		}
	}
	var gotNames []string
	for _, n := range names {
		gotNames = append(gotNames, n)
	}
	slices.Sort(gotNames)
	if want := []string{"a.md", "c.md"}; !slices.Equal(gotNames, want) || names[got[0].DocumentID] != "c.md" {
		t.Fatalf("GetReadyChunks names = %v, want %v (c.md for %s)", names, want, got[0].DocumentID)
	}
	if got, names, err := db.GetReadyChunks(ctx, "t1", nil); err != nil || len(got) != 0 || len(names) != 0 {
		t.Fatalf("GetReadyChunks(nil) = %v, %v, %v", got, slices.Collect(maps.Keys(names)), err)
	}
	_, _, err = db.GetReadyChunks(ctx, "t1", []string{"bad id'"})
	checkKind(t, "malformed id", rag.KindInvalid, err)
}
