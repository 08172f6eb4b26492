package sqlite

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memvec"
)

// metaCorpus is n documents with random metadata of every kind (strings, numbers, dates, string
// lists, missing keys), each with one chunk in the vector index and the keyword index.
type metaCorpus struct {
	kb    rag.KnowledgeBase
	ids   []string
	meta  map[string]rag.Metadata
	vecs  map[string][]float32
	vix   *memvec.Index
	kix   *bm25.Index
	store interface {
		MatchDocuments(ctx context.Context, tenant string, kbIDs []string, f *rag.MetaFilter) ([]string, error)
	}
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
	db, err := Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c := &metaCorpus{kb: rag.KnowledgeBase{Tenant: "t1", Name: "kb"}, meta: map[string]rag.Metadata{}, vecs: map[string][]float32{},
		vix: memvec.New(propDim), kix: bm25.New(bm25.DefaultParams()), store: db}
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
// scan: MatchDocuments returns exactly the documents whose metadata passes (checked on every tenth
// filter: each call scans and decodes all 10,000 rows); the embedded vector index
// restricted to them returns exactly the brute-force top 10 among them (the filter applies before
// ranking); BM25 returns min(10, passing) hits, all passing.
func TestMetaFilterProperty(t *testing.T) {
	n, filters := 10_000, 1_000
	if testing.Short() {
		n, filters = 1_000, 100
	}
	c := newMetaCorpus(t, n)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(23, 2))
	nonEmpty := 0
	for i := range filters {
		raw, _ := json.Marshal(randFilter(r, 3))
		f, err := rag.ParseMetaFilter(raw)
		if err != nil {
			t.Fatalf("filter %d %s: %v", i, raw, err)
		}
		var want []string
		for _, id := range c.ids {
			if f.Match(c.meta[id]) {
				want = append(want, id)
			}
		}
		slices.Sort(want)
		if i%10 == 0 { // the SQL scan decodes every document's metadata: every tenth filter is enough
			got, err := c.store.MatchDocuments(ctx, "t1", []string{c.kb.ID}, f)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("filter %s: MatchDocuments gave %d documents, brute force %d (%v)", raw, len(got), len(want), err)
			}
		}
		if len(want) == 0 {
			continue
		}
		nonEmpty++
		q := c.vecs[c.ids[r.IntN(len(c.ids))]]
		flt := rag.Filter{Tenant: "t1", KBIDs: []string{c.kb.ID}, DocumentIDs: want}
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
	t.Logf("%d filters over %d documents; %d matched at least one document", filters, n, nonEmpty)
	if nonEmpty < filters/4 {
		t.Fatalf("only %d of %d random filters matched anything: the generator tests too little", nonEmpty, filters)
	}
}

// BenchmarkMetaFilterRetrieve measures what a metadata filter adds to the vector leg at 100k chunks
// (10,000 documents of 10 chunks): unfiltered search, search restricted to a filter's documents, and
// the SQL resolution of the filter (MatchDocuments) that precedes it. Compare the sub-benchmarks of
// one run; the goal is filtered within 20% of unfiltered.
//
//	go test ./shared/store/sqlite -run '^$' -bench MetaFilterRetrieve -benchtime 20x
func BenchmarkMetaFilterRetrieve(b *testing.B) {
	ctx := context.Background()
	db, err := Open(":memory:", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "kb"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		b.Fatal(err)
	}
	const docs, perDoc, dim = 10_000, 10, 256
	r := rand.New(rand.NewPCG(7, 7))
	vix := memvec.New(dim)
	var recs []rag.VectorRecord
	for i := range docs {
		d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: fmt.Sprintf("connector/b/%d", i), FileName: "d", Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &d); err != nil {
			b.Fatal(err)
		}
		if err := db.SetDocumentMetadata(ctx, "t1", kb.ID, d.ID, randMeta(r)); err != nil {
			b.Fatal(err)
		}
		for j := range perDoc {
			v := make([]float32, dim)
			for k := range v {
				v[k] = float32(r.NormFloat64())
			}
			recs = append(recs, rag.VectorRecord{ID: fmt.Sprintf("v%d-%d", i, j), Tenant: "t1", KBID: kb.ID, DocumentID: d.ID, ChunkID: fmt.Sprintf("c%d-%d", i, j), Vector: v})
		}
	}
	if err := vix.Upsert(ctx, recs); err != nil {
		b.Fatal(err)
	}
	q := recs[0].Vector
	f, _ := rag.ParseMetaFilter([]byte(`{"and":[{"key":"source","eq":"confluence"},{"key":"year","gte":2024}]}`))
	ids, err := db.MatchDocuments(ctx, "t1", []string{kb.ID}, f)
	if err != nil || len(ids) == 0 {
		b.Fatal(len(ids), err)
	}
	b.Logf("filter passes %d of %d documents", len(ids), docs)
	base := rag.Filter{Tenant: "t1", KBIDs: []string{kb.ID}}
	b.Run("unfiltered", func(b *testing.B) {
		for b.Loop() {
			vix.Search(ctx, q, 50, base)
		}
	})
	b.Run("restricted", func(b *testing.B) {
		flt := base
		flt.DocumentIDs = ids
		for b.Loop() {
			vix.Search(ctx, q, 50, flt)
		}
	})
	b.Run("resolve+restricted", func(b *testing.B) {
		for b.Loop() {
			got, _ := db.MatchDocuments(ctx, "t1", []string{kb.ID}, f)
			flt := base
			flt.DocumentIDs = got
			vix.Search(ctx, q, 50, flt)
		}
	})
}
