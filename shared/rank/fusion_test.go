package rank

import (
	"math"
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
