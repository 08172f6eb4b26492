package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// benchCorpus is the retrieve benchmarks' corpus: 10,000 documents of 10 chunks with random metadata
// (randMeta), 256-d vectors in the embedded vector index and 60 words of text per chunk in BM25.
type benchCorpus struct {
	db, scan *sqldb.DB // scan: a second handle with its metadata index off (the SQL scan)
	path     string
	kb       rag.KnowledgeBase
	vix      *memvec.Index
	kix      *bm25.Index
	recs     []rag.VectorRecord
	words    []string
}

func newBenchCorpus(b *testing.B) *benchCorpus {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "docmind.db")
	db, err := Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	scan, err := Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { scan.Close() })
	scan.SetMetaIndexLimit(0)
	c := &benchCorpus{db: db, scan: scan, path: path, kb: rag.KnowledgeBase{Tenant: "t1", Name: "kb"}}
	if err := db.CreateKB(ctx, &c.kb); err != nil {
		b.Fatal(err)
	}
	const docs, perDoc, dim = 10_000, 10, 256
	r := rand.New(rand.NewPCG(7, 7))
	c.vix = memvec.New(dim)
	c.kix = bm25.New(bm25.DefaultParams())
	c.words = make([]string, 5000)
	for i := range c.words {
		c.words[i] = fmt.Sprintf("w%d", i)
	}
	text := func() string {
		var sb []byte
		for range 60 {
			sb = append(append(sb, c.words[int(math.Abs(r.NormFloat64())*800)%len(c.words)]...), ' ')
		}
		return string(sb)
	}
	var chunks []bm25.Doc
	for i := range docs {
		d := rag.Document{Tenant: "t1", KBID: c.kb.ID, SourceURI: fmt.Sprintf("connector/b/%d", i), FileName: "d", Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &d); err != nil {
			b.Fatal(err)
		}
		if err := db.SetDocumentMetadata(ctx, "t1", c.kb.ID, d.ID, randMeta(r)); err != nil {
			b.Fatal(err)
		}
		for j := range perDoc {
			v := make([]float32, dim)
			for k := range v {
				v[k] = float32(r.NormFloat64())
			}
			id := fmt.Sprintf("c%d-%d", i, j)
			c.recs = append(c.recs, rag.VectorRecord{ID: "v" + id, Tenant: "t1", KBID: c.kb.ID, DocumentID: d.ID, ChunkID: id, Vector: v})
			chunks = append(chunks, bm25.Doc{ID: id, Tenant: "t1", KBID: c.kb.ID, DocumentID: d.ID, Content: text()})
		}
	}
	if err := c.vix.Upsert(ctx, c.recs); err != nil {
		b.Fatal(err)
	}
	c.kix.Add(chunks...)
	return c
}

// retrieve runs both legs, top 50 each, under flt.
func (c *benchCorpus) retrieve(b *testing.B, q []float32, text string, flt rag.Filter) {
	ctx := context.Background()
	if _, err := c.vix.Search(ctx, q, 50, flt); err != nil {
		b.Fatal(err)
	}
	if _, err := c.kix.Search(ctx, text, 50, flt); err != nil {
		b.Fatal(err)
	}
}

// query returns a random query: a stored vector and three words.
func (c *benchCorpus) query(r *rand.Rand) ([]float32, string) {
	return c.recs[r.IntN(len(c.recs))].Vector, c.words[r.IntN(200)] + " " + c.words[r.IntN(2000)] + " " + c.words[r.IntN(5000)]
}

func pctMs(ds []time.Duration, p int) float64 {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return float64(ds[min(len(ds)-1, len(ds)*p/100)].Microseconds()) / 1000
}

// BenchmarkMetaFilterNew measures what a filter never asked before adds to retrieve at 100k chunks
// (benchCorpus): every iteration draws a new random filter (randFilter, up to three levels of
// and/or/not over every kind of condition; one already drawn, or passing fewer than 100 documents,
// is drawn again), resolves it with MatchDocuments through the metadata index (its generation read
// included) and runs both legs restricted to the passing documents, beside the same query unfiltered
// (in alternating order). Nothing is cached for the filtered query: neither the index's answer nor
// the legs' restriction. Reports the p99 and p50 of each and their ratios from the same run (goal:
// filtered p99 at most 1.2x the unfiltered), and the median number of passing documents.
//
//	go test ./shared/store/sqlite -run '^$' -bench MetaFilterNew -benchtime 300x
func BenchmarkMetaFilterNew(b *testing.B) {
	c := newBenchCorpus(b)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	count, err := Open(c.path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer count.Close()
	seen := map[string]bool{}
	next := func() *rag.MetaFilter {
		for {
			raw, _ := json.Marshal(randFilter(r, 3))
			f, err := rag.ParseMetaFilter(raw)
			if err != nil {
				b.Fatal(err)
			}
			if seen[f.CacheKey()] {
				continue
			}
			seen[f.CacheKey()] = true
			// counted by another handle's metadata index (the SQL scan's garbage would land in the
			// timed queries), which leaves c.db's caches alone
			ids, err := count.MatchDocuments(ctx, "t1", []string{c.kb.ID}, f)
			if err != nil {
				b.Fatal(err)
			}
			if len(ids) >= 100 {
				return f
			}
		}
	}
	base := rag.Filter{Tenant: "t1", KBIDs: []string{c.kb.ID}}
	filtered := func(f *rag.MetaFilter, q []float32, text string) int {
		ids, err := c.db.MatchDocuments(ctx, "t1", []string{c.kb.ID}, f)
		if err != nil {
			b.Fatal(err)
		}
		flt := base
		flt.DocumentIDs = ids
		c.retrieve(b, q, text, flt)
		return len(ids)
	}
	var plain, withFilter []time.Duration
	var passing []int
	i := 0
	for b.Loop() {
		q, text := c.query(r)
		f := next() // drawn outside the timed parts
		if i%2 == 0 {
			t0 := time.Now()
			c.retrieve(b, q, text, base)
			t1 := time.Now()
			passing = append(passing, filtered(f, q, text))
			plain, withFilter = append(plain, t1.Sub(t0)), append(withFilter, time.Since(t1))
		} else {
			t0 := time.Now()
			passing = append(passing, filtered(f, q, text))
			t1 := time.Now()
			c.retrieve(b, q, text, base)
			withFilter, plain = append(withFilter, t1.Sub(t0)), append(plain, time.Since(t1))
		}
		i++
	}
	slices.Sort(passing)
	pu, pf := pctMs(plain, 99), pctMs(withFilter, 99)
	b.ReportMetric(pu, "unfiltered-p99-ms")
	b.ReportMetric(pf, "new-filter-p99-ms")
	b.ReportMetric(pf/pu, "new/unfiltered-p99")
	b.ReportMetric(pctMs(withFilter, 50)/pctMs(plain, 50), "new/unfiltered-p50")
	b.ReportMetric(float64(passing[len(passing)/2]), "median-passing-docs")
}
