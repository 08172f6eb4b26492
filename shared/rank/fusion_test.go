package rank

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

func hits(ids ...string) []rag.Hit {
	out := make([]rag.Hit, len(ids))
	for i, id := range ids {
		out[i] = rag.Hit{ID: id, ChunkID: id}
	}
	return out
}

// Seed 004's worked example: three query variants, k = 60: DocA > DocB > DocC, DocA = 0.0484.
func TestRRFSeed004(t *testing.T) {
	got := RRF(60,
		Leg{hits("DocA", "DocB", "DocC"), 1},
		Leg{hits("DocB", "DocD", "DocA"), 1},
		Leg{hits("DocC", "DocA", "DocE"), 1},
	)
	var ids []string
	for _, h := range got {
		ids = append(ids, h.ID)
	}
	if !slices.Equal(ids[:3], []string{"DocA", "DocB", "DocC"}) {
		t.Fatalf("order %v", ids)
	}
	if math.Abs(float64(got[0].Score)-0.0484) > 0.00005 {
		t.Fatalf("DocA = %v, want 0.0484", got[0].Score)
	}
	// DocB = 1/62 + 1/61 = 0.03252 and DocC = 1/63 + 1/61 = 0.03226 (the seed prints 0.0323 and 0.0318)
	if math.Abs(float64(got[1].Score)-(1.0/62+1.0/61)) > 1e-6 || math.Abs(float64(got[2].Score)-(1.0/63+1.0/61)) > 1e-6 {
		t.Fatalf("DocB %v DocC %v", got[1].Score, got[2].Score)
	}
}

func TestWeightedRRF(t *testing.T) {
	// a precise query: BM25 0.7 and k 40 let the keyword leg's first hit win over the vector leg's
	got := RRF(40, Leg{hits("kw1", "both"), 0.7}, Leg{hits("vec1", "both"), 0.3})
	if got[0].ID != "both" || got[1].ID != "kw1" || got[2].ID != "vec1" {
		t.Fatalf("weighted order %v", got)
	}
	if got := RRF(60); len(got) != 0 {
		t.Fatal("no legs must give no hits")
	}
}

// refRRF is RRF as it was before its sized slices: maps of scores and first hits, sorted by the map.
func refRRF(k float64, legs ...Leg) []rag.Hit {
	if k <= 0 {
		k = 60
	}
	score := map[string]float64{}
	first := map[string]rag.Hit{}
	var order []string
	for _, l := range legs {
		for i, h := range l.Hits {
			id := key(h)
			if _, ok := first[id]; !ok {
				first[id] = h
				order = append(order, id)
			}
			score[id] += l.Weight / (k + float64(i+1))
		}
	}
	out := make([]rag.Hit, len(order))
	for i, id := range order {
		h := first[id]
		h.Score = float32(score[id])
		out[i] = h
	}
	slices.SortStableFunc(out, func(a, b rag.Hit) int {
		if c := cmp.Compare(score[key(b)], score[key(a)]); c != 0 {
			return c
		}
		return cmp.Compare(key(a), key(b))
	})
	return out
}

// TestRRFMatchesReference: on random legs (ids shared between legs and repeated within one, hits named
// by ChunkID or only by ID, ties) the fused list is exactly the reference's, fields and scores included.
func TestRRFMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		var legs []Leg
		for l := range r.IntN(4) {
			var hs []rag.Hit
			for range r.IntN(40) {
				id := fmt.Sprintf("c%d", r.IntN(30))
				h := rag.Hit{ChunkID: id, DocumentID: fmt.Sprintf("d%d", l), Score: r.Float32()}
				if r.IntN(4) == 0 {
					h = rag.Hit{ID: id, Score: r.Float32()}
				}
				hs = append(hs, h)
			}
			legs = append(legs, Leg{Hits: hs, Weight: []float64{1, 0.5, 0.7}[r.IntN(3)]})
		}
		k := float64(r.IntN(3) * 30)
		want := refRRF(k, legs...)
		if got := RRF(k, legs...); !reflect.DeepEqual(got, want) {
			t.Fatalf("RRF(%v, %+v)\n= %+v\nwant %+v", k, legs, got, want)
		}
	}
}
