package storetest

import (
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// TestMetadataIndexShared runs the metadata index's contract across processes: open returns two
// handles on one fresh, unmigrated database (two processes sharing a store). Every write that changes
// what a filter selects, made through either handle, is seen by the other's next MatchDocuments; a
// handle's own writes update its index in place (no rebuild); with the index off or too small for
// the tenant, the SQL scan gives the same answers.
func TestMetadataIndexShared(t *testing.T, open func(t *testing.T) (a, b *sqldb.DB)) {
	a, b := open(t)
	ctx := ctxT(t)
	if _, err := a.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	kb1, kb2 := rag.KnowledgeBase{Tenant: "t1", Name: "one"}, rag.KnowledgeBase{Tenant: "t1", Name: "two"}
	for _, k := range []*rag.KnowledgeBase{&kb1, &kb2} {
		if err := a.CreateKB(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	newDoc := func(db *sqldb.DB, kb rag.KnowledgeBase, name string) *rag.Document {
		t.Helper()
		d := &rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "connector/x/" + name, FileName: name, Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	set := func(db *sqldb.DB, d *rag.Document, m rag.Metadata) {
		t.Helper()
		if err := db.SetDocumentMetadata(ctx, "t1", d.KBID, d.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	web, _ := rag.ParseMetaFilter([]byte(`{"key":"source","eq":"web"}`))
	untagged, _ := rag.ParseMetaFilter([]byte(`{"not":{"key":"source","exists":true}}`))
	check := func(db *sqldb.DB, what string, f *rag.MetaFilter, kbs []string, want ...*rag.Document) {
		t.Helper()
		ids := []string{}
		for _, d := range want {
			ids = append(ids, d.ID)
		}
		slices.Sort(ids)
		got, err := db.MatchDocuments(ctx, "t1", kbs, f)
		if err != nil || !slices.Equal(got, ids) {
			t.Fatalf("%s: MatchDocuments = %v, %v; want %v", what, got, err, ids)
		}
	}
	both := []string{kb1.ID, kb2.ID}

	d1, d2 := newDoc(a, kb1, "d1"), newDoc(a, kb2, "d2")
	set(a, d1, rag.Metadata{"source": "web"})
	check(a, "first use builds", web, both, d1)
	check(b, "the other handle builds its own", web, both, d1)
	builds := a.MetaIndexBuilds()

	set(a, d2, rag.Metadata{"source": "web"})
	check(a, "own metadata write", web, both, d1, d2)
	check(a, "kb restriction", web, []string{kb2.ID}, d2)
	d3 := newDoc(a, kb1, "d3")
	check(a, "own new document (no metadata)", untagged, both, d3)
	if got := a.MetaIndexBuilds(); got != builds {
		t.Fatalf("a's own writes rebuilt its index (%d builds, want %d): they should apply in place", got, builds)
	}

	// b writes: a must see each one on its next query
	set(b, d1, rag.Metadata{"source": "confluence"})
	check(a, "other's metadata write", web, both, d2)
	d4 := newDoc(b, kb2, "d4")
	check(a, "other's new document", untagged, both, d3, d4)
	d2.Status = rag.StatusDeleted
	if err := b.UpdateDocument(ctx, d2); err != nil {
		t.Fatal(err)
	}
	check(a, "other marked a document deleted", web, both)
	if err := b.DeleteDocument(ctx, "t1", d3.ID); err != nil {
		t.Fatal(err)
	}
	check(a, "other removed a document", untagged, both, d4)
	if err := b.DeleteKB(ctx, "t1", kb2.ID); err != nil {
		t.Fatal(err)
	}
	check(a, "other removed a knowledge base", untagged, both)
	if a.MetaIndexBuilds() == builds {
		t.Fatal("a never rebuilt after b's writes")
	}
	// and a's writes reach b
	set(a, d1, rag.Metadata{"source": "web", "year": 2025})
	check(b, "a's write seen by b", web, both, d1)
	if err := a.DeleteKB(ctx, "t1", kb1.ID); err != nil {
		t.Fatal(err)
	}
	check(a, "own knowledge base removal", web, both)
	check(b, "a's knowledge base removal seen by b", web, both)

	// the index off, or too small for the tenant: the scan answers the same
	kb3 := rag.KnowledgeBase{Tenant: "t1", Name: "three"}
	if err := a.CreateKB(ctx, &kb3); err != nil {
		t.Fatal(err)
	}
	d5, d6 := newDoc(a, kb3, "d5"), newDoc(a, kb3, "d6")
	set(a, d5, rag.Metadata{"source": "web"})
	for _, limit := range []int{0, 100} {
		a.SetMetaIndexLimit(limit)
		check(a, "scan", web, []string{kb3.ID}, d5)
		check(a, "scan", untagged, []string{kb3.ID}, d6)
	}
	a.SetMetaIndexLimit(sqldb.DefaultMetaIndexBytes)
	check(a, "index back on", web, []string{kb3.ID}, d5)
}
