package memvec

import (
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

func BenchmarkProfBinary(b *testing.B) {
	const n = 50000
	ix, _ := NewWith(benchDim, Options{Quant: "binary", MinRows: 1})
	g := newEmbeddingLike(n, benchDim, 1)
	fillGen(b, ix, g, n)
	ix.CheckRecall()
	m, _, _ := ix.matcher(rag.Filter{Tenant: "t"})
	q := make([]float32, benchDim)
	g.next(q)
	q, _ = normalize(q)
	b.Run("binary", func(b *testing.B) {
		for b.Loop() {
			ix.searchBinary(q, 10, m, ix.binFactor)
		}
	})
	b.Run("int8", func(b *testing.B) {
		for b.Loop() {
			ix.searchQuant(q, 10, m)
		}
	})
}
