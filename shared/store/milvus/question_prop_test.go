package milvus

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
)

// randQuestionFilter is a random filter over metaFixture's keys, every form, nested up to depth.
func randQuestionFilter(r *rand.Rand, depth int) map[string]any {
	if depth > 0 && r.IntN(3) == 0 {
		switch r.IntN(3) {
		case 0:
			return map[string]any{"and": []any{randQuestionFilter(r, depth-1), randQuestionFilter(r, depth-1)}}
		case 1:
			return map[string]any{"or": []any{randQuestionFilter(r, depth-1), randQuestionFilter(r, depth-1)}}
		default:
			return map[string]any{"not": randQuestionFilter(r, depth-1)}
		}
	}
	switch r.IntN(7) {
	case 0:
		return map[string]any{"key": "source", "eq": []string{"web", "wiki", "confluence", "sharepoint"}[r.IntN(4)]}
	case 1:
		return map[string]any{"key": "author", "in": []any{[]string{"ann", `o"hara`, "cy"}[r.IntN(3)], `" or tenant != "`}}
	case 2:
		lo := 2018 + r.IntN(9)
		return map[string]any{"key": "year", "gte": lo, "lt": lo + 1 + r.IntN(4)}
	case 3:
		return map[string]any{"key": "year", "eq": 2018 + r.IntN(9)}
	case 4:
		return map[string]any{"key": "labels", "eq": []string{"hr", "legal", "eng"}[r.IntN(3)]}
	case 5:
		return map[string]any{"key": "modified", []string{"gt", "gte", "lt", "lte"}[r.IntN(4)]: []string{"2021-06-01", "2023-01-01T12:00:00Z", "2024-12-31"}[r.IntN(3)]}
	default:
		return map[string]any{"key": []string{"labels", "modified", "author", "none"}[r.IntN(4)], "exists": r.IntN(2) == 0}
	}
}

// TestQuestionFilterProperty: a question's retrieval under a metadata filter, as every question path
// now hands it to the vector leg (the passing documents and the filter beside them), equals the brute
// force (the embedded index's exact top 10 among the documents whose metadata passes, by
// MetaFilter.Match) on 300 random filters over 1,300 mirrored documents, however many documents pass
// (from a handful to nearly all); every search is one expression (no fallback) and no search carries
// a document id.
func TestQuestionFilterProperty(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	ix, err := Open(ctx, Options{Addr: srv.Addr(), Collection: "chunks", Dim: metaDim, StrongSearch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	fx := newMetaFixture(t, ix, srv, 1300, true)
	r := rand.New(rand.NewPCG(3, 23))
	srv.ResetCalls()
	asked, small, large := 0, 0, 0
	for asked < 300 {
		raw, _ := json.Marshal(randQuestionFilter(r, 3))
		f, err := rag.ParseMetaFilter(raw)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		n := len(fx.passing(f))
		if n == 0 {
			continue // the question paths answer 404 before retrieval
		}
		asked++
		if n <= 100 {
			small++
		}
		if n > 1000 {
			large++
		}
		fx.check(t, ix, f, randVec(fx.r))
	}
	if small < 5 || large < 5 {
		t.Fatalf("%d filters passing at most 100 documents, %d over 1,000: the generator does not cover both", small, large)
	}
	if a, fb := ix.MetaSearches(); a != int64(asked) || fb != 0 {
		t.Fatalf("%d questions: %d searched by expression, %d fell back", asked, a, fb)
	}
	for _, c := range srv.Calls("Search") {
		if strings.Contains(c.Expr, "doc_id") {
			t.Fatalf("a search carried document ids: %s", c.Expr)
		}
	}
	t.Logf("%d filters (%d passing at most 100 documents, %d over 1,000): all equal to the brute force", asked, small, large)
}
