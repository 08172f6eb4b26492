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

// memSource is a Source over maps.
type memSource struct {
	kbs  []rag.KnowledgeBase
	docs map[string][]rag.Document // by kb id
	rows map[string][]rag.Chunk    // by document id
}

func (m memSource) ListKBs(context.Context, string) ([]rag.KnowledgeBase, error) { return m.kbs, nil }
func (m memSource) ListDocuments(_ context.Context, _, kb, _ string) ([]rag.Document, error) {
	return m.docs[kb], nil
}
func (m memSource) ListChunks(_ context.Context, _, doc string) ([]rag.Chunk, error) {
	return m.rows[doc], nil
}

// TestLoadMatchesIndexDocument: Load indexes in large batches what IndexDocument indexes a document at
// a time, parents' text as context included, across more than one batch.
func TestLoadMatchesIndexDocument(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	src := memSource{docs: map[string][]rag.Document{}, rows: map[string][]rag.Chunk{}}
	one := New(DefaultParams())
	for k := range 2 {
		kb := rag.KnowledgeBase{ID: fmt.Sprintf("k%d", k)}
		src.kbs = append(src.kbs, kb)
		for d := range 300 {
			doc := rag.Document{ID: fmt.Sprintf("d%d_%d", k, d), KBID: kb.ID}
			src.docs[kb.ID] = append(src.docs[kb.ID], doc)
			var rows []rag.Chunk
			for p := range 5 {
				parent := fmt.Sprintf("%s_p%d", doc.ID, p)
				rows = append(rows, rag.Chunk{ID: parent, KBID: kb.ID, DocumentID: doc.ID, Level: rag.LevelParent, Content: fmt.Sprintf("parent w%d w%d", r.IntN(500), r.IntN(500))})
				for c := range 10 {
					rows = append(rows, rag.Chunk{ID: fmt.Sprintf("%s_c%d", parent, c), KBID: kb.ID, DocumentID: doc.ID, ParentID: parent, Level: rag.LevelChild,
						Content: fmt.Sprintf("# T w%d\n\nw%d w%d w%d", r.IntN(500), r.IntN(500), r.IntN(500), r.IntN(500))})
				}
			}
			src.rows[doc.ID] = rows
			one.IndexDocument("t", doc.ID, rows)
		}
	}
	loaded := New(DefaultParams())
	if err := loaded.Load(context.Background(), src, "t"); err != nil {
		t.Fatal(err)
	}
	if loaded.Len() != one.Len() || loaded.Len() < loadBatch+1 {
		t.Fatalf("Len = %d, want %d (more than one batch of %d)", loaded.Len(), one.Len(), loadBatch)
	}
	for q := range 40 {
		query := fmt.Sprintf("w%d parent w%d", q*3, q*7)
		got, _ := loaded.Search(context.Background(), query, 10, rag.Filter{Tenant: "t"})
		want, _ := one.Search(context.Background(), query, 10, rag.Filter{Tenant: "t"})
		for i := range want {
			if i >= len(got) || got[i].ID != want[i].ID {
				t.Fatalf("%q: got %v, want %v", query, got, want)
			}
		}
	}
}
