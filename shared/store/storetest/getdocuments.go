package storetest

import (
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// testGetDocuments: the batch look-up returns the tenant's documents in the order asked, each once,
// leaves out missing ids and other tenants' documents, and refuses a malformed id.
func testGetDocuments(t *testing.T, db *sqldb.DB) {
	ctx := workCtx(t, 20)
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "batch"}
	must(t, db.CreateKB(ctx, &kb))
	other := rag.KnowledgeBase{Tenant: "t2", Name: "batch"}
	must(t, db.CreateKB(ctx, &other))
	var ids []string
	for i, name := range []string{"a.md", "b.md", "c.md"} {
		d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "file:///" + name, FileName: name, Status: []string{rag.StatusReady, rag.StatusReady, rag.StatusFailed}[i]}
		must(t, db.CreateDocument(ctx, &d))
		ids = append(ids, d.ID)
	}
	foreign := rag.Document{Tenant: "t2", KBID: other.ID, SourceURI: "file:///x.md", FileName: "x.md", Status: rag.StatusReady}
	must(t, db.CreateDocument(ctx, &foreign))

	got, err := db.GetDocuments(ctx, "t1", []string{ids[2], "missing", ids[0], foreign.ID, ids[2]})
	must(t, err)
	var names []string
	for _, d := range got {
		names = append(names, d.FileName+"/"+d.Status)
	}
	if want := []string{"c.md/" + rag.StatusFailed, "a.md/" + rag.StatusReady}; !slices.Equal(names, want) {
		t.Fatalf("GetDocuments = %v, want %v", names, want)
	}
	if got, err := db.GetDocuments(ctx, "t1", nil); err != nil || len(got) != 0 {
		t.Fatalf("GetDocuments(nil) = %v, %v", got, err)
	}
	_, err = db.GetDocuments(ctx, "t1", []string{"bad id'"})
	checkKind(t, "malformed id", rag.KindInvalid, err)
}
