package main

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/lambdafn"
	"github.com/docmind/docmind/shared/llm/llmtest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

// gradeFunction answers Invoke with the grade function's handler run in process (or fails every call
// with down), counting calls.
type gradeFunction struct {
	down  error
	calls int
}

func (g *gradeFunction) Invoke(ctx context.Context, _ string, payload []byte) (lambdafn.Reply, error) {
	g.calls++
	if g.down != nil {
		return lambdafn.Reply{}, g.down
	}
	var in rankfn.GradeIn
	if err := json.Unmarshal(payload, &in); err != nil {
		return lambdafn.Reply{}, err
	}
	rc := config.Default().Retrieval // the grade function reads the same variables (functions/grade wire)
	grader := rankfn.Grader{Options: rank.GradeOptions{RerankHigh: rc.GradeRerankHigh, RerankLow: rc.GradeRerankLow,
		CoverHigh: rc.GradeCoverHigh, CoverLow: rc.GradeCoverLow, MinSalient: 1}}
	out, err := awsrt.Handler(grader.Grade)(ctx, in)
	if err != nil {
		return lambdafn.Reply{}, err
	}
	body, err := json.Marshal(out)
	return lambdafn.Reply{Payload: body}, err
}

// chatEvents asks one question through the Function URL handler and returns the grader event, the
// retrieval event's degraded list and the done event's.
func chatEvents(t *testing.T, off offload) (grader json.RawMessage, retrievalDegraded, doneDegraded []string) {
	t.Helper()
	c := caps{URLAuth: authIAM, MaxTokens: 256, StreamMax: time.Minute, IdleGap: 30 * time.Second, Reserve: 3 * time.Second}
	f := newOffloadFixture(t, "none", c, off, llmtest.Reply{Content: "Annual plans can be refunded within 30 days of purchase [1]."})
	res, err := f.h(context.Background(), urlEvent("POST", "/api/chat", `{"question":"How long is the refund window for annual plans?"}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	var retrieval struct {
		Degraded []string `json:"degraded"`
	}
	sawDone := false
	for _, fr := range readPrelude(t, res).all(t) {
		switch fr.name {
		case "grader":
			grader = fr.data
		case "retrieval":
			json.Unmarshal(fr.data, &retrieval)
			retrievalDegraded = retrieval.Degraded
		case "done":
			var done struct {
				Degraded []string `json:"degraded"`
			}
			sawDone = json.Unmarshal(fr.data, &done) == nil
			doneDegraded = done.Degraded
		}
	}
	if grader == nil || !sawDone {
		t.Fatalf("no grader or done event (grader %s)", grader)
	}
	return grader, retrievalDegraded, doneDegraded
}

// TestGradeFunction: with DOCMIND_GRADE_FUNCTION the chat's grader event is the grade function's verdict,
// the same as in process; when the function fails the answer still comes, graded in process, with
// "grade" in the retrieval event's degraded and the answer's.
func TestGradeFunction(t *testing.T) {
	want, _, _ := chatEvents(t, offload{})

	up := &gradeFunction{}
	got, retrieval, done := chatEvents(t, offload{Grader: &lambdafn.Grader{Function: lambdafn.Function{Client: up, Name: "docmind-grade"}}})
	if up.calls == 0 || string(got) != string(want) || slices.Contains(retrieval, "grade") || slices.Contains(done, "grade") {
		t.Errorf("function up: %d calls, grader %s (in process %s), degraded %v / %v", up.calls, got, want, retrieval, done)
	}

	down := &gradeFunction{down: rag.Errorf("lambdafn.Invoke", rag.KindUnavailable, "invoke docmind-grade: HTTP 429")}
	got, retrieval, done = chatEvents(t, offload{Grader: &lambdafn.Grader{Function: lambdafn.Function{Client: down, Name: "docmind-grade"}}})
	if down.calls == 0 || string(got) != string(want) || !slices.Contains(retrieval, "grade") || !slices.Contains(done, "grade") {
		t.Errorf("function down: %d calls, grader %s (in process %s), degraded %v / %v; want grade degraded in both", down.calls, got, want, retrieval, done)
	}
}

// TestOffloaded: the caps name the functions; only those named are called, with their own bounds.
func TestOffloaded(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	off, err := offloaded(context.Background(), defaultCaps(), nil)
	if err != nil || off.Reranker != nil || off.Grader != nil {
		t.Fatalf("none named: %+v %v", off, err)
	}
	c, err := loadCaps(func(k string) string {
		return map[string]string{"DOCMIND_GRADE_FUNCTION": "docmind-dev-grade", "DOCMIND_GRADE_TIMEOUT": "2s"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	off, err = offloaded(context.Background(), c, nil)
	g, ok := off.Grader.(*lambdafn.Grader)
	if err != nil || off.Reranker != nil || !ok || g.Name != "docmind-dev-grade" || g.Timeout != 2*time.Second {
		t.Fatalf("grade named: %+v %v", off, err)
	}
	c.RerankFunction = "docmind-dev-rerank"
	off, err = offloaded(context.Background(), c, nil)
	r, ok := off.Reranker.(*lambdafn.Reranker)
	if err != nil || !ok || r.Name != "docmind-dev-rerank" || r.Timeout != 10*time.Second || off.Grader == nil {
		t.Fatalf("both named: %+v %v", off, err)
	}
}
