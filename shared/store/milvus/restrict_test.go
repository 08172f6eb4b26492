package milvus

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/milvus/milvusexpr"
)

// A metadata filter that passes more documents than one Milvus expression may list
// (milvusexpr.MaxFilterIDs) is searched in parts: the hits equal the embedded index's under the same
// restriction (the exact top k among the passing documents), and Count sums the parts.
func TestLongDocumentRestriction(t *testing.T) {
	ctx := context.Background()
	const docs, dim, k = 2*milvusexpr.MaxFilterIDs + 500, 8, 10
	ix, err := Open(ctx, Options{Addr: fakemilvus.Start(t).Addr(), Collection: "chunks", Dim: dim, StrongSearch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	ref := memvec.New(dim)
	r := rand.New(rand.NewPCG(23, 5))
	var recs []rag.VectorRecord
	var passing []string
	for i := range docs {
		doc := fmt.Sprintf("d%05d", i)
		if i%7 != 0 { // six in seven pass
			passing = append(passing, doc)
		}
		for j := range 2 {
			v := make([]float32, dim)
			var s float64
			for d := range v {
				v[d] = float32(r.NormFloat64())
				s += float64(v[d] * v[d])
			}
			for d := range v {
				v[d] /= float32(math.Sqrt(s))
			}
			recs = append(recs, rag.VectorRecord{ID: fmt.Sprintf("v%s-%d", doc, j), Tenant: "t1", KBID: "kb", DocumentID: doc, ChunkID: fmt.Sprintf("c%s-%d", doc, j), Vector: v})
		}
	}
	if err := ix.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := ref.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	f := rag.Filter{Tenant: "t1", KBIDs: []string{"kb"}, DocumentIDs: passing}
	if n := len(restrictionParts(f)); n != 3 {
		t.Fatalf("%d passing documents split into %d parts; want 3", len(passing), n)
	}
	for q := range 20 {
		query := recs[r.IntN(len(recs))].Vector
		got, err := ix.Search(ctx, query, k, f)
		if err != nil {
			t.Fatalf("query %d: %v", q, err)
		}
		want, err := ref.Search(ctx, query, k, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != k || len(want) != k {
			t.Fatalf("query %d: %d hits, reference %d; want %d", q, len(got), len(want), k)
		}
		for i := range got {
			if got[i].ChunkID != want[i].ChunkID {
				t.Fatalf("query %d hit %d: %s, the embedded index says %s", q, i, got[i].ChunkID, want[i].ChunkID)
			}
			if docIndex(got[i].DocumentID)%7 == 0 {
				t.Fatalf("query %d: hit from %s, which the filter excludes", q, got[i].DocumentID)
			}
		}
	}
	n, err := ix.Count(ctx, f)
	if err != nil || n != 2*len(passing) {
		t.Fatalf("Count = %d, %v; want %d", n, err, 2*len(passing))
	}
}

func docIndex(id string) int {
	var n int
	fmt.Sscanf(id, "d%d", &n)
	return n
}
