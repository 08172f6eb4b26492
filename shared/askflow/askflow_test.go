package askflow

import (
	"context"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
	"github.com/docmind/docmind/shared/retrieve"
)

// TestFlowRerank: the Rerank Task's reply decides the order, and which reranker the answer says it had,
// as the in-process chain's reranker would.
func TestFlowRerank(t *testing.T) {
	cands := func() []rank.Evidence {
		return []rank.Evidence{{ChunkID: "a", ChildText: "monthly plans", Score: 1}, {ChunkID: "b", ChildText: "annual plans refund", Score: 0.5}}
	}
	for _, c := range []struct {
		name               string
		rerank             *rankfn.RerankOut
		first              string
		degraded, reranker bool
		known              bool
	}{
		{"scores", &rankfn.RerankOut{Model: "ce", Scores: []float64{0.1, 0.9}}, "b", false, true, true},
		{"no model keeps the fused order", &rankfn.RerankOut{Model: "lexical", Scores: []float64{0.1, 0.9}}, "a", false, false, false},
		{"a failed Task keeps the fused order", nil, "a", true, true, false},
		{"a short reply is a failure", &rankfn.RerankOut{Model: "ce", Scores: []float64{0.1}}, "a", true, true, false},
	} {
		f := Flow{Query: "annual plans refund", Candidates: cands(), Rerank: c.rerank}
		ev, degraded := f.rerank(context.Background())
		if ev[0].ChunkID != c.first || degraded != c.degraded || f.Reranker != c.reranker || f.RerankKnown != c.known {
			t.Errorf("%s: first %s degraded %v reranker %v known %v; want %s %v %v %v", c.name, ev[0].ChunkID, degraded, f.Reranker, f.RerankKnown,
				c.first, c.degraded, c.reranker, c.known)
		}
	}
}

// An Evidence payload whose candidates and texts disagree in number (a hand-edited or truncated state)
// is refused as Invalid, not answered from misplaced texts.
func TestEvidenceRefusesMismatchedTexts(t *testing.T) {
	s := &Stages{Chain: &retrieve.Retriever{Options: retrieve.DefaultOptions()}}
	f := Flow{Candidates: []rank.Evidence{{ChunkID: "a"}, {ChunkID: "b"}}, Documents: []string{"only one"}}
	_, err := s.Evidence(context.Background(), f)
	if rag.KindOf(err) != rag.KindInvalid || !strings.Contains(err.Error(), "1 documents for 2 candidates") {
		t.Fatalf("Evidence with 1 text for 2 candidates: %v, want Invalid naming both counts", err)
	}
}
