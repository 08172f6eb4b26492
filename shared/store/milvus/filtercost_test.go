package milvus

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/milvus/milvusexpr"
)

// BenchmarkFilterExprVsIDs compares the two ways a question under a metadata filter passing 5,000 of
// 10,000 documents (one chunk each, 64-d) is searched on Milvus: the passing documents' ids (five
// searches of 1,000 ids each, merged: what the question paths sent before they carried the filter) and
// the filter as one expression over the rows' metadata. Both against the in-process server, in one
// run, alternating; it reports the bytes sent to Milvus per question and the time of each and their
// ratios, and checks both give the same hits:
//
//	go test ./shared/store/milvus -run '^$' -bench FilterExprVsIDs -benchtime 200x
//
// The fake scores every row in Go and parses each expression, so its times say what the request costs
// to build, send and parse, not what a real Milvus takes to search.
func BenchmarkFilterExprVsIDs(b *testing.B) {
	ctx := context.Background()
	const docs, dim, k = 10000, 64, 10
	srv := fakemilvus.Start(b)
	ix, err := Open(ctx, Options{Addr: srv.Addr(), Collection: "chunks", Dim: dim, StrongSearch: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ix.Close() })
	r := rand.New(rand.NewPCG(7, 23))
	vec := func() []float32 {
		v := make([]float32, dim)
		for d := range v {
			v[d] = float32(r.NormFloat64())
		}
		return v
	}
	// two metadata groups written with their mirrored copy at once (as SetDocumentMeta leaves them)
	groups := map[float64][]rag.VectorRecord{}
	var passing []string
	for i := range docs {
		doc := fmt.Sprintf("doc_%024d", i) // ids as long as docmind's
		year := float64(2024 + i%2)
		if year == 2025 {
			passing = append(passing, doc)
		}
		groups[year] = append(groups[year], rag.VectorRecord{ID: fmt.Sprintf("vec_%024d", i), Tenant: "t1", KBID: "kb_1", DocumentID: doc,
			ChunkID: fmt.Sprintf("chk_%024d", i), Vector: vec()})
	}
	for year, recs := range groups {
		m, _ := rag.Metadata{"year": year, "dept": "finance"}.Normalize()
		if err := ix.upsert(ctx, "bench", recs, milvusexpr.MetaJSON(m, 1)); err != nil {
			b.Fatal(err)
		}
	}
	f, err := rag.ParseMetaFilter([]byte(`{"key":"year","eq":2025}`))
	if err != nil {
		b.Fatal(err)
	}
	byIDs := rag.Filter{Tenant: "t1", KBIDs: []string{"kb_1"}, DocumentIDs: passing}
	byExpr := byIDs
	byExpr.Meta = f
	type leg struct {
		name  string
		f     rag.Filter
		bytes int
		took  time.Duration
	}
	legs := []*leg{{name: "ids", f: byIDs}, {name: "expr", f: byExpr}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		q := vec()
		var hits [2][]rag.Hit
		for j := range legs {
			l := legs[(i+j)%2] // alternate which goes first
			srv.ResetCalls()
			t := time.Now()
			h, err := ix.Search(ctx, q, k, l.f)
			l.took += time.Since(t)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range srv.Calls("Search") {
				l.bytes += c.Bytes
			}
			hits[(i+j)%2] = h
		}
		same := slices.EqualFunc(hits[0], hits[1], func(a, c rag.Hit) bool { return a.ID == c.ID })
		if !same {
			b.Fatalf("ids and expression disagree: %v / %v", hits[0], hits[1])
		}
	}
	b.StopTimer()
	if a, fb := ix.MetaSearches(); a != int64(b.N) || fb != 0 {
		b.Fatalf("%d of %d expression searches answered, %d fell back", a, b.N, fb)
	}
	n := float64(b.N)
	ids, expr := legs[0], legs[1]
	b.ReportMetric(float64(ids.bytes)/n, "ids-bytes/q")
	b.ReportMetric(float64(expr.bytes)/n, "expr-bytes/q")
	b.ReportMetric(float64(ids.bytes)/float64(expr.bytes), "bytes-ratio")
	b.ReportMetric(float64(ids.took.Microseconds())/n/1000, "ids-ms/q")
	b.ReportMetric(float64(expr.took.Microseconds())/n/1000, "expr-ms/q")
	b.ReportMetric(float64(ids.took)/float64(expr.took), "time-ratio")
}
