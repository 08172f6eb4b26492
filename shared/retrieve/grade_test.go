package retrieve

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

// remoteGrader stands in for the grade function: the request crosses JSON and the grade contract
// (shared/rankfn), and the verdict crosses JSON back. fail makes every call fail after it is recorded.
type remoteGrader struct {
	serve       rankfn.Grader
	fail        error
	calls       int
	ev          []rank.Evidence
	rerankKnown bool
}

func (g *remoteGrader) Grade(ctx context.Context, query string, ev []rank.Evidence, rerankKnown bool) (rank.Grade, error) {
	g.calls++
	g.ev, g.rerankKnown = ev, rerankKnown
	if g.fail != nil {
		return rank.Grade{}, g.fail
	}
	var in rankfn.GradeIn
	if err := roundTrip(rankfn.GradeIn{Query: query, Evidence: ev, RerankKnown: rerankKnown}, &in); err != nil {
		return rank.Grade{}, err
	}
	out, err := g.serve.Grade(ctx, in)
	if err != nil {
		return rank.Grade{}, err
	}
	var back rankfn.GradeOut
	err = roundTrip(out, &back)
	return back.Grade, err
}

func roundTrip(in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

var gradeQueries = []string{"安心保 A 款的投保年龄", "康宁保 B 款 等待期", "how do I change my beneficiary", "quantum chromodynamics lattice gauge"}

// TestGraderMatchesInProcess: the same evidence gets the same verdict whether the chain grades it in
// process or sends it to a grader serving the grade contract with the same thresholds, with and
// without a reranker (rerank_known), and the grader is sent exactly the final evidence.
func TestGraderMatchesInProcess(t *testing.T) {
	e := setup(t)
	tiers := map[string]bool{}
	for _, reranker := range []rank.Reranker{nil, rank.Lexical{}} {
		for _, q := range gradeQueries {
			e.r.Reranker, e.r.Grader = reranker, nil
			query := Query{Text: q, Filter: rag.Filter{Tenant: "t1"}}
			want, err := e.r.Retrieve(context.Background(), query)
			if err != nil {
				t.Fatal(err)
			}
			g := &remoteGrader{serve: rankfn.Grader{Options: e.r.Options.Grade}}
			e.r.Grader = g
			got, err := e.r.Retrieve(context.Background(), query)
			if err != nil {
				t.Fatal(err)
			}
			name := q
			if reranker != nil {
				name += " (reranked)"
			}
			if got.Grade != want.Grade {
				t.Errorf("%s: remote grade %+v, in process %+v", name, got.Grade, want.Grade)
			}
			if len(got.Degraded) != 0 {
				t.Errorf("%s: degraded %v, want none", name, got.Degraded)
			}
			if g.calls != 1 || g.rerankKnown != (reranker != nil) || !sameChunks(g.ev, got.Evidence) {
				t.Errorf("%s: %d calls with rerank_known %v and %d items, want 1 call with %v and the %d final items",
					name, g.calls, g.rerankKnown, len(g.ev), reranker != nil, len(got.Evidence))
			}
			tiers[got.Grade.Tier] = true
		}
	}
	t.Logf("tiers %v", tiers)
	if len(tiers) < 2 {
		t.Errorf("tiers seen %v: the queries should reach more than one tier", tiers)
	}
}

func sameChunks(a, b []rank.Evidence) bool {
	return slices.EqualFunc(a, b, func(x, y rank.Evidence) bool { return x.ChunkID == y.ChunkID && x.Text == y.Text && x.Score == y.Score })
}

// TestGraderFailureDegrades: a failing grader (a failed invoke) is replaced by the in-process grade and
// named in degraded, as a failing reranker is; with the reranker failing too, the grade is sent
// rerank_known false and both are named, in the order they failed.
func TestGraderFailureDegrades(t *testing.T) {
	e := setup(t)
	query := Query{Text: "康宁保 B 款 等待期", Filter: rag.Filter{Tenant: "t1"}}
	for _, c := range []struct {
		name     string
		reranker rank.Reranker
		degraded string
	}{
		{"grader fails", rank.Lexical{}, "grade"},
		{"reranker and grader fail", brokenReranker{}, "rerank,grade"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.r.Reranker, e.r.Grader = c.reranker, nil
			want, err := e.r.Retrieve(context.Background(), query)
			if err != nil {
				t.Fatal(err)
			}
			g := &remoteGrader{fail: rag.Errorf("lambdafn.docmind-grade", rag.KindUnavailable, "HTTP 429")}
			e.r.Grader = g
			got, err := e.r.Retrieve(context.Background(), query)
			if err != nil {
				t.Fatalf("a failed grader failed the retrieval: %v", err)
			}
			if got.Grade != want.Grade || got.Grade.Tier == "" {
				t.Errorf("grade %+v, want the in-process %+v", got.Grade, want.Grade)
			}
			if d := strings.Join(got.Degraded, ","); d != c.degraded {
				t.Errorf("degraded %q, want %q", d, c.degraded)
			}
			if g.calls != 1 || g.rerankKnown != (c.degraded == "grade") {
				t.Errorf("%d calls, rerank_known %v", g.calls, g.rerankKnown)
			}
		})
	}
}

// TestGraderNotAskedWithoutEvidence: nothing to judge is judged in process (NoEvidence) without a call.
func TestGraderNotAskedWithoutEvidence(t *testing.T) {
	e := setup(t)
	g := &remoteGrader{fail: rag.Errorf("grade", rag.KindUnavailable, "must not be called")}
	e.r.Grader = g
	res, err := e.r.Retrieve(context.Background(), Query{Text: "投保年龄", Filter: rag.Filter{Tenant: "other"}})
	if err != nil || !res.Grade.NoEvidence || len(res.Degraded) != 0 || g.calls != 0 {
		t.Fatalf("grade %+v, degraded %v, %d calls, err %v; want no_evidence, nothing degraded, no call", res.Grade, res.Degraded, g.calls, err)
	}
}
