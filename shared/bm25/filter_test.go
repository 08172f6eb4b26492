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
