package lambdafn

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
	"github.com/docmind/docmind/shared/retrieve"
)

// gradeLambda runs the grade function's handler (functions/grade starts awsrt.Handler over a
// rankfn.Grader) in process, replying as the Invoke API does: the handler's JSON, or its error body with
// X-Amz-Function-Error.
type gradeLambda struct {
	grader rankfn.Grader
	calls  int
}

func (l *gradeLambda) Invoke(ctx context.Context, _ string, payload []byte) (Reply, error) {
	l.calls++
	var in rankfn.GradeIn
	if err := json.Unmarshal(payload, &in); err != nil {
		return Reply{}, err
	}
	out, err := awsrt.Handler(l.grader.Grade)(ctx, in)
	var fe messages.InvokeResponse_Error
	if errors.As(err, &fe) {
		body, _ := json.Marshal(map[string]string{"errorType": fe.Type, "errorMessage": fe.Message})
		return Reply{Payload: body, FunctionError: "Unhandled"}, nil
	}
	body, err := json.Marshal(out)
	return Reply{Payload: body}, err
}

func evidence(texts ...string) []rank.Evidence {
	var ev []rank.Evidence
	for i, t := range texts {
		ev = append(ev, rank.Evidence{ChunkID: string(rune('a' + i)), DocumentID: "d", KBID: "kb", FileName: "policy.md",
			Text: t, ChildText: t, Score: 0.9 - 0.35*float64(i)})
	}
	return ev
}

// TestGraderMatchesInProcess: the grade function's verdict over the Invoke API equals rank.GradeEvidence
// for the same evidence and thresholds, whichever tier it lands in and whether rerank scores are known.
func TestGraderMatchesInProcess(t *testing.T) {
	opts := rank.DefaultGradeOptions()
	lam := &gradeLambda{grader: rankfn.Grader{Options: opts}}
	g := &Grader{Function{Client: lam, Name: "docmind-grade"}}
	tiers := map[string]bool{}
	for _, c := range []struct {
		query string
		ev    []rank.Evidence
	}{
		{"refund policy for annual plans", evidence("Annual plans: the refund policy gives a full refund within 30 days.", "Monthly plans renew.")},
		{"refund policy for annual plans", evidence("Monthly plans renew every month.", "Invoices are sent by email.")},
		{"waiting period of product B", evidence("Product A has no waiting period.", "The waiting period of product B is 180 days.")},
	} {
		for _, known := range []bool{true, false} {
			want := rank.GradeEvidence(c.query, c.ev, opts, known)
			got, err := g.Grade(context.Background(), c.query, c.ev, known)
			if err != nil || got != want {
				t.Errorf("%q (rerank known %v): got %+v, %v; want %+v", c.query, known, got, err, want)
			}
			tiers[want.Tier] = true
		}
	}
	if len(tiers) < 2 {
		t.Errorf("tiers %v: the cases should reach more than one", tiers)
	}
}

// TestGraderFailures: every failed invoke is an error (so the chain falls back), never a verdict that
// looks real: the call fails, the function fails or times out, the reply is not a grade.
func TestGraderFailures(t *testing.T) {
	ev := evidence("Annual plans: full refund within 30 days.")
	for _, c := range []struct {
		name string
		inv  Invoker
		kind rag.Kind
	}{
		{"throttled", &fakeLambda{err: rag.Errorf("t", rag.KindUnavailable, "HTTP 429 TooManyRequestsException")}, rag.KindUnavailable},
		{"function error", &gradeLambda{grader: rankfn.Grader{Options: rank.DefaultGradeOptions()}}, rag.KindInvalid}, // empty query below
		{"runtime timeout", &fakeLambda{out: Reply{FunctionError: "Unhandled", Payload: []byte(`{"errorType":"Sandbox.Timedout","errorMessage":"Task timed out"}`)}}, rag.KindUnavailable},
		{"call timeout", blockingLambda{}, rag.KindUnavailable},
		{"empty reply", &fakeLambda{out: Reply{Payload: []byte(`{}`)}}, rag.KindUnavailable},
		{"unknown tier", &fakeLambda{out: Reply{Payload: []byte(`{"grade":{"tier":"GREAT"}}`)}}, rag.KindUnavailable},
		{"garbage", &fakeLambda{out: Reply{Payload: []byte(`not json`)}}, rag.KindInternal},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &Grader{Function{Client: c.inv, Name: "docmind-grade", Timeout: 50 * time.Millisecond}}
			query := "refund"
			if c.name == "function error" {
				query = ""
			}
			got, err := g.Grade(context.Background(), query, ev, true)
			if !rag.Is(err, c.kind) || got != (rank.Grade{}) {
				t.Errorf("got %+v, %v; want a zero grade and kind %v", got, err, c.kind)
			}
		})
	}
}

// blockingLambda answers only when the call is given up, as a function that runs past the caller's bound.
type blockingLambda struct{}

func (blockingLambda) Invoke(ctx context.Context, _ string, _ []byte) (Reply, error) {
	<-ctx.Done()
	return Reply{}, rag.E("lambdafn.Invoke", rag.KindUnavailable, ctx.Err())
}

// TestRetrieverWithGradeFunction: the chain with the grade function configured gives the same result as
// grading in process; with the function failing it still answers, with the in-process grade and "grade"
// in degraded.
func TestRetrieverWithGradeFunction(t *testing.T) {
	chain := func(g retrieve.Grader) *retrieve.Retriever {
		return &retrieve.Retriever{Keyword: docs, Chunks: docs, Reranker: rank.Lexical{}, Grader: g, Options: retrieve.DefaultOptions()}
	}
	q := retrieve.Query{Text: "refund within 30 days", Filter: rag.Filter{Tenant: "t"}, KeywordOnly: true}
	want, err := chain(nil).Retrieve(context.Background(), q)
	if err != nil || len(want.Evidence) == 0 {
		t.Fatalf("in process: %+v, %v", want, err)
	}
	lam := &gradeLambda{grader: rankfn.Grader{Options: retrieve.DefaultOptions().Grade}}
	got, err := chain(&Grader{Function{Client: lam, Name: "docmind-grade"}}).Retrieve(context.Background(), q)
	if err != nil || got.Grade != want.Grade || len(got.Degraded) != 0 || lam.calls != 1 {
		t.Errorf("through the function: grade %+v, degraded %v, %d calls, %v; want %+v, none, 1 call", got.Grade, got.Degraded, lam.calls, err, want.Grade)
	}
	down := &fakeLambda{err: rag.Errorf("lambdafn.Invoke", rag.KindUnavailable, "invoke docmind-grade: HTTP 429")}
	got, err = chain(&Grader{Function{Client: down, Name: "docmind-grade"}}).Retrieve(context.Background(), q)
	if err != nil || got.Grade != want.Grade || strings.Join(got.Degraded, ",") != "grade" {
		t.Errorf("function down: grade %+v, degraded %v, %v; want the in-process %+v and grade degraded", got.Grade, got.Degraded, err, want.Grade)
	}
}

// corpus is a two-chunk knowledge base: the keyword leg returns every chunk, best first.
type corpus []rag.Chunk

var docs = corpus{
	{ID: "c1", DocumentID: "d1", KBID: "kb", Content: "Annual plans get a full refund within 30 days of purchase."},
	{ID: "c2", DocumentID: "d1", KBID: "kb", Content: "Monthly plans renew on the first of the month."},
}

func (c corpus) Search(_ context.Context, _ string, k int, _ rag.Filter) ([]rag.Hit, error) {
	var hits []rag.Hit
	for i, ch := range c[:min(k, len(c))] {
		hits = append(hits, rag.Hit{ID: ch.ID, ChunkID: ch.ID, DocumentID: ch.DocumentID, KBID: ch.KBID, Score: 1 / float32(i+1)})
	}
	return hits, nil
}

func (c corpus) GetChunks(_ context.Context, _ string, ids []string) ([]rag.Chunk, error) {
	var out []rag.Chunk
	for _, ch := range c {
		for _, id := range ids {
			if ch.ID == id {
				out = append(out, ch)
			}
		}
	}
	return out, nil
}

func (corpus) GetDocument(_ context.Context, _, id string) (rag.Document, error) {
	return rag.Document{ID: id, FileName: "plans.md", Status: rag.StatusReady}, nil
}
