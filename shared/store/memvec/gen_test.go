package memvec

import (
	"math"
	"math/rand/v2"
)

// embeddingLike returns n vectors shaped like a 1,024-dimension embedding model's output rather than
// uniform noise: a shared mean direction (models' outputs all lean one way), clusters of about a
// thousand points (topics), and per-dimension spreads drawn log-normally over two orders of magnitude,
// so a few dimensions dominate. The same construction as the vector-int8 bench suite (shared/bench).
// Queries drawn from the same generator afterwards are fresh points of the same clusters.
type embeddingLike struct {
	dim     int
	spread  []float64
	mean    []float64
	centres [][]float64
	r       *rand.Rand
}

func newEmbeddingLike(n, dim int, seed uint64) *embeddingLike {
	r := rand.New(rand.NewPCG(seed, 7))
	g := &embeddingLike{dim: dim, spread: make([]float64, dim), mean: make([]float64, dim), r: r}
	for d := range dim {
		g.spread[d] = math.Exp(r.NormFloat64())
		g.mean[d] = 0.6 * r.NormFloat64()
	}
	g.centres = make([][]float64, max(1, n/1000))
	for i := range g.centres {
		g.centres[i] = make([]float64, dim)
		for d := range dim {
			g.centres[i][d] = r.NormFloat64()
		}
	}
	return g
}

// next writes the next vector into v.
func (g *embeddingLike) next(v []float32) {
	ce := g.centres[g.r.IntN(len(g.centres))]
	for d := range v {
		v[d] = float32((g.mean[d] + ce[d] + 0.7*g.r.NormFloat64()) * g.spread[d])
	}
}
