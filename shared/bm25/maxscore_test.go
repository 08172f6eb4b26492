package bm25

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// prunedIndex is a random index for the pruning tests: Zipf-distributed words (a few in most chunks,
// most in a few), two tenants, three knowledge bases, forty documents, a parent context on some chunks,
// titles on others, and some chunks removed (dead entries left in the postings) or replaced.
func prunedIndex(t *testing.T, p Params, n int, seed uint64) (*Index, []string) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, seed+7))
	words := make([]string, 600)
	for i := range words {
		words[i] = fmt.Sprintf("w%03d", i)
	}
	z := rand.NewZipf(r, 1.2, 3, uint64(len(words)-1))
	text := func(m int) string {
		var sb strings.Builder
		for range m {
			sb.WriteString(words[z.Uint64()])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	ix := New(p)
	var docs []Doc
	for i := range n {
		d := Doc{ID: fmt.Sprintf("c%05d", i), Tenant: []string{"t", "u"}[i%5/4], KBID: fmt.Sprintf("k%d", i%3),
			DocumentID: fmt.Sprintf("d%02d", i%40), Content: text(5 + r.IntN(40))}
		if i%4 == 0 {
			d.Content = "# " + text(3) + "\n\n" + d.Content
		}
		if i%3 == 0 {
			d.Context = text(20 + r.IntN(60))
		}
		docs = append(docs, d)
	}
	ix.Add(docs...)
	for i := 0; i < n; i += 17 {
		ix.Remove(docs[i].Tenant, docs[i].ID)
	}
	for i := 5; i < n; i += 29 { // replaced: the old entry dead, a new one at the end
		d := docs[i]
		d.Content = text(10)
		ix.Add(d)
	}
	return ix, words
}

// TestPrunedTopIsExhaustiveTop: the MaxScore top k equals the exhaustive one (the same entries, order
// and float32 scores) on random queries of rare and common words, repeated words, unknown words and
// RM3-like weights, at k from 1 to more than the index holds, inside random filters (tenant, knowledge
// bases, documents), with and without BM25+'s delta.
func TestPrunedTopIsExhaustiveTop(t *testing.T) {
	for _, p := range []Params{DefaultParams(), {K1: 1.2, B: 0.75, TitleWeight: 1, ContextWeight: 0.5, Delta: 0.5}, {K1: 0.9, B: 0, TitleWeight: 2}} {
		ix, words := prunedIndex(t, p, 3000, uint64(p.K1*10))
		r := rand.New(rand.NewPCG(11, uint64(p.B*100)))
		pruned := 0
		for i := range 1500 {
			var q []qterm
			for range 2 + r.IntN(7) {
				w := words[min(len(words)-1, int(r.ExpFloat64()*60))] // mostly common, some rare
				if r.IntN(10) == 0 {
					w = "absent"
				}
				id, ok := ix.dict[w]
				if !ok {
					continue
				}
				weight := 1.0
				if i%3 == 0 {
					weight = 0.05 + r.Float64()
				}
				q = append(q, qterm{id, weight})
				if r.IntN(8) == 0 {
					q = append(q, q[len(q)-1]) // a repeated word counts again
				}
			}
			k := []int{1, 2, 5, 10, 30, 100, 5000}[r.IntN(7)]
			f := rag.Filter{Tenant: []string{"t", "u"}[r.IntN(2)]}
			if r.IntN(3) == 0 {
				f.KBIDs = []string{fmt.Sprintf("k%d", r.IntN(3))}
			}
			var restrict []string
			if r.IntN(4) == 0 {
				for range 1 + r.IntN(12) {
					restrict = append(restrict, fmt.Sprintf("d%02d", r.IntN(45)))
				}
			}
			ix.mu.RLock()
			docs, err := ix.docSet(restrict)
			if err != nil {
				t.Fatal(err)
			}
			want := ix.topExhaustive(q, k, f, docs)
			got, _ := ix.topPruned(q, k, f, docs)
			ix.mu.RUnlock()
			if len(want) == 0 {
				want = nil
			}
			if len(got) == 0 {
				got = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("params %+v, query %v, k %d, filter %+v %v:\npruned     %v\nexhaustive %v", p, q, k, f, restrict, got, want)
			}
			if len(q) >= 2 {
				pruned++
			}
		}
		if pruned < 1000 {
			t.Fatalf("only %d queries of two terms or more", pruned)
		}
	}
}

// TestPrunedTopSkipsPostings: on a query of one rare and three common words, the pruned search reads
// only the rare word's list whole and the common ones only where the rare word's entries are; and top
// takes that path once the query's lists are long enough.
func TestPrunedTopSkipsPostings(t *testing.T) {
	ix, words := prunedIndex(t, DefaultParams(), 3000, 3)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var q []qterm
	for _, w := range []string{words[0], words[1], words[2], words[450]} {
		if id, ok := ix.dict[w]; ok {
			q = append(q, qterm{id, 1})
		}
	}
	if len(q) != 4 || len(ix.postings[q[3].id]) > 60 || len(ix.postings[q[2].id]) < 500 {
		t.Fatalf("want three common words and a rare one: %d terms, %d and %d postings", len(q), len(ix.postings[q[2].id]), len(ix.postings[q[3].id]))
	}
	f := rag.Filter{Tenant: "t"}
	want := ix.topExhaustive(q, 10, f, nil)
	got, read := ix.topPruned(q, 10, f, nil)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pruned %v, exhaustive %v", got, want)
	}
	if rare := len(ix.postings[q[3].id]); read != rare {
		t.Fatalf("read %d postings whole, want only the rare word's %d (the common ones hold %d, %d, %d)", read, rare,
			len(ix.postings[q[0].id]), len(ix.postings[q[1].id]), len(ix.postings[q[2].id]))
	}
	if ix.prunable(q, 10) || ix.prunable(q[:1], 10) {
		t.Fatalf("3,000 chunks are below pruneFrom: the whole read is cheaper there")
	}
}

// TestSearchPrunesAboveThreshold: Search's answers, RM3 feedback included, are the same whether every
// multi-word query is pruned (threshold lowered) or none is.
func TestSearchPrunesAboveThreshold(t *testing.T) {
	p := DefaultParams()
	p.RM3 = RM3{Docs: 5, Terms: 10, OrigWeight: 0.7}
	ix, words := prunedIndex(t, p, 2000, 5)
	defer func(v int64) { pruneFrom = v }(pruneFrom)
	r := rand.New(rand.NewPCG(21, 22))
	ctx := context.Background()
	for range 300 {
		var q []string
		for range 2 + r.IntN(5) {
			q = append(q, words[min(len(words)-1, int(r.ExpFloat64()*80))])
		}
		query := strings.Join(q, " ")
		f := rag.Filter{Tenant: "t", KBIDs: []string{"k0", "k2"}}
		pruneFrom = 1 << 62
		want, err := ix.Search(ctx, query, 20, f)
		if err != nil {
			t.Fatal(err)
		}
		pruneFrom = 1
		got, err := ix.Search(ctx, query, 20, f)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: pruned %v, exhaustive %v", query, got, want)
		}
	}
}
