package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// metaCorpus is n documents with random metadata of every kind (strings, numbers, dates, string
// lists, missing keys), each with one chunk in the vector index and the keyword index.
type metaCorpus struct {
	kb   rag.KnowledgeBase
	ids  []string
	meta map[string]rag.Metadata
	gone map[string]bool // marked deleted
	vecs map[string][]float32
	vix  *memvec.Index
	kix  *bm25.Index
	// db answers with its metadata index; other is a second handle on the same file (another
	// process), scan one with its index off (the SQL scan)
	db, other, scan *sqldb.DB
}

var (
	propSources = []string{"web", "confluence", "sharepoint", "gdrive"}
	propLabels  = []string{"policy", "hr", "legal", "eng", "draft", "faq"}
	propAuthors = []string{"ann", "bob", "cy", "dee", "eve"}
)

const propDim = 16

func randMeta(r *rand.Rand) rag.Metadata {
	m := rag.Metadata{"source": propSources[r.IntN(len(propSources))], "year": float64(2018 + r.IntN(9))}
	if r.IntN(4) > 0 {
		m["author"] = propAuthors[r.IntN(len(propAuthors))]
	}
	if r.IntN(3) > 0 {
		var ls []string
		for _, l := range propLabels {
			if r.IntN(3) == 0 {
				ls = append(ls, l)
			}
		}
		m["labels"] = ls
	}
	if r.IntN(5) > 0 {
		m["modified"] = fmt.Sprintf("%d-%02d-%02d", 2020+r.IntN(6), 1+r.IntN(12), 1+r.IntN(28))
	}
	if r.IntN(2) == 0 {
		m["score"] = math.Round(r.Float64()*1000) / 10
	}
	return m
}

// randFilter builds a random filter of the JSON form, up to depth levels of and/or/not.
func randFilter(r *rand.Rand, depth int) map[string]any {
	if depth > 0 && r.IntN(3) == 0 {
		switch r.IntN(3) {
		case 0, 1:
			op := []string{"and", "or"}[r.IntN(2)]
			var subs []any
			for range 1 + r.IntN(3) {
				subs = append(subs, randFilter(r, depth-1))
			}
			return map[string]any{op: subs}
		default:
			return map[string]any{"not": randFilter(r, depth-1)}
		}
	}
	switch r.IntN(8) {
	case 0:
		return map[string]any{"key": "source", "eq": propSources[r.IntN(len(propSources))]}
	case 1:
		return map[string]any{"key": "labels", "in": []any{propLabels[r.IntN(len(propLabels))], propLabels[r.IntN(len(propLabels))]}}
	case 2:
		lo := 2018 + r.IntN(9)
		return map[string]any{"key": "year", "gte": lo, "lt": lo + 1 + r.IntN(4)}
	case 3:
		return map[string]any{"key": "modified", []string{"gt", "gte", "lt", "lte"}[r.IntN(4)]: fmt.Sprintf("%d-%02d-01", 2020+r.IntN(6), 1+r.IntN(12))}
	case 4:
		return map[string]any{"key": []string{"author", "labels", "score", "modified"}[r.IntN(4)], "exists": r.IntN(2) == 0}
	case 5:
		return map[string]any{"key": "score", []string{"gt", "lte"}[r.IntN(2)]: math.Round(r.Float64()*1000) / 10}
	case 6:
		return map[string]any{"key": "author", "in": []any{propAuthors[r.IntN(len(propAuthors))], "nobody"}}
	default:
		return map[string]any{"key": "year", "eq": 2018 + r.IntN(9)}
	}
}

func newMetaCorpus(t *testing.T, n int) *metaCorpus {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "docmind.db")
	var dbs [3]*sqldb.DB
	for i := range dbs {
		db, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	db := dbs[0]
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	dbs[2].SetMetaIndexLimit(0)
	c := &metaCorpus{kb: rag.KnowledgeBase{Tenant: "t1", Name: "kb"}, meta: map[string]rag.Metadata{}, gone: map[string]bool{},
		vecs: map[string][]float32{}, vix: memvec.New(propDim), kix: bm25.New(bm25.DefaultParams()), db: db, other: dbs[1], scan: dbs[2]}
	if err := db.CreateKB(ctx, &c.kb); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(23, 1))
	var recs []rag.VectorRecord
	var docs []bm25.Doc
	for i := range n {
		d := rag.Document{Tenant: "t1", KBID: c.kb.ID, SourceURI: fmt.Sprintf("connector/p/%d", i), FileName: "d", Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
		m := randMeta(r)
		if err := db.SetDocumentMetadata(ctx, "t1", c.kb.ID, d.ID, m); err != nil {
			t.Fatal(err)
		}
		norm, _ := m.Normalize()
		c.ids, c.meta[d.ID] = append(c.ids, d.ID), norm
		v := make([]float32, propDim)
		var s float64
		for j := range v {
			v[j] = float32(r.NormFloat64())
			s += float64(v[j] * v[j])
		}
		for j := range v {
			v[j] /= float32(math.Sqrt(s))
		}
		c.vecs[d.ID] = v
		recs = append(recs, rag.VectorRecord{ID: "v" + d.ID, Tenant: "t1", KBID: c.kb.ID, DocumentID: d.ID, ChunkID: "c" + d.ID, Vector: v})
		// every chunk holds "quokka": a keyword search for it touches every document, so a filter applied
		// after ranking would return fewer than k hits
		docs = append(docs, bm25.Doc{ID: "c" + d.ID, Tenant: "t1", KBID: c.kb.ID, DocumentID: d.ID,
			Content: fmt.Sprintf("quokka %s %d", propLabels[r.IntN(len(propLabels))], r.IntN(50))})
	}
	if err := c.vix.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	c.kix.Add(docs...)
	return c
}

// TestMetaFilterProperty checks 1,000 random filters over 10,000 documents against a brute-force
// scan: MatchDocuments through the in-memory metadata index returns exactly the live documents whose
// metadata passes, on every filter, while metadata changes under it (every 50 filters 20 documents
// get new metadata, half through the same handle, applied in place, half through a second handle on
// the same database, which the index must notice, and one document is marked deleted); the SQL scan
// agrees on every tenth filter (each call decodes all 10,000 rows); the embedded vector index
// restricted to the passing documents returns exactly the brute-force top 10 among them (the filter
// applies before ranking); BM25 returns min(10, passing) hits, all passing.
func TestMetaFilterProperty(t *testing.T) {
	n, filters := 10_000, 1_000
	if testing.Short() {
		n, filters = 1_000, 100
	}
	c := newMetaCorpus(t, n)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(23, 2))
	nonEmpty := 0
	brute := func(f *rag.MetaFilter) []string {
		var want []string
		for _, id := range c.ids {
			if !c.gone[id] && f.Match(c.meta[id]) {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		return want
	}
	var recent []*rag.MetaFilter // the last filters asked: their answers are cached until a write
	for i := range filters {
		if i > 0 && i%50 == 0 {
			c.mutate(t, r)
			for _, f := range recent {
				if got, err := c.db.MatchDocuments(ctx, "t1", []string{c.kb.ID}, f); err != nil || !slices.Equal(got, brute(f)) {
					t.Fatalf("filter %s asked again after metadata changed: %d documents, brute force %d (%v)", f.CacheKey(), len(got), len(brute(f)), err)
				}
			}
			recent = recent[:0]
		}
		raw, _ := json.Marshal(randFilter(r, 3))
		f, err := rag.ParseMetaFilter(raw)
		if err != nil {
			t.Fatalf("filter %d %s: %v", i, raw, err)
		}
		want := brute(f)
		var answer []string
		for range 2 { // evaluated, then answered from the index's cache
			got, err := c.db.MatchDocuments(ctx, "t1", []string{c.kb.ID}, f)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("filter %d %s: MatchDocuments (index) gave %d documents, brute force %d (%v)", i, raw, len(got), len(want), err)
			}
			answer = got
		}
		recent = append(recent, f)
		if i%10 == 0 { // the SQL scan decodes every document's metadata: every tenth filter is enough
			got, err := c.scan.MatchDocuments(ctx, "t1", []string{c.kb.ID}, f)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("filter %s: MatchDocuments (scan) gave %d documents, brute force %d (%v)", raw, len(got), len(want), err)
			}
		}
		if len(want) == 0 {
			continue
		}
		nonEmpty++
		q := c.vecs[c.ids[r.IntN(len(c.ids))]]
		// the index's own answer, as the question paths pass it: the legs read it from its bitset over
		// the shared document numbering (rag.RegisterRestriction) rather than id by id
		flt := rag.Filter{Tenant: "t1", KBIDs: []string{c.kb.ID}, DocumentIDs: answer}
		hits, err := c.vix.Search(ctx, q, 10, flt)
		if err != nil {
			t.Fatal(err)
		}
		type scored struct {
			id string
			s  float32
		}
		var all []scored
		for _, id := range want {
			var dot float32
			for j, x := range c.vecs[id] {
				dot += x * q[j]
			}
			all = append(all, scored{id, dot})
		}
		sort.Slice(all, func(a, b int) bool { return all[a].s > all[b].s })
		top := min(10, len(all))
		if len(hits) != top {
			t.Fatalf("filter %s: vector search returned %d hits; want %d", raw, len(hits), top)
		}
		for j := range top {
			if hits[j].DocumentID != all[j].id {
				t.Fatalf("filter %s: vector hit %d is %s; brute force says %s", raw, j, hits[j].DocumentID, all[j].id)
			}
		}
		kh, err := c.kix.Search(ctx, "quokka", 10, flt)
		if err != nil {
			t.Fatal(err)
		}
		if len(kh) != top {
			t.Fatalf("filter %s: keyword search returned %d hits; want %d", raw, len(kh), top)
		}
		for _, h := range kh {
			if !f.Match(c.meta[h.DocumentID]) {
				t.Fatalf("filter %s: keyword hit %s does not pass", raw, h.DocumentID)
			}
		}
	}
	t.Logf("%d filters over %d documents; %d matched at least one document; index built %d times", filters, n, nonEmpty, c.db.MetaIndexBuilds())
	if b := c.db.MetaIndexBuilds(); b < 2 || b > int64(filters/50)+1 {
		t.Fatalf("the index was built %d times: want a rebuild per batch of the other handle's writes, no more", b)
	}
	if nonEmpty < filters/4 {
		t.Fatalf("only %d of %d random filters matched anything: the generator tests too little", nonEmpty, filters)
	}
}

// mutate gives 20 random documents new metadata, half through the corpus's own handle (the index
// updates in place), half through the other handle (the index must see the generation move), and
// marks one document deleted through the other handle.
func (c *metaCorpus) mutate(t *testing.T, r *rand.Rand) {
	ctx := context.Background()
	for j := range 20 {
		id := c.ids[r.IntN(len(c.ids))]
		m := randMeta(r)
		db := c.db
		if j%2 == 1 {
			db = c.other
		}
		if err := db.SetDocumentMetadata(ctx, "t1", c.kb.ID, id, m); err != nil {
			t.Fatal(err)
		}
		c.meta[id], _ = m.Normalize()
	}
	id := c.ids[r.IntN(len(c.ids))]
	d, err := c.other.GetDocument(ctx, "t1", id)
	if err != nil {
		t.Fatal(err)
	}
	d.Status = rag.StatusDeleted
	if err := c.other.UpdateDocument(ctx, &d); err != nil {
		t.Fatal(err)
	}
	c.gone[id] = true
}

// BenchmarkMetaFilterRetrieve measures what a metadata filter adds to retrieve at 100k chunks
// (10,000 documents of 10 chunks, 256-d vectors, both legs: the embedded vector index and BM25, top
// 50 each). Each iteration runs one query unfiltered and the same query under a filter (three filters
// in turn, passing about 8%, 30% and 90% of the documents): the filter resolved by MatchDocuments
// through the in-memory metadata index (including its one SQL read of the generation), then both legs
// restricted to the passing documents. It reports the p99 of each and their ratio (goal: at most
// 1.2), all from the same run; resolve-p99-ms is the MatchDocuments part of the filtered retrieve,
// scan-p99-ms the filtered retrieve with the filter resolved by the SQL scan instead (every tenth
// iteration). The three filters are asked again and again, as a page's chips are: their resolved sets
// and the legs' bitsets are cached; new-filter/unfiltered-p50 is a filter never asked before (every
// tenth iteration, the broad filter minus the documents of one score), which pays for resolving and
// translating its ~8,400 documents.
//
//	go test ./shared/store/sqlite -run '^$' -bench MetaFilterRetrieve -benchtime 300x
func BenchmarkMetaFilterRetrieve(b *testing.B) {
	c := newBenchCorpus(b)
	ctx := context.Background()
	db, scan, kb, recs, words := c.db, c.scan, c.kb, c.recs, c.words
	r := rand.New(rand.NewPCG(7, 8))
	var filters []*rag.MetaFilter
	for _, raw := range []string{
		`{"and":[{"key":"source","eq":"confluence"},{"key":"year","gte":2024}]}`,
		`{"or":[{"key":"labels","in":["hr","legal"]},{"key":"modified","gte":"2025-06-01"}]}`,
		`{"not":{"key":"author","eq":"ann"}}`,
	} {
		f, _ := rag.ParseMetaFilter([]byte(raw))
		ids, err := db.MatchDocuments(ctx, "t1", []string{kb.ID}, f)
		if err != nil || len(ids) == 0 {
			b.Fatal(raw, len(ids), err)
		}
		b.Logf("filter %s passes %d of 10,000 documents", raw, len(ids))
		filters = append(filters, f)
	}
	base := rag.Filter{Tenant: "t1", KBIDs: []string{kb.ID}}
	retrieve := func(q []float32, text string, flt rag.Filter) { c.retrieve(b, q, text, flt) }
	filtered := func(store *sqldb.DB, f *rag.MetaFilter, q []float32, text string) time.Duration {
		t0 := time.Now()
		ids, err := store.MatchDocuments(ctx, "t1", []string{kb.ID}, f)
		if err != nil {
			b.Fatal(err)
		}
		resolved := time.Since(t0)
		flt := base
		flt.DocumentIDs = ids
		retrieve(q, text, flt)
		return resolved
	}
	// a filter never asked before (the broad one minus the documents of one score, a new score each
	// time): nothing cached, neither the resolved set nor the legs' translation of it
	fresh := func(i int) *rag.MetaFilter {
		raw := fmt.Sprintf(`{"and":[{"not":{"key":"author","eq":"ann"}},{"not":{"key":"score","eq":%.1f}}]}`, float64(i/10%1000)/10)
		f, err := rag.ParseMetaFilter([]byte(raw))
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	var plain, withFilter, withScan, withFresh, resolve []time.Duration
	i := 0
	for b.Loop() {
		q := recs[r.IntN(len(recs))].Vector
		text := words[r.IntN(200)] + " " + words[r.IntN(2000)] + " " + words[r.IntN(5000)]
		f := filters[i%len(filters)]
		var res time.Duration
		if i%2 == 0 { // alternate which runs first, so neither always pays for the other's garbage
			t0 := time.Now()
			retrieve(q, text, base)
			t1 := time.Now()
			res = filtered(db, f, q, text)
			plain, withFilter = append(plain, t1.Sub(t0)), append(withFilter, time.Since(t1))
		} else {
			t0 := time.Now()
			res = filtered(db, f, q, text)
			t1 := time.Now()
			retrieve(q, text, base)
			withFilter, plain = append(withFilter, t1.Sub(t0)), append(plain, time.Since(t1))
		}
		resolve = append(resolve, res)
		if i%10 == 0 {
			t2 := time.Now()
			filtered(scan, f, q, text)
			withScan = append(withScan, time.Since(t2))
		}
		if i%10 == 5 { // away from the scan, whose garbage the collector is still clearing after it
			t2 := time.Now()
			filtered(db, fresh(i), q, text)
			withFresh = append(withFresh, time.Since(t2))
		}
		i++
	}
	pct := func(ds []time.Duration, p int) float64 {
		slices.Sort(ds)
		return float64(ds[min(len(ds)-1, len(ds)*p/100)].Microseconds()) / 1000
	}
	p99 := func(ds []time.Duration) float64 { return pct(ds, 99) }
	pu, pf := p99(plain), p99(withFilter)
	b.ReportMetric(pu, "unfiltered-p99-ms")
	b.ReportMetric(pf, "filtered-p99-ms")
	b.ReportMetric(pf/pu, "filtered/unfiltered-p99")
	b.ReportMetric(pct(withFilter, 50)/pct(plain, 50), "filtered/unfiltered-p50")
	b.ReportMetric(p99(withScan), "scan-p99-ms")
	b.ReportMetric(pct(withFresh, 50)/pct(plain, 50), "new-filter/unfiltered-p50")
	b.ReportMetric(p99(resolve), "resolve-p99-ms")
}
