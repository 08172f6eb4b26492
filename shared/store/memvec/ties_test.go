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
