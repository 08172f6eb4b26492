package rankfn

import (
	"context"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
)

type fixed struct {
	scores []float64
	err    error
}

func (f fixed) Rerank(context.Context, string, []string) ([]float64, error) { return f.scores, f.err }

func ev(ids ...string) []rank.Evidence {
	var out []rank.Evidence
	for _, id := range ids {
		out = append(out, rank.Evidence{ChunkID: id, ChildText: "text " + id, Text: "text " + id, Score: 0.5})
	}
	return out
}

func TestRerankEvidence(t *testing.T) {
	r := &Reranker{Rank: fixed{scores: []float64{0.1, 0.95, 0.9, 0.05}}, Model: "bge", Filter: rank.FilterOptions{Floor: 0.28, Drop: 0.5}}
	out, err := r.Rerank(context.Background(), RerankIn{Query: "q", Evidence: ev("a", "b", "c", "d"), K: 3})
	if err != nil {
		t.Fatal(err)
	}
	// sorted by the model's scores, cut to k = 3, then the floor drops a (0.1)
	if len(out.Evidence) != 2 || out.Evidence[0].ChunkID != "b" || out.Evidence[1].ChunkID != "c" || !out.Known || out.Degraded {
		t.Errorf("got %+v", out)
	}
	r.Rank = fixed{err: rag.Errorf("api", rag.KindUnavailable, "down")}
	out, err = r.Rerank(context.Background(), RerankIn{Query: "q", Evidence: ev("a", "b")})
	if err != nil || !out.Degraded || out.Known || len(out.Evidence) == 0 {
		t.Errorf("failed model, evidence form: %+v %v; want lexical, degraded, not known", out, err)
	}
	if _, err := r.Rerank(context.Background(), RerankIn{Query: "q", Documents: []string{"x"}}); !rag.Is(err, rag.KindUnavailable) {
		t.Errorf("failed model, documents form: %v; want the model's error", err)
	}
	r.Rank = fixed{scores: []float64{1}}
	if _, err := r.Rerank(context.Background(), RerankIn{Query: "q", Documents: []string{"x", "y"}}); !rag.Is(err, rag.KindUnavailable) {
		t.Errorf("1 score for 2 documents: %v", err)
	}
	if _, err := r.Rerank(context.Background(), RerankIn{Query: "q", Documents: make([]string, MaxDocuments+1)}); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("too many documents: %v", err)
	}
}

func TestGradeDiversify(t *testing.T) {
	g := &Grader{Options: rank.DefaultGradeOptions()}
	dup := []rank.Evidence{
		{ChunkID: "a", Text: "Annual plans can be refunded within 30 days.", ChildText: "Annual plans can be refunded within 30 days.", Score: 0.9},
		{ChunkID: "b", Text: "Annual plans can be refunded within 30 days.", ChildText: "Annual plans can be refunded within 30 days.", Score: 0.8},
	}
	out, err := g.Grade(context.Background(), GradeIn{Query: "refund annual plans", Evidence: dup, RerankKnown: true, Diversify: true})
	if err != nil || len(out.Evidence) != 1 || out.Grade.Tier == "" {
		t.Errorf("got %+v %v; want the duplicate compressed away and a verdict", out, err)
	}
	if _, err := g.Grade(context.Background(), GradeIn{}); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("empty query: %v", err)
	}
}
