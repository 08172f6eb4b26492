// Package rank orders and trims candidates after retrieval: weighted reciprocal-rank fusion of the
// keyword and vector legs, with weights from a rule-based query profile.
package rank

import (
	"sort"

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
	n := 0
	for _, l := range legs {
		n += len(l.Hits)
	}
	at := make(map[string]int32, n) // one sized map and slices: the chain fuses 150 hits a query
	hits := make([]rag.Hit, 0, n)
	score := make([]float64, 0, n)
	for _, l := range legs {
		for i, h := range l.Hits {
			id := key(h)
			j, ok := at[id]
			if !ok {
				j = int32(len(hits))
				at[id] = j
				hits = append(hits, h)
				score = append(score, 0)
			}
			score[j] += l.Weight / (k + float64(i+1))
		}
	}
	sort.Sort(fused{hits, score}) // in place: the hits and their scores move together
	for i := range hits {
		hits[i].Score = float32(score[i])
	}
	return hits
}

// fused sorts fused hits best first, ties by chunk id (ids are distinct, so the order is total).
type fused struct {
	hits  []rag.Hit
	score []float64
}

func (f fused) Len() int { return len(f.hits) }

func (f fused) Less(a, b int) bool {
	if f.score[a] != f.score[b] {
		return f.score[a] > f.score[b]
	}
	return key(f.hits[a]) < key(f.hits[b])
}

func (f fused) Swap(a, b int) {
	f.hits[a], f.hits[b] = f.hits[b], f.hits[a]
	f.score[a], f.score[b] = f.score[b], f.score[a]
}

func key(h rag.Hit) string {
	if h.ChunkID != "" {
		return h.ChunkID
	}
	return h.ID
}
