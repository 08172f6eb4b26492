package memvec

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// TestTiesRankByID searches rows that share a few vectors (lexical embeddings tie often), so the top k
// cuts through runs of equal scores: the kept rows must be the ties with the smallest ids, in order.
func TestTiesRankByID(t *testing.T) {
	const dim = 8
	r := rand.New(rand.NewPCG(9, 9))
	dirs := [][]float32{{1, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0, 0, 0}, {0, 1, 1, 0, 0, 0, 0, 0}}
	ix := New(dim)
	var recs []rag.VectorRecord
	score := map[string]int{}
	for i := range 600 {
		d := r.IntN(len(dirs))
		id := fmt.Sprintf("v%04d", r.IntN(1_000_000))
		if _, dup := score[id]; dup {
			continue
		}
		score[id] = d
		recs = append(recs, rag.VectorRecord{ID: id, Tenant: "t", KBID: "k", DocumentID: fmt.Sprint(i), Vector: dirs[d]})
	}
	if err := ix.Upsert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	q := []float32{1, 0.2, 0, 0, 0, 0, 0, 0}
	for _, k := range []int{1, 7, 50, 300} {
		got, err := ix.Search(context.Background(), q, k, rag.Filter{Tenant: "t"})
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(recs)
		slices.SortFunc(want, func(a, b rag.VectorRecord) int {
			if sa, sb := Dot(q, a.Vector)/norm(a.Vector), Dot(q, b.Vector)/norm(b.Vector); sa != sb {
				return cmp.Compare(sb, sa)
			}
			return cmp.Compare(a.ID, b.ID)
		})
		for i := range k {
			if got[i].ID != want[i].ID {
				t.Fatalf("k=%d: hit %d is %s, want %s", k, i, got[i].ID, want[i].ID)
			}
		}
	}
}

func norm(v []float32) float32 {
	n, _ := normalize(v)
	return Dot(v, v) / Dot(n, v)
}

// TestQuantisedTiesKeepBestScores: with the int8 scan, rows that tie are taken in row order rather than
// by id (the candidates are approximate), but the result is still the best scores, best first, ties by
// id among the rows returned.
func TestQuantisedTiesKeepBestScores(t *testing.T) {
	const dim = 8
	dirs := [][]float32{{1, 0, 0, 0, 0, 0, 0, 0}, {1, 1, 0, 0, 0, 0, 0, 0}, {0, 1, 1, 0, 0, 0, 0, 0}}
	ix, err := NewWith(dim, Options{Quant: "int8", MinRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	var recs []rag.VectorRecord
	for i := range 600 {
		recs = append(recs, rag.VectorRecord{ID: fmt.Sprintf("v%04d", (i*7919)%10000), Tenant: "t", KBID: "k", DocumentID: fmt.Sprint(i), Vector: dirs[i%3]})
	}
	if err := ix.Upsert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	q := []float32{1, 0.2, 0, 0, 0, 0, 0, 0}
	got, err := ix.Search(context.Background(), q, 7, rag.Filter{Tenant: "t"})
	if err != nil || len(got) != 7 {
		t.Fatalf("Search = %d hits, %v", len(got), err)
	}
	for i, h := range got {
		if h.DocumentID == "" || mustAtoi(t, h.DocumentID)%3 != 0 { // dirs[0] scores best for q
			t.Fatalf("hit %d (%s) is not one of the best-scoring rows", i, h.ID)
		}
		if i > 0 && (h.Score > got[i-1].Score || (h.Score == got[i-1].Score && h.ID < got[i-1].ID)) {
			t.Fatalf("hits out of order at %d: %+v", i, got)
		}
	}
}

func mustAtoi(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
