package storetest

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// TestDocumentMetadata runs the document-metadata contract (SetDocumentMetadata, GetDocumentMetadata,
// MatchDocuments). open returns a fresh, empty, unmigrated database.
func TestDocumentMetadata(t *testing.T, open func(t *testing.T) *sqldb.DB) {
	db := open(t)
	ctx := ctxT(t)
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
	other := rag.KnowledgeBase{Tenant: "t2", Name: "kb"}
	for _, k := range []*rag.KnowledgeBase{&kb, &other} {
		if err := db.CreateKB(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	doc := func(k rag.KnowledgeBase, name string, status string) rag.Document {
		d := rag.Document{Tenant: k.Tenant, KBID: k.ID, SourceURI: "connector/x/" + name, FileName: name, Status: status}
		if err := db.CreateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b, c := doc(kb, "a", rag.StatusReady), doc(kb, "b", rag.StatusReady), doc(kb, "c", rag.StatusReady)
	gone := doc(kb, "gone", rag.StatusDeleted)
	foreign := doc(other, "f", rag.StatusReady)
	set := func(d rag.Document, m rag.Metadata) {
		t.Helper()
		if err := db.SetDocumentMetadata(ctx, d.Tenant, d.KBID, d.ID, m); err != nil {
			t.Fatalf("SetDocumentMetadata(%s): %v", d.FileName, err)
		}
	}
	set(a, rag.Metadata{"source": "web", "year": 2024, "labels": []string{"hr"}})
	set(b, rag.Metadata{"source": "confluence", "year": 2025, "modified": "2025-02-01"})
	set(b, rag.Metadata{"source": "confluence", "year": 2025, "modified": "2025-03-01"}) // replaced
	set(gone, rag.Metadata{"source": "web"})
	set(foreign, rag.Metadata{"source": "web"})

	t.Run("GetRoundTrips", func(t *testing.T) {
		m, err := db.GetDocumentMetadata(ctx, "t1", b.ID)
		if err != nil || m["modified"] != "2025-03-01" || m["year"] != 2025.0 {
			t.Fatalf("GetDocumentMetadata(b) = %v, %v; want the replaced values", m, err)
		}
		m, err = db.GetDocumentMetadata(ctx, "t1", c.ID)
		if err != nil || len(m) != 0 {
			t.Fatalf("GetDocumentMetadata(c without metadata) = %v, %v; want empty", m, err)
		}
		if m, _ := db.GetDocumentMetadata(ctx, "t2", a.ID); len(m) != 0 {
			t.Fatalf("another tenant read a's metadata: %v", m)
		}
	})

	t.Run("MatchDocuments", func(t *testing.T) {
		for filter, want := range map[string][]rag.Document{
			`{"key":"source","eq":"web"}`:                                          {a},
			`{"key":"year","gte":2025}`:                                            {b},
			`{"key":"modified","gte":"2025-03-01"}`:                                {b},
			`{"not":{"key":"source","exists":true}}`:                               {c},
			`{"key":"labels","in":["hr","legal"]}`:                                 {a},
			`{"or":[{"key":"year","lt":2025},{"key":"source","eq":"confluence"}]}`: {a, b},
		} {
			f, err := rag.ParseMetaFilter([]byte(filter))
			if err != nil {
				t.Fatal(err)
			}
			got, err := db.MatchDocuments(ctx, "t1", []string{kb.ID}, f)
			var ids []string
			for _, d := range want {
				ids = append(ids, d.ID)
			}
			slices.Sort(ids)
			if err != nil || !slices.Equal(got, ids) {
				t.Errorf("MatchDocuments(%s) = %v, %v; want %v (deleted and foreign documents never)", filter, got, err, ids)
			}
		}
		if _, err := db.MatchDocuments(ctx, "t1", nil, nil); !rag.Is(err, rag.KindInvalid) {
			t.Errorf("MatchDocuments without knowledge bases = %v; want Invalid", err)
		}
	})

	t.Run("MetadataFacets", func(t *testing.T) {
		// a, b live with metadata, c live without, gone deleted, foreign another tenant's: the
		// deleted and the foreign document's values never show, with the index and by the scan
		for _, indexed := range []bool{true, false} {
			if !indexed {
				db.SetMetaIndexLimit(0)
			}
			facets, err := db.MetadataFacets(ctx, "t1", []string{kb.ID}, 10)
			if err != nil {
				t.Fatalf("MetadataFacets(indexed %v): %v", indexed, err)
			}
			got := map[string]string{}
			for _, f := range facets {
				got[f.Key] = fmt.Sprintf("%s %d/%d %v %v-%v", f.Type, f.Documents, f.Distinct, f.Values, f.Min, f.Max)
			}
			want := map[string]string{
				"source":   "string 2/2 [{confluence 1} {web 1}] <nil>-<nil>",
				"year":     "number 2/2 [{2024 1} {2025 1}] 2024-2025",
				"labels":   "list 1/1 [{hr 1}] <nil>-<nil>",
				"modified": "date 1/0 [] 2025-03-01-2025-03-01",
			}
			if !maps.Equal(got, want) {
				t.Errorf("MetadataFacets(indexed %v) = %v; want %v", indexed, got, want)
			}
			if len(facets) != 4 || facets[0].Documents != 2 || facets[0].Key != "source" {
				t.Errorf("MetadataFacets order = %+v; want most documents first, then by key", facets)
			}
			if f, err := db.MetadataFacets(ctx, "t2", []string{kb.ID}, 10); err != nil || len(f) != 0 {
				t.Errorf("MetadataFacets(t2, t1's knowledge base) = %v, %v; want nothing", f, err)
			}
			if f, _ := db.MetadataFacets(ctx, "t1", []string{kb.ID}, 1); len(f[0].Values) != 1 || f[0].Distinct != 2 {
				t.Errorf("MetadataFacets(top 1) = %+v; want one value of two", f[0])
			}
		}
		db.SetMetaIndexLimit(sqldb.DefaultMetaIndexBytes)
		// the index keeps facets between writes: a caller's change to them is not kept, and a write is
		// seen by the next call
		first, _ := db.MetadataFacets(ctx, "t1", []string{kb.ID}, 10)
		first[0].Values[0].Documents = 99
		if f, _ := db.MetadataFacets(ctx, "t1", []string{kb.ID}, 10); f[0].Values[0].Documents != 1 {
			t.Errorf("a caller's change to the facets was kept: %+v", f[0])
		}
		set(c, rag.Metadata{"source": "web"})
		again, err := db.MetadataFacets(ctx, "t1", []string{kb.ID}, 10)
		if err != nil || again[0].Key != "source" || again[0].Documents != 3 || fmt.Sprint(again[0].Values) != "[{web 2} {confluence 1}]" {
			t.Errorf("MetadataFacets after a write = %+v, %v; want source on 3 documents, web on 2", again, err)
		}
		set(c, rag.Metadata{})
		if f, _ := db.MetadataFacets(ctx, "t1", []string{kb.ID}, 10); f[0].Documents != 2 {
			t.Errorf("MetadataFacets after removing c's metadata = %+v; want source on 2 documents", f[0])
		}
		if _, err := db.MetadataFacets(ctx, "t1", nil, 10); !rag.Is(err, rag.KindInvalid) {
			t.Errorf("MetadataFacets without knowledge bases = %v; want Invalid", err)
		}
	})

	t.Run("MetadataFacetsExcept", func(t *testing.T) {
		// a caller denied a: a's values (web, 2024, the hr label) are neither counted nor listed, with
		// the index and by the scan; excepting nothing is MetadataFacets
		describe := func(facets []rag.MetaFacet) map[string]string {
			got := map[string]string{}
			for _, f := range facets {
				got[f.Key] = fmt.Sprintf("%s %d/%d %v %v-%v", f.Type, f.Documents, f.Distinct, f.Values, f.Min, f.Max)
			}
			return got
		}
		for _, indexed := range []bool{true, false} {
			if !indexed {
				db.SetMetaIndexLimit(0)
			}
			facets, err := db.MetadataFacetsExcept(ctx, "t1", []string{kb.ID}, 10, []string{a.ID, foreign.ID})
			if err != nil {
				t.Fatalf("MetadataFacetsExcept(indexed %v): %v", indexed, err)
			}
			want := map[string]string{
				"source":   "string 1/1 [{confluence 1}] <nil>-<nil>",
				"year":     "number 1/1 [{2025 1}] 2025-2025",
				"modified": "date 1/0 [] 2025-03-01-2025-03-01",
			}
			if got := describe(facets); !maps.Equal(got, want) {
				t.Errorf("MetadataFacetsExcept(a, indexed %v) = %v; want %v", indexed, got, want)
			}
			// the same documents named the other way: among b and c (and another tenant's)
			if of, err := db.MetadataFacetsOf(ctx, "t1", []string{kb.ID}, 10, []string{b.ID, c.ID, foreign.ID}); err != nil || !maps.Equal(describe(of), want) {
				t.Errorf("MetadataFacetsOf(b, c, indexed %v) = %v, %v; want %v", indexed, describe(of), err, want)
			}
			if of, err := db.MetadataFacetsOf(ctx, "t1", []string{kb.ID}, 10, nil); err != nil || len(of) != 0 {
				t.Errorf("MetadataFacetsOf(no documents, indexed %v) = %v, %v; want nothing", indexed, of, err)
			}
			all, _ := db.MetadataFacets(ctx, "t1", []string{kb.ID}, 10)
			if none, _ := db.MetadataFacetsExcept(ctx, "t1", []string{kb.ID}, 10, nil); !maps.Equal(describe(none), describe(all)) || len(none) != 4 {
				t.Errorf("MetadataFacetsExcept(nothing, indexed %v) = %v; want MetadataFacets' %v", indexed, describe(none), describe(all))
			}
		}
		db.SetMetaIndexLimit(sqldb.DefaultMetaIndexBytes)
		// kept by the set excepted: another set gets its own answer, as does the same set as "only", and
		// a write is seen
		db.MetadataFacetsExcept(ctx, "t1", []string{kb.ID}, 10, []string{a.ID})
		if f, _ := db.MetadataFacetsExcept(ctx, "t1", []string{kb.ID}, 10, []string{b.ID}); describe(f)["source"] != "string 1/1 [{web 1}] <nil>-<nil>" {
			t.Errorf("MetadataFacetsExcept(b) after (a) = %v; want only a's source", describe(f))
		}
		if f, _ := db.MetadataFacetsOf(ctx, "t1", []string{kb.ID}, 10, []string{b.ID}); describe(f)["source"] != "string 1/1 [{confluence 1}] <nil>-<nil>" {
			t.Errorf("MetadataFacetsOf(b) after Except(b) = %v; want only b's source", describe(f))
		}
		set(c, rag.Metadata{"source": "web"})
		if f, _ := db.MetadataFacetsExcept(ctx, "t1", []string{kb.ID}, 10, []string{a.ID}); describe(f)["source"] != "string 2/2 [{confluence 1} {web 1}] <nil>-<nil>" {
			t.Errorf("MetadataFacetsExcept(a) after c's write = %v; want c's web counted", describe(f))
		}
		set(c, rag.Metadata{})
	})

	t.Run("BadMetadataIsInvalid", func(t *testing.T) {
		err := db.SetDocumentMetadata(ctx, "t1", kb.ID, c.ID, rag.Metadata{"bad key": "x"})
		if !rag.Is(err, rag.KindInvalid) {
			t.Fatalf("SetDocumentMetadata(bad key) = %v; want Invalid", err)
		}
		if m, _ := db.GetDocumentMetadata(ctx, "t1", c.ID); len(m) != 0 {
			t.Fatalf("a refused write changed c: %v", m)
		}
		set(c, rag.Metadata{"n": 1})
		set(c, rag.Metadata{}) // empty removes
		if m, _ := db.GetDocumentMetadata(ctx, "t1", c.ID); len(m) != 0 {
			t.Fatal(fmt.Sprint("empty metadata did not remove the row: ", m))
		}
	})
}
