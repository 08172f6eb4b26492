package bm25

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// TestFilteredTopKIsFilteredRanking checks the search's filter against its definition: the top k inside
// a filter are the first k of the whole ranking that pass it (the search tests the filter only for
// candidates good enough to enter its heap).
func TestFilteredTopKIsFilteredRanking(t *testing.T) {
	ix := New(DefaultParams())
	r := rand.New(rand.NewPCG(5, 6))
	kbOf := map[string]string{}
	tenantOf := map[string]string{}
	for d := range 60 {
		tenant, kb, doc := []string{"t", "u"}[d%2], fmt.Sprintf("k%d", d%3), fmt.Sprintf("d%d", d)
		var rows []rag.Chunk
		for c := range 5 {
			text := ""
			for range 12 {
				text += fmt.Sprintf("w%d ", r.IntN(40))
			}
			id := fmt.Sprintf("%s_%d", doc, c)
			kbOf[id], tenantOf[id] = kb, tenant
			rows = append(rows, rag.Chunk{ID: id, Tenant: tenant, KBID: kb, DocumentID: doc, Level: rag.LevelChild, Content: text})
		}
		ix.IndexDocument(tenant, doc, rows)
	}
	ctx := context.Background()
	for q := range 30 {
		query := fmt.Sprintf("w%d w%d", q, (q*7)%40)
		for _, f := range []rag.Filter{{Tenant: "t"}, {Tenant: "u", KBIDs: []string{"k1"}}, {Tenant: "t", KBIDs: []string{"k0", "k2"}}} {
			var all []rag.Hit
			for _, tenant := range []string{"t", "u"} {
				h, err := ix.Search(ctx, query, 1000, rag.Filter{Tenant: tenant})
				if err != nil {
					t.Fatal(err)
				}
				all = append(all, h...)
			}
			slices.SortFunc(all, func(a, b rag.Hit) int {
				if a.Score != b.Score {
					if a.Score > b.Score {
						return -1
					}
					return 1
				}
				return map[bool]int{true: -1, false: 1}[a.ID < b.ID]
			})
			var want []string
			for _, h := range all {
				if tenantOf[h.ID] == f.Tenant && (f.KBIDs == nil || slices.Contains(f.KBIDs, kbOf[h.ID])) && len(want) < 4 {
					want = append(want, h.ID)
				}
			}
			got, err := ix.Search(ctx, query, 4, f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, h := range got {
				ids = append(ids, h.ID)
			}
			if !slices.Equal(ids, want) {
				t.Fatalf("query %q filter %+v: got %v, want %v", query, f, ids, want)
			}
		}
	}
}

// TestReplaceDocumentsMatchesFreshIndex replaces and removes documents of two tenants that share
// document ids, through several compactions, and checks the index answers as one built from the final
// documents alone.
func TestReplaceDocumentsMatchesFreshIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ix := New(DefaultParams())
	type key struct{ tenant, doc string }
	final := map[key][]rag.Chunk{}
	for op := range 400 {
		k := key{[]string{"t", "u"}[r.IntN(2)], fmt.Sprintf("d%d", r.IntN(12))}
		if r.IntN(5) == 0 {
			ix.RemoveDocument(k.tenant, k.doc)
			delete(final, k)
			continue
		}
		var rows []rag.Chunk
		for c := range 1 + r.IntN(40) {
			text := ""
			for range 8 {
				text += fmt.Sprintf("w%d ", r.IntN(60))
			}
			rows = append(rows, rag.Chunk{ID: fmt.Sprintf("%s_%d_%d", k.doc, op, c), Tenant: k.tenant, KBID: "k", DocumentID: k.doc, Level: rag.LevelChild, Content: text})
		}
		ix.IndexDocument(k.tenant, k.doc, rows)
		final[k] = rows
	}
	fresh := New(DefaultParams())
	for k, rows := range final {
		fresh.IndexDocument(k.tenant, k.doc, rows)
	}
	if ix.Len() != fresh.Len() {
		t.Fatalf("Len = %d, want %d", ix.Len(), fresh.Len())
	}
	ctx := context.Background()
	for q := range 60 {
		for _, tenant := range []string{"t", "u"} {
			query := fmt.Sprintf("w%d w%d", q, (q*11)%60)
			got, _ := ix.Search(ctx, query, 20, rag.Filter{Tenant: tenant})
			want, _ := fresh.Search(ctx, query, 20, rag.Filter{Tenant: tenant})
			if len(got) != len(want) {
				t.Fatalf("%s %q: %d hits, want %d", tenant, query, len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || got[i].Score != want[i].Score {
					t.Fatalf("%s %q hit %d: got %s %v, want %s %v", tenant, query, i, got[i].ID, got[i].Score, want[i].ID, want[i].Score)
				}
			}
		}
	}
}
