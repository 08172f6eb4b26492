package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/functions/internal/lambdatest"
	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/deptest"
	"github.com/docmind/docmind/shared/rag"
)

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/canary") }

// scripted answers by question; a missing question fails like a failed execution.
type scripted map[string]*answer.Done

func (s scripted) Ask(_ context.Context, req answer.Request) (*answer.Done, error) {
	if req.Tenant != "acme" || req.User != "canary" {
		return nil, rag.Errorf("t", rag.KindPermission, "wrong caller %+v", req)
	}
	if d, ok := s[req.Question]; ok {
		return d, nil
	}
	return nil, rag.Errorf("sfn", rag.KindUnavailable, "States.Timeout")
}

func TestRunPublishesEMF(t *testing.T) {
	in := lambdatest.ReadJSON[Input](t, "testdata/schedule-input.json")
	src := []answer.Source{{FileName: "billing.md"}}
	ask := scripted{
		in.Questions[0].Question: {Answer: "Within 30 days [1].", Sources: src},
		in.Questions[1].Question: {Answer: "I could not find that.", Sources: []answer.Source{{FileName: "other.md"}}},
	}
	var out bytes.Buffer
	clock := time.Unix(1795953600, 0)
	c := &Canary{Asker: ask, Tenant: "acme", Out: &out, Now: func() time.Time { clock = clock.Add(100 * time.Millisecond); return clock }}
	res, err := c.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// 3 questions: one right, one wrong document and phrase, one failed execution
	if res.Questions != 3 || res.Failed != 1 || res.RetrievalHit < 33.3 || res.RetrievalHit > 33.4 || res.AnswerPass != res.RetrievalHit {
		t.Errorf("result %+v", res)
	}
	var rec map[string]any
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("EMF %q: %v", out.String(), err)
	}
	aws := rec["_aws"].(map[string]any)
	dir := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if dir["Namespace"] != Namespace || rec["FailedQuestions"] != float64(1) || rec["LatencyP50Ms"] != float64(100) {
		t.Errorf("record %v", rec)
	}
	for _, m := range dir["Metrics"].([]any) {
		if _, ok := rec[m.(map[string]any)["Name"].(string)]; !ok {
			t.Errorf("metric %v declared but not in the record", m)
		}
	}
	if _, err := c.Run(context.Background(), Input{}); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("empty input: %v", err)
	}
}
