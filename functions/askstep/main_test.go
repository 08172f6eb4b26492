package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/functions/internal/kbtest"
	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/askflow"
	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/deptest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

const aslFile = "../../infra/statemachines/answer.asl.json"

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/askstep") }

// flow is the answer state machine run by shared/aslrun against the Go handlers: askstep's stages over
// the embedded stores with one ingested document, the rerank handler and the grade handler.
type flow struct {
	runner  *aslrun.Runner
	invoked map[string]int
	kbID    string
}

func newFlow(t *testing.T, rerank func(context.Context, rankfn.RerankIn) (rankfn.RerankOut, error)) *flow {
	t.Helper()
	cfg := config.Default()
	lib := kbtest.New(t, cfg)
	s, err := stages(cfg, lib.DB, lib.Keyword, lib.Vectors)
	if err != nil {
		t.Fatal(err)
	}
	def, err := os.ReadFile(aslFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := aslrun.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	f := &flow{invoked: map[string]int{}, kbID: lib.KB.ID}
	grader := &rankfn.Grader{Options: rank.DefaultGradeOptions()}
	handlers := map[string]func(context.Context, json.RawMessage) (any, error){
		"${AskStepFunctionArn}": func(ctx context.Context, in json.RawMessage) (any, error) {
			var env askflow.Envelope
			if err := json.Unmarshal(in, &env); err != nil {
				return nil, err
			}
			f.invoked[env.Stage]++
			return s.Dispatch(ctx, env)
		},
		"${RerankFunctionArn}": func(ctx context.Context, in json.RawMessage) (any, error) {
			var v rankfn.RerankIn
			if err := json.Unmarshal(in, &v); err != nil {
				return nil, err
			}
			f.invoked["Rerank"]++
			return rerank(ctx, v)
		},
		"${GradeFunctionArn}": func(ctx context.Context, in json.RawMessage) (any, error) {
			var v rankfn.GradeIn
			if err := json.Unmarshal(in, &v); err != nil {
				return nil, err
			}
			f.invoked["Grade"]++
			return grader.Grade(ctx, v)
		},
	}
	var resources []string
	for _, task := range m.Tasks() {
		if handlers[task.Resource] == nil {
			t.Errorf("Task resource %s has no handler", task.Resource)
		}
		resources = append(resources, task.Resource)
	}
	for res := range handlers {
		if !slices.Contains(resources, res) {
			t.Errorf("handler %s has no Task", res)
		}
	}
	f.runner = &aslrun.Runner{Machine: m, ErrorName: awsrt.ErrorType, Rand: func() float64 { return 0.5 },
		Sleep: func(context.Context, time.Duration) error { return nil },
		Invoke: func(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
			out, err := handlers[resource](ctx, input)
			if err != nil {
				return nil, err
			}
			if raw, ok := out.(json.RawMessage); ok {
				return raw, nil
			}
			return json.Marshal(out)
		}}
	return f
}

func (f *flow) ask(t *testing.T, st askflow.State) (answer.Done, *aslrun.Trace, error) {
	t.Helper()
	in, _ := json.Marshal(st)
	out, trace, err := f.runner.Run(context.Background(), "ask", in)
	var done answer.Done
	if err == nil {
		if jerr := json.Unmarshal(out, &done); jerr != nil {
			t.Fatalf("output %s: %v", out, jerr)
		}
	}
	return done, trace, err
}

func TestAnswerStateMachine(t *testing.T) {
	lexical := &rankfn.Reranker{Rank: rank.Lexical{}, Model: "lexical"}
	f := newFlow(t, lexical.Rerank)
	done, trace, err := f.ask(t, askflow.State{Tenant: "local", Question: "How long is the refund window for annual plans?", KBIDs: []string{f.kbID}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Understand", "Retrieve", "Rerank", "Grade", "Generate"}; !slices.Equal(trace.States, want) {
		t.Errorf("states %v, want %v", trace.States, want)
	}
	if !strings.Contains(done.Answer, "30 days") || len(done.Sources) == 0 || done.Sources[0].FileName != "billing.md" || done.Answerer != "extractive" {
		t.Errorf("done %+v, want the extractive answer citing billing.md", done)
	}
	if done.Confidence.Band == "" || done.Claims == nil || done.StageMS["retrieval"] < 0 {
		t.Errorf("confidence %+v claims %v stage_ms %v", done.Confidence, done.Claims, done.StageMS)
	}
	if slices.Contains(done.Degraded, "rerank") {
		t.Errorf("degraded %v: lexical rerank is not a failure", done.Degraded)
	}
	var keys []string
	for k, n := range f.invoked {
		if n != 1 {
			t.Errorf("%s invoked %d times", k, n)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if want := []string{"Generate", "Grade", "Rerank", "Retrieve", "Understand"}; !slices.Equal(keys, want) {
		t.Errorf("invoked %v", keys)
	}
}

// TestRerankFailureDegrades: a rerank function that fails does not fail the answer: the fused order is
// kept and "rerank" is in degraded, as with the chat's failed reranker.
func TestRerankFailureDegrades(t *testing.T) {
	f := newFlow(t, func(context.Context, rankfn.RerankIn) (rankfn.RerankOut, error) {
		return rankfn.RerankOut{}, rag.Errorf("rerank", rag.KindUnavailable, "cross-encoder out of memory")
	})
	done, trace, err := f.ask(t, askflow.State{Tenant: "local", Question: "How long is the refund window for annual plans?"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(trace.States, "RerankFailed") || !slices.Contains(done.Degraded, "rerank") || !strings.Contains(done.Answer, "30 days") {
		t.Errorf("states %v, degraded %v, answer %q", trace.States, done.Degraded, done.Answer)
	}
}

// TestInvalidQuestionFails: an empty question fails the execution with the error name Invalid, which the
// API function turns into 400.
func TestInvalidQuestionFails(t *testing.T) {
	f := newFlow(t, (&rankfn.Reranker{Rank: rank.Lexical{}, Model: "lexical"}).Rerank)
	_, _, err := f.ask(t, askflow.State{Tenant: "local", Question: "  "})
	var ae *aslrun.Error
	if !errors.As(err, &ae) || ae.Name != "Invalid" || askflow.KindOf(ae.Name) != rag.KindInvalid {
		t.Errorf("got %v, want the execution to fail with Invalid", err)
	}
}
