package storetest

import (
	"maps"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// TestAccessReads runs the reads per-document access lists use (shared/access):
// ConnectorDocuments is a knowledge base's live documents of one connector by source URI, within the
// tenant, the exact prefix (a connector named with _ does not take another's documents), never a
// deleted one; ConnectorRecords is a connector's item records by source URI, within the tenant.
// open returns a fresh, migrated database.
func TestAccessReads(t *testing.T, open func(t *testing.T) *sqldb.DB) {
	db := open(t)
	ctx := ctxT(t)
	kbs := map[string]*rag.KnowledgeBase{"t1": {Tenant: "t1", Name: "kb"}, "t2": {Tenant: "t2", Name: "kb"}}
	for _, kb := range kbs {
		if err := db.CreateKB(ctx, kb); err != nil {
			t.Fatal(err)
		}
	}
	ids := map[string]string{}
	for _, d := range []struct{ tenant, uri, status string }{
		{"t1", "connector/a_b/1", rag.StatusReady},
		{"t1", "connector/a_b/2", rag.StatusPending},
		{"t1", "connector/axb/1", rag.StatusReady}, // _ is a LIKE wildcard: must not count as a_b's
		{"t1", "connector/a_b/3", rag.StatusDeleted},
		{"t1", "upload/kb/x.md", rag.StatusReady},
		{"t2", "connector/a_b/1", rag.StatusReady},
	} {
		doc := rag.Document{Tenant: d.tenant, KBID: kbs[d.tenant].ID, SourceURI: d.uri, FileName: "f.md", Status: d.status}
		if err := db.CreateDocument(ctx, &doc); err != nil {
			t.Fatal(err)
		}
		ids[d.tenant+" "+d.uri] = doc.ID
	}
	got, err := db.ConnectorDocuments(ctx, "t1", kbs["t1"].ID, "connector/a_b/")
	want := map[string]string{"connector/a_b/1": ids["t1 connector/a_b/1"], "connector/a_b/2": ids["t1 connector/a_b/2"]}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("ConnectorDocuments = %v, %v; want %v", got, err, want)
	}
	for _, it := range []struct{ tenant, id, rec string }{
		{"t1", "1", `{"permissions":["group:hr"]}`}, {"t1", "2", `{}`}, {"t2", "1", `{"permissions":["anyone"]}`},
	} {
		if err := db.PutConnectorItem(ctx, it.tenant, "a_b", rag.ConnectorItem{ID: it.id, SourceURI: "connector/a_b/" + it.id, Version: "1", Metadata: it.rec}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := db.ConnectorRecords(ctx, "t1", "a_b")
	wantRecs := map[string]string{"connector/a_b/1": `{"permissions":["group:hr"]}`, "connector/a_b/2": `{}`}
	if err != nil || !maps.Equal(recs, wantRecs) {
		t.Fatalf("ConnectorRecords = %v, %v; want %v", recs, err, wantRecs)
	}
	if _, err := db.ConnectorDocuments(ctx, "t1' OR 1=1", kbs["t1"].ID, "connector/"); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("a malformed tenant: %v; want Invalid", err)
	}
}
