package retrieve

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// fastReranker stands in for a cross-encoder API: it scores by position, so the benchmark measures
// our orchestration, not a network call.
type fastReranker struct{}

func (fastReranker) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	out := make([]float64, len(docs))
	for i := range docs {
		out[i] = 0.95 - 0.02*float64(i)
	}
	return out, nil
}

// benchCorpus builds docs documents of 50 child chunks (and 10 parents each) on the embedded adapters
// (SQLite file, memvec with the default int8 scan, in-memory BM25, offline embedder at 512 dimensions),
// and returns the chain over them (a fake reranker), its filter and up to 200 queries drawn from the
// chunks' own words.
func benchCorpus(tb testing.TB, docs int) (*Retriever, *sqldb.DB, rag.Filter, []string) {
	const perDoc, dim = 50, 512
	r := rand.New(rand.NewPCG(11, 12))
	vocab := make([]string, 20000)
	for i := range vocab {
		var w strings.Builder
		for range 4 + r.IntN(6) {
			w.WriteByte(byte('a' + r.IntN(26)))
		}
		vocab[i] = w.String()
	}
	zipf := rand.NewZipf(r, 1.1, 2, uint64(len(vocab)-1))
	sentence := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(ws, " ") + "."
	}
	db, err := sqlite.Open(filepath.Join(tb.TempDir(), "docmind.db"), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	ctx := context.Background()
	db.Migrate(ctx)
	kb := rag.KnowledgeBase{Tenant: "t", Name: "bench"}
	db.CreateKB(ctx, &kb)
	vec, _ := memvec.NewWith(dim, memvec.Options{Quant: "int8"}) // the scan the offline embedder gets: the default (binary) fails its recall check on these vectors and falls back to int8
	kw := bm25.New(bm25.DefaultParams())
	emb := embed.NewOffline(dim)
	var queries []string
	every := max(1, docs*perDoc/200) // about 200 queries spread over the corpus (one in 500 chunks at 100k)
	for d := range docs {
		doc := rag.Document{Tenant: "t", KBID: kb.ID, SourceURI: fmt.Sprint(d), FileName: fmt.Sprintf("doc%d.md", d), Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &doc); err != nil {
			tb.Fatal(err)
		}
		var rows []rag.Chunk
		var texts []string
		for p := range perDoc / 5 {
			parentID := fmt.Sprintf("p%d_%d", d, p)
			var body []string
			for c := range 5 {
				t := fmt.Sprintf("# Doc %d\n## Section %d\n\n%s %s", d, p, sentence(25), sentence(30))
				body = append(body, t)
				id := fmt.Sprintf("c%d_%d_%d", d, p, c)
				rows = append(rows, rag.Chunk{ID: id, Tenant: "t", KBID: kb.ID, DocumentID: doc.ID, ParentID: parentID, Level: rag.LevelChild,
					Index: p*5 + c, Content: t, ContentHash: strings.Repeat("0", 64), VectorID: "v" + id, ContentType: rag.ContentGeneral})
				texts = append(texts, t)
				if len(queries) < 200 && r.IntN(every) == 0 {
					queries = append(queries, strings.Join(strings.Fields(t)[6:12], " "))
				}
			}
			rows = append(rows, rag.Chunk{ID: parentID, Tenant: "t", KBID: kb.ID, DocumentID: doc.ID, Level: rag.LevelParent, Index: p,
				Content: strings.Join(body, "\n\n"), ContentHash: strings.Repeat("1", 64), ContentType: rag.ContentGeneral})
		}
		if err := db.ApplyChunks(ctx, "t", doc.ID, rows, nil); err != nil {
			tb.Fatal(err)
		}
		vs, _ := emb.Embed(ctx, texts)
		recs := make([]rag.VectorRecord, len(texts))
		for i := range texts {
			c := rows[i+i/5] // children are interleaved with one parent per 5
			recs[i] = rag.VectorRecord{ID: c.VectorID, Tenant: "t", KBID: kb.ID, DocumentID: doc.ID, ChunkID: c.ID, Vector: vs[i]}
		}
		vec.Upsert(ctx, recs)
		kw.IndexDocument("t", doc.ID, rows)
	}
	rt := &Retriever{Keyword: kw, Vectors: vec, Embedder: emb, Chunks: db, Reranker: fastReranker{}, Options: DefaultOptions()}
	return rt, db, rag.Filter{Tenant: "t", KBIDs: []string{kb.ID}}, queries
}

// BenchmarkRetrieve100k is the retrieval stage at 100,000 child chunks (benchCorpus): BM25 + vector +
// fusion + rerank (fake) + filter + MMR + parent expansion + compression + grade, one query at a time.
// It reports p50, p99 and the CPU per query (every thread's).
func BenchmarkRetrieve100k(b *testing.B) {
	rt, _, f, queries := benchCorpus(b, 2000)
	ctx := context.Background()
	for _, q := range queries[:10] { // warm-up
		rt.Retrieve(ctx, Query{Text: q, Filter: f})
	}
	var lat []time.Duration
	i := 0
	cpu := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		res, err := rt.Retrieve(ctx, Query{Text: queries[i%len(queries)], Filter: f})
		lat = append(lat, time.Since(start))
		if err != nil || len(res.Evidence) == 0 {
			b.Fatalf("query %d: %v", i, err)
		}
		i++
	}
	b.StopTimer()
	cpu = cpuTime() - cpu // every thread's: on a shared machine the wall times say mostly how busy it was
	slices.Sort(lat)
	b.ReportMetric(float64(rt.Keyword.(*bm25.Index).Len()), "chunks")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(len(lat)), "cpu_ms/query")
}

// BenchmarkRetrieve100kParallel is BenchmarkRetrieve100k with queries from every core at once
// (b.RunParallel): a lock that serialises queries shows as ns/op no better than the serial benchmark's.
// It reports the CPU per query too.
func BenchmarkRetrieve100kParallel(b *testing.B) {
	rt, _, f, queries := benchCorpus(b, 2000)
	ctx := context.Background()
	for _, q := range queries[:10] {
		rt.Retrieve(ctx, Query{Text: q, Filter: f})
	}
	var next atomic.Int64
	cpu := cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			q := queries[int(next.Add(1))%len(queries)]
			if res, err := rt.Retrieve(ctx, Query{Text: q, Filter: f}); err != nil || len(res.Evidence) == 0 {
				b.Errorf("%q: %v", q, err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu_ms/query")
}
