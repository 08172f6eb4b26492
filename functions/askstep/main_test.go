package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/functions/internal/kbtest"
	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/askflow"
	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/deptest"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/llm/llmtest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/wire"
)

const aslFile = "../../infra/statemachines/answer.asl.json"

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/askstep") }

// flow is the answer state machine run by shared/aslrun against the Go handlers: askstep's stages, the
// rerank handler and the grade handler.
type flow struct {
	runner  *aslrun.Runner
	invoked map[string]int
}

type handler func(context.Context, json.RawMessage) (any, error)

// decoded adapts a typed handler to the raw payload the Task sends, counting its calls under name.
func decoded[In, Out any](f *flow, name string, h func(context.Context, In) (Out, error)) handler {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in In
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, err
		}
		f.invoked[name]++
		return h(ctx, in)
	}
}

func newFlow(t *testing.T, s *askflow.Stages, rerank func(context.Context, rankfn.RerankIn) (rankfn.RerankOut, error),
	grade func(context.Context, rankfn.GradeIn) (rankfn.GradeOut, error)) *flow {
	t.Helper()
	def, err := os.ReadFile(aslFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := aslrun.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	f := &flow{invoked: map[string]int{}}
	handlers := map[string]handler{
		"${AskStepFunctionArn}": func(ctx context.Context, in json.RawMessage) (any, error) {
			var env askflow.Envelope
			if err := json.Unmarshal(in, &env); err != nil {
				return nil, err
			}
			f.invoked[env.Stage]++
			return s.Dispatch(ctx, env)
		},
		"${RerankFunctionArn}": decoded(f, "Rerank", rerank),
		"${GradeFunctionArn}":  decoded(f, "Grade", grade),
	}
	checkResources(t, m, handlers)
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

// checkResources: every Task's resource has a handler and every handler a Task.
func checkResources(t *testing.T, m *aslrun.Machine, handlers map[string]handler) {
	t.Helper()
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
}

func (f *flow) ask(t *testing.T, req answer.Request) (answer.Done, *aslrun.Trace, error) {
	t.Helper()
	in, _ := json.Marshal(req)
	out, trace, err := f.runner.Run(context.Background(), "ask", in)
	var done answer.Done
	if err == nil {
		if jerr := json.Unmarshal(out, &done); jerr != nil {
			t.Fatalf("output %s: %v", out, jerr)
		}
	}
	return done, trace, err
}

// lexicalFlow is the workflow over the handbook with a rerank function without a model.
func lexicalFlow(t *testing.T) (*flow, *kbtest.Library) {
	t.Helper()
	cfg := config.Default()
	lib := kbtest.New(t, cfg)
	s, err := stages(cfg, lib.DB, lib.Keyword, lib.Vectors)
	if err != nil {
		t.Fatal(err)
	}
	lexical := &rankfn.Reranker{Rank: rank.Lexical{}, Model: "lexical"}
	return newFlow(t, s, lexical.Rerank, (&rankfn.Grader{Options: s.Chain.Options.Grade}).Grade), lib
}

func TestAnswerStateMachine(t *testing.T) {
	f, lib := lexicalFlow(t)
	done, trace, err := f.ask(t, answer.Request{Tenant: "local", Question: "How long is the refund window for annual plans?", KBIDs: []string{lib.KB.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Understand", "IsPrepared", "Retrieve", "IsRanked", "Rerank", "Evidence", "Grade", "Generate"}; !slices.Equal(trace.States, want) {
		t.Errorf("states %v, want %v", trace.States, want)
	}
	if !strings.Contains(done.Answer, "30 days") || len(done.Sources) == 0 || done.Sources[0].FileName != "billing.md" || done.Answerer != "extractive" {
		t.Errorf("done %+v, want the extractive answer citing billing.md", done)
	}
	if done.Confidence.Band == "" || done.Claims == nil || done.StageMS["retrieval"] < 0 {
		t.Errorf("confidence %+v claims %v stage_ms %v", done.Confidence, done.Claims, done.StageMS)
	}
	if slices.Contains(done.Degraded, "rerank") {
		t.Errorf("degraded %v: a rerank function without a model is not a failure", done.Degraded)
	}
	for _, k := range []string{"Understand", "Retrieve", "Rerank", "Evidence", "Grade", "Generate"} {
		if n := f.invoked[k]; n != 1 {
			t.Errorf("%s invoked %d times, want once", k, n)
		}
	}
}

// TestShortCircuitSkipsRetrieval: a prepared answer (chitchat) goes from Understand to Generate.
func TestShortCircuitSkipsRetrieval(t *testing.T) {
	f, _ := lexicalFlow(t)
	done, trace, err := f.ask(t, answer.Request{Tenant: "local", Question: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Understand", "IsPrepared", "Generate"}; !slices.Equal(trace.States, want) || done.ShortCircuit == "" || done.Answer == "" {
		t.Errorf("states %v, done %+v; want the chitchat answer straight from Generate", trace.States, done)
	}
}

// TestRerankFailureDegrades: a rerank function that fails does not fail the answer: Evidence orders the
// candidates by lexical scores and "rerank" is in degraded, as with the chat's failed reranker.
func TestRerankFailureDegrades(t *testing.T) {
	cfg := config.Default()
	lib := kbtest.New(t, cfg)
	s, err := stages(cfg, lib.DB, lib.Keyword, lib.Vectors)
	if err != nil {
		t.Fatal(err)
	}
	f := newFlow(t, s, func(context.Context, rankfn.RerankIn) (rankfn.RerankOut, error) {
		return rankfn.RerankOut{}, rag.Errorf("rerank", rag.KindUnavailable, "cross-encoder out of memory")
	}, (&rankfn.Grader{Options: s.Chain.Options.Grade}).Grade)
	done, trace, err := f.ask(t, answer.Request{Tenant: "local", Question: "How long is the refund window for annual plans?"})
	if err != nil {
		t.Fatal(err)
	}
	if trace.Errors["Rerank"] != "Unavailable" || !slices.Contains(done.Degraded, "rerank") || !strings.Contains(done.Answer, "30 days") {
		t.Errorf("errors %v, degraded %v, answer %q", trace.Errors, done.Degraded, done.Answer)
	}
}

// TestInvalidQuestionFails: an empty question fails the execution with the error name Invalid, which the
// API function turns into 400.
func TestInvalidQuestionFails(t *testing.T) {
	f, _ := lexicalFlow(t)
	_, _, err := f.ask(t, answer.Request{Tenant: "local", Question: "  "})
	var ae *aslrun.Error
	if !errors.As(err, &ae) || ae.Name != "Invalid" || askflow.KindOf(ae.Name) != rag.KindInvalid {
		t.Errorf("got %v, want the execution to fail with Invalid", err)
	}
}

// addDocuments ingests more Markdown documents into the library's knowledge base, as kbtest.New does.
func addDocuments(t testing.TB, cfg config.Config, lib *kbtest.Library, docs map[string]string) {
	t.Helper()
	emb, err := wire.Embedder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := &ingest.Stages{Records: lib.DB, Vectors: lib.Vectors, Blobs: memblob.New(), Staging: memblob.New(), Embedder: emb, Keyword: lib.Keyword,
		Limits: extract.Limits{MaxFileBytes: 4 << 20}, Chunking: chunk.Options{ChildChars: cfg.Chunking.ChildChars, Overlap: cfg.Chunking.Overlap, ParentChars: cfg.Chunking.ParentChars}}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}}
	for name, text := range docs {
		rep, err := svc.Ingest(context.Background(), cfg.Tenant, ingest.Source{KBName: lib.KB.Name, URI: "inbox/handbook/" + name, Name: name, Data: []byte(text)})
		if err != nil || rep.Status != rag.StatusReady {
			t.Fatalf("ingest %s: %+v %v", name, rep, err)
		}
	}
}

// corpus is a few documents whose sections overlap, so that the rerank cut, the filter, MMR and the
// parent expansion all have something to do.
var corpus = map[string]string{
	"leave.md": `# Annual leave

Full-time employees receive 20 days of paid annual leave per year. Part-time employees receive leave pro rata.
Unused annual leave can be carried over until the end of March of the following year.

## Requesting leave

Annual leave is requested in the HR portal at least two weeks in advance. Your manager approves annual leave requests.

# Sick leave

Sick leave does not reduce annual leave. A doctor's note is required after three days of sick leave.
`,
	"travel.md": `# Travel

Book flights through the travel desk. Economy class is the default for flights under six hours.

## Expenses

Travel expenses are refunded within 30 days of submitting the receipts. Annual plans for travel insurance are paid by the company.

# Refunds of training

Training costs are refunded when the course is passed. Annual training budgets are set in January.
`,
}

// ce is a deterministic stand-in for a cross-encoder: lexical overlap, scaled into a cross-encoder's
// range so that the QAnything filter's floor and drop cut some candidates.
type ce struct{}

func (ce) Rerank(ctx context.Context, q string, docs []string) ([]float64, error) {
	s, _ := rank.Lexical{}.Rerank(ctx, q, docs)
	for i := range s {
		s[i] = s[i] * 0.9
	}
	return s, nil
}

// down is a cross-encoder that is down.
type down struct{}

func (down) Rerank(context.Context, string, []string) ([]float64, error) {
	return nil, rag.Errorf("rerank", rag.KindUnavailable, "connection refused")
}

// TestWorkflowMatchesPipeline: the workflow's answer (the ASL run over askstep's stages, the rerank and
// the grade functions) is the in-process pipeline's answer to the same question over the same stores,
// with a model and without, for a reranker that answers, one that is down, and none: the same text,
// sources, confidence, claims, path and degraded list (stage_ms aside: timings differ).
func TestWorkflowMatchesPipeline(t *testing.T) {
	questions := []string{
		"How long is the refund window for annual plans?",
		"How many days of annual leave do part-time employees get?",
		"Who approves annual leave requests and how early must they be made?",
		"refunds",
		"hello",
		"Which documents do you have?",
		"Compare annual leave and sick leave",
		"A complex one: how do annual leave and sick leave interact?",
		"stuff about leave",
	}
	rerankers := []struct {
		name      string
		model     string
		r         rank.Reranker
		gradeDown bool
	}{{"cross-encoder", "ce", ce{}, false}, {"reranker down", "ce", down{}, false}, {"no reranker", "lexical", nil, false},
		{"grader down", "ce", ce{}, true}}
	for _, withModel := range []bool{false, true} {
		for _, rr := range rerankers {
			t.Run(fmt.Sprintf("model=%v/%s", withModel, rr.name), func(t *testing.T) {
				cfg := config.Default()
				if withModel {
					cfg = withFakeModel(t, cfg)
				}
				lib := kbtest.New(t, cfg)
				addDocuments(t, cfg, lib, corpus)
				inproc, f := pair(t, cfg, lib, rr.model, rr.r, rr.gradeDown)
				docs, err := lib.DB.ListDocuments(context.Background(), cfg.Tenant, lib.KB.ID, "")
				if err != nil || len(docs) == 0 {
					t.Fatal(docs, err)
				}
				reqs := []answer.Request{{Tenant: cfg.Tenant, Question: "annual plans refund", DocumentIDs: []string{docs[0].ID}}}
				for _, q := range questions {
					reqs = append(reqs, answer.Request{Tenant: cfg.Tenant, Question: q})
				}
				paths, degraded := map[string]bool{}, map[string]bool{}
				for _, req := range reqs {
					done := compare(t, inproc, f, req)
					paths[done.Path] = true
					for _, d := range done.Degraded {
						degraded[d] = true
					}
				}
				if rr.r == (down{}) && !degraded["rerank"] || rr.gradeDown && !degraded["grade"] {
					t.Errorf("degraded %v: the failure was not exercised", degraded)
				}
				want := []string{answer.PathStandard, answer.PathSelectedDoc}
				if withModel {
					want = append(want, answer.PathDecomposed, answer.PathAgentic)
				}
				for _, p := range want {
					if !paths[p] {
						t.Errorf("no question took the %s path (paths %v)", p, paths)
					}
				}
			})
		}
	}
}

// pair wires the in-process pipeline with reranker r (nil: none) and the workflow whose rerank
// function serves r under model (its lexical scores for "lexical", as functions/rerank without a
// model), over the same stores and configuration; with gradeDown, the chain's grade function and the
// workflow's Grade Task fail.
func pair(t *testing.T, cfg config.Config, lib *kbtest.Library, model string, r rank.Reranker, gradeDown bool) (*answer.Pipeline, *flow) {
	t.Helper()
	chain, err := wire.Retriever(cfg, lib.Keyword, lib.Vectors, lib.DB)
	if err != nil {
		t.Fatal(err)
	}
	chain.Reranker = r
	s, err := stages(cfg, lib.DB, lib.Keyword, lib.Vectors)
	if err != nil {
		t.Fatal(err)
	}
	// askstep's own chain ranks the DECOMPOSED and AGENTIC paths: deployed with the same reranker (and
	// grader, below)
	s.Chain.Reranker, s.Pipeline.RerankKnown = r, r != nil
	fn := &rankfn.Reranker{Rank: r, Model: model}
	if r == nil {
		fn.Rank = rank.Lexical{}
	}
	grader := &rankfn.Grader{Options: chain.Options.Grade}
	grade := grader.Grade
	if gradeDown {
		chain.Grader, grade = gradeFails{}, func(context.Context, rankfn.GradeIn) (rankfn.GradeOut, error) {
			return rankfn.GradeOut{}, rag.Errorf("grade", rag.KindUnavailable, "throttled")
		}
	}
	s.Chain.Grader = chain.Grader
	return wire.Chat(cfg, chain, lib.DB, nil), newFlow(t, s, fn.Rerank, grade)
}

// gradeFails is a grade function that cannot be reached, as the chain sees it.
type gradeFails struct{}

func (gradeFails) Grade(context.Context, string, []rank.Evidence, bool) (rank.Grade, error) {
	return rank.Grade{}, rag.Errorf("grade", rag.KindUnavailable, "throttled")
}

// compare asks both, reports where the answers differ and returns the in-process answer.
func compare(t *testing.T, inproc *answer.Pipeline, f *flow, req answer.Request) answer.Done {
	t.Helper()
	want, err := inproc.Run(context.Background(), req, func(string, any) error { return nil })
	if err != nil {
		t.Fatalf("%q in process: %v", req.Question, err)
	}
	got, trace, err := f.ask(t, req)
	if err != nil {
		t.Fatalf("%q workflow: %v (states %v)", req.Question, err, trace.States)
	}
	want.StageMS, got.StageMS = nil, nil
	if len(want.Sources) == 0 && want.ShortCircuit == "" {
		t.Errorf("%q: no sources in process: the case tests nothing", req.Question)
	}
	if w, g := mustJSON(t, want), mustJSON(t, &got); w != g {
		t.Errorf("%q: the workflow answers differently (states %v):\n got %s\nwant %s", req.Question, trace.States, g, w)
	}
	return *want
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withFakeModel points the chat model at a fake OpenAI-compatible server. Its understanding splits
// "Compare ..." into two sub-questions (DECOMPOSED), calls "... complex ..." complex (AGENTIC: the agent
// answers without searching, so the standard chain runs under it), and "stuff ..." fuzzy (HyDE); its
// answers cite [1].
func withFakeModel(t *testing.T, cfg config.Config) config.Config {
	model := llmtest.New(t, func(c llmtest.Call) llmtest.Reply {
		switch {
		case len(c.Tools) > 0:
			return llmtest.Reply{Content: "I have nothing to search."}
		case strings.HasPrefix(c.System(), "Write a short passage"):
			return llmtest.Reply{Content: "Employees receive 20 days of annual leave per year."}
		case !strings.Contains(c.Last(), "<question>"):
			return llmtest.Reply{Content: "According to the handbook, the answer is in the first passage [1]."}
		}
		u := map[string]any{"scope": "KB_QUERY", "intent": "lookup", "complexity": "simple", "specificity": "precise"}
		switch q := c.Last(); {
		case strings.Contains(q, "Compare"):
			u["complexity"], u["decompose"], u["sub_queries"] = "complex", true, []string{"annual leave days", "sick leave doctor's note"}
		case strings.Contains(q, "complex"):
			u["complexity"] = "complex"
		case strings.Contains(q, "stuff"):
			u["specificity"] = "fuzzy"
		}
		b, _ := json.Marshal(u)
		return llmtest.Reply{Content: string(b)}
	})
	cfg.Chat.Provider, cfg.Chat.BaseURL, cfg.Chat.MainModel = "openai", model.URL+"/v1", "main"
	return cfg
}

// maxPayload is Step Functions' limit on a state, a Task's input and its output (256 KiB).
const maxPayload = 256 << 10

// TestStateSize measures the largest state of an execution for a big question (the longest question
// allowed, against a knowledge base where every fused candidate is a full child chunk under a full
// parent), with the default chunking and with chunks five times larger, and fails above the Step
// Functions payload limit. The figures are logged (go test ./functions/askstep -run StateSize -v).
func TestStateSize(t *testing.T) {
	for _, c := range []struct {
		name          string
		child, parent int
	}{{"default chunking", 0, 0}, {"chunks x5", 2000, 10000}} {
		cfg := config.Default()
		if c.child > 0 {
			cfg.Chunking.ChildChars, cfg.Chunking.ParentChars = c.child, c.parent
		}
		lib := kbtest.New(t, cfg)
		addDocuments(t, cfg, lib, map[string]string{"policies.md": bigDocument(60, 3*cfg.Chunking.ParentChars)})
		s, err := stages(cfg, lib.DB, lib.Keyword, lib.Vectors)
		if err != nil {
			t.Fatal(err)
		}
		candidates := 0
		rerank := func(ctx context.Context, in rankfn.RerankIn) (rankfn.RerankOut, error) {
			candidates = len(in.Documents)
			return (&rankfn.Reranker{Rank: ce{}, Model: "ce"}).Rerank(ctx, in)
		}
		f := newFlow(t, s, rerank, (&rankfn.Grader{Options: s.Chain.Options.Grade}).Grade)
		q := strings.Repeat("How many days of annual leave do employees receive, and how is leave carried over? ", 24)[:1990]
		done, tr, err := f.ask(t, answer.Request{Tenant: cfg.Tenant, Question: q})
		if err != nil {
			t.Fatal(err)
		}
		if candidates != s.Chain.Options.FusedK || len(done.Sources) == 0 {
			t.Errorf("%s: %d candidates reranked, %d sources: want all %d fused candidates, to measure the largest state", c.name, candidates, len(done.Sources), s.Chain.Options.FusedK)
		}
		t.Logf("%s (child %d, parent %d chars): largest state %d bytes (%.0f%% of 256 KiB) at %s; %d candidates, %d sources",
			c.name, cfg.Chunking.ChildChars, cfg.Chunking.ParentChars, tr.MaxStateBytes, 100*float64(tr.MaxStateBytes)/maxPayload, tr.Largest, candidates, len(done.Sources))
		if tr.MaxStateBytes > maxPayload {
			t.Errorf("%s: a state of %d bytes is over the Step Functions limit of %d", c.name, tr.MaxStateBytes, maxPayload)
		}
	}
}

// bigDocument is n sections about annual leave, each about size characters of distinct sentences.
func bigDocument(n, size int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "# Leave policy %d\n\n", i)
		for j := 0; b.Len() < (i+1)*(size+40); j++ {
			fmt.Fprintf(&b, "Rule %d.%d: employees of site %d receive %d days of annual leave, carried over until month %d. ", i, j, i, 20+j%7, 1+j%12)
			if j%5 == 4 {
				b.WriteString("\n\n")
			}
		}
		b.WriteString("\n\n")
	}
	return b.String()
}
