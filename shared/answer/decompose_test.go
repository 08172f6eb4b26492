package answer

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

func evs(prefix string, scores ...float64) []rank.Evidence {
	var out []rank.Evidence
	for i, s := range scores {
		out = append(out, rank.Evidence{ChunkID: prefix + string(rune('1'+i)), DocumentID: "doc_" + prefix, Score: s, Text: prefix})
	}
	return out
}

func ids(ev []rank.Evidence) string {
	var s []string
	for _, e := range ev {
		s = append(s, e.ChunkID)
	}
	return strings.Join(s, ",")
}

func TestMerge(t *testing.T) {
	// A dominates on score; B still gets its floor of ceil(5/2) = 3, and the interleave alternates.
	a, b := evs("a", 0.99, 0.98, 0.97, 0.96, 0.95), evs("b", 0.3, 0.2, 0.1, 0.05)
	got, served := Merge([][]rank.Evidence{a, b}, []string{"qa", "qb"}, 5)
	if ids(got) != "a1,b1,a2,b2,a3" {
		t.Fatalf("merge %s: the floor (3) is taken round-robin up to k, interleaved", ids(got))
	}
	// Three sub-questions, k=4, floor 2: the third is not crowded out by the first two.
	c := evs("c", 0.01)
	if got, _ := Merge([][]rank.Evidence{a, b, c}, []string{"qa", "qb", "qc"}, 4); !strings.Contains(ids(got), "c1") {
		t.Fatalf("merge %s: every sub-question gets room", ids(got))
	}
	// Shared chunks appear once and serve both; global fill takes the best leftovers.
	shared := rank.Evidence{ChunkID: "s", DocumentID: "doc_s", Score: 0.9}
	got, served = Merge([][]rank.Evidence{{shared, a[0], a[1]}, {shared, b[0]}}, []string{"qa", "qb"}, 4)
	if ids(got) != "s,b1,a1,a2" || strings.Join(served["s"], "|") != "qa|qb" || len(served["b1"]) != 1 {
		t.Fatalf("merge %s, served %v", ids(got), served)
	}
	if _, ok := served["zz"]; ok || len(served) != len(got) {
		t.Fatalf("served lists only picked chunks: %v", served)
	}
	if got, _ := Merge(nil, nil, 5); len(got) != 0 {
		t.Fatal("no lists")
	}
}

type byQuery struct {
	mu   sync.Mutex
	got  []string
	res  map[string]*retrieve.Result
	fail map[string]bool
}

func (b *byQuery) Retrieve(_ context.Context, q retrieve.Query) (*retrieve.Result, error) {
	b.mu.Lock()
	b.got = append(b.got, q.Text)
	b.mu.Unlock()
	if b.fail[q.Text] {
		return nil, rag.Errorf("x", rag.KindUnavailable, "down")
	}
	return b.res[q.Text], nil
}

func TestDecomposedPath(t *testing.T) {
	r := &byQuery{res: map[string]*retrieve.Result{
		"annual leave days": {Evidence: []rank.Evidence{ev("leave.docx", "Full-time employees receive 20 days of annual leave.", 0.9)}, Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.9}},
		"sick leave days":   {Evidence: []rank.Evidence{ev("sick.docx", "Employees receive 10 days of sick leave.", 0.5)}, Grade: rank.Grade{Tier: rank.TierAmbiguous, TopScore: 0.5}},
	}}
	understanding := `{"scope":"KB_QUERY","rewrite":"annual vs sick leave","intent":"compare","complexity":"complex","specificity":"precise",` +
		`"decompose":true,"sub_queries":["annual leave days","sick leave days"],"time_aware":false,"memory_hints":[]}`
	p := &Pipeline{Retriever: r, Understander: &Understander{LLM: &fakeLLM{deltas: []string{understanding}}}}
	var rec recorder
	done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "Compare annual leave and sick leave"}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if done.Path != PathDecomposed || len(r.got) != 2 || len(done.Sources) != 2 {
		t.Fatalf("path %s, retrieved %v, sources %d", done.Path, r.got, len(done.Sources))
	}
	for _, s := range done.Sources {
		if len(s.Served) != 1 {
			t.Fatalf("source %+v must name the sub-question it serves", s)
		}
	}
	if !strings.Contains(done.Answer, "20 days") || !strings.Contains(done.Answer, "10 days") {
		t.Fatalf("both parts must be answered:\n%s", done.Answer)
	}
	if done.Confidence.Signal != 0.65 {
		t.Fatalf("the weakest sub-question sets the tier: %+v", done.Confidence)
	}
	// One sub-query failing degrades; all failing is an error.
	r.got, r.fail = nil, map[string]bool{"sick leave days": true}
	if done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "Compare annual leave and sick leave"}, (&recorder{}).emit); err != nil || !strings.Contains(strings.Join(done.Degraded, ","), "subquery") {
		t.Fatalf("one failing: %+v %v", done, err)
	}
	r.fail = map[string]bool{"sick leave days": true, "annual leave days": true}
	if _, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "Compare annual leave and sick leave"}, (&recorder{}).emit); !rag.Is(err, rag.KindUnavailable) {
		t.Fatalf("all failing: %v", err)
	}
}
