// Package rank orders and trims candidates after retrieval: weighted reciprocal-rank fusion of the
// keyword and vector legs, with weights from a rule-based query profile.
package rank

import (
	"cmp"
	"slices"

	"github.com/docmind/docmind/shared/rag"
)

// Leg is one ranked list with its fusion weight.
type Leg struct {
	Hits   []rag.Hit
	Weight float64
}

// RRF fuses ranked lists: score(chunk) = sum over legs of weight / (k + rank), rank starting at 1 (seed
// 004). Only ranks matter, so legs with incomparable scores fuse without calibration. The result is
// best first, ties by chunk id; each hit keeps the first leg's fields and the fused score.
func RRF(k float64, legs ...Leg) []rag.Hit {
	if k <= 0 {
		k = 60
	}
	score := map[string]float64{}
	first := map[string]rag.Hit{}
	var order []string
	for _, l := range legs {
		for i, h := range l.Hits {
			id := h.ChunkID
			if id == "" {
				id = h.ID
			}
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

func key(h rag.Hit) string {
	if h.ChunkID != "" {
		return h.ChunkID
	}
	return h.ID
}
