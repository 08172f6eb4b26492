package answer

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

func TestUnderstandRules(t *testing.T) {
	var u *Understander
	got := u.Understand(context.Background(), "How many days of annual leave?", nil)
	if got.Source != "rules" || got.Rewrite != "How many days of annual leave?" || got.Scope != ScopeKBQuery || got.Decompose {
		t.Fatalf("rules: %+v", got)
	}
	for _, q := range []string{"Compare plan A and plan B", "A 和 B 的区别是什么", "leave vs. sick days", "Is it paid? Who approves?"} {
		if got := u.Understand(context.Background(), q, nil); !got.Decompose || got.Complexity != "complex" || !strings.Contains(got.Reason, "decomposition forced") {
			t.Errorf("%q must force decomposition: %+v", q, got)
		}
	}
}

func TestUnderstandWithModel(t *testing.T) {
	reply := func(s string) *Understander { return &Understander{LLM: &fakeLLM{deltas: []string{s}}, Model: "small"} }
	good := "Sure:\n```json\n{\"scope\":\"KB_QUERY\",\"rewrite\":\"annual leave days for full-time employees\",\"intent\":\"policy lookup\"," +
		"\"complexity\":\"simple\",\"specificity\":\"precise\",\"decompose\":false,\"sub_queries\":[],\"time_aware\":false,\"memory_hints\":[\"works full-time\"]}\n```"
	got := reply(good).Understand(context.Background(), "and how many for me?", nil)
	if got.Source != "llm" || got.Rewrite != "annual leave days for full-time employees" || len(got.MemoryHints) != 1 {
		t.Fatalf("valid reply: %+v", got)
	}
	// Questions of 10 characters or fewer are not rewritten.
	if got := reply(good).Understand(context.Background(), "年假多少天？", nil); got.Rewrite != "年假多少天？" || got.Source != "llm" {
		t.Fatalf("short question rewritten: %+v", got)
	}
	for name, bad := range map[string]string{
		"not json":       "I think the user wants leave info.",
		"bad scope":      strings.Replace(good, "KB_QUERY", "WHATEVER", 1),
		"bad enum":       strings.Replace(good, `"precise"`, `"very"`, 1),
		"too many subs":  strings.Replace(good, `"sub_queries":[]`, `"sub_queries":["a","b","c","d","e"]`, 1),
		"empty sub item": strings.Replace(good, `"sub_queries":[]`, `"sub_queries":[" "]`, 1),
	} {
		got := reply(bad).Understand(context.Background(), "How many days of annual leave?", nil)
		if got.Source != "rules" || got.Rewrite != "How many days of annual leave?" || !strings.Contains(got.Reason, "rejected") {
			t.Errorf("%s: %+v", name, got)
		}
	}
	failing := &Understander{LLM: &fakeLLM{err: rag.Errorf("llm", rag.KindUnavailable, "down")}}
	if got := failing.Understand(context.Background(), "How many days of annual leave?", nil); got.Source != "rules" || !strings.Contains(got.Reason, "failed") {
		t.Fatalf("failing model: %+v", got)
	}
	// A model that never answers: the call's own deadline hands over to the rules, while the request's
	// context is still alive.
	slow := &Understander{LLM: hangingLLM{}, Timeout: 10 * time.Millisecond}
	ctx := context.Background()
	if got := slow.Understand(ctx, "How many days of annual leave?", nil); got.Source != "rules" || !strings.Contains(got.Reason, "deadline") || ctx.Err() != nil {
		t.Fatalf("hanging model: %+v", got)
	}
}

// hangingLLM blocks until its context ends.
type hangingLLM struct{}

func (hangingLLM) Stream(ctx context.Context, _ llm.Request, _ func(string) error) (llm.Usage, error) {
	<-ctx.Done()
	return llm.Usage{}, ctx.Err()
}

func TestPipelineUsesUnderstanding(t *testing.T) {
	fr := &fakeRetriever{res: &retrieve.Result{Evidence: []rank.Evidence{ev("h.docx", "Full-time employees receive 20 days of annual leave.", 0.9)},
		Grade: rank.Grade{Tier: rank.TierHigh}}}
	p := &Pipeline{Retriever: fr, Understander: &Understander{LLM: &fakeLLM{deltas: []string{`{"scope":"KB_QUERY","rewrite":"annual leave days full-time",` +
		`"intent":"x","complexity":"simple","specificity":"precise","decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":[]}`}}}}
	var rec recorder
	if _, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "and for full-timers?"}, rec.emit); err != nil {
		t.Fatal(err)
	}
	if fr.got.Text != "annual leave days full-time" {
		t.Fatalf("retrieval used %q, want the rewrite", fr.got.Text)
	}
	fr.got = retrieve.Query{}
	p.Understander = &Understander{LLM: &fakeLLM{deltas: []string{`{"scope":"OUT_OF_SCOPE","rewrite":"","intent":"poem","complexity":"simple",` +
		`"specificity":"fuzzy","decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":[]}`}}}
	rec = recorder{}
	done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "Write me a poem about cats"}, rec.emit)
	if err != nil || done.ShortCircuit != ScopeOutOfScope || fr.got.Text != "" || strings.Join(rec.names, " ")[:11] != "start token" {
		t.Fatalf("out of scope: %+v %v %v", done, rec.names, err)
	}
}

// scriptLLM answers each call with the next reply (an error reply fails the call).
type scriptLLM struct {
	replies []any
	calls   int
}

func (s *scriptLLM) Stream(_ context.Context, _ llm.Request, on func(string) error) (llm.Usage, error) {
	r := s.replies[min(s.calls, len(s.replies)-1)]
	s.calls++
	if err, ok := r.(error); ok {
		return llm.Usage{}, err
	}
	return llm.Usage{}, on(r.(string))
}

func TestHyDEForFuzzyQuestions(t *testing.T) {
	fuzzy := `{"scope":"KB_QUERY","rewrite":"how do we treat people who are away a lot","intent":"x","complexity":"simple",` +
		`"specificity":"fuzzy","decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":[]}`
	fr := &fakeRetriever{res: &retrieve.Result{Grade: rank.Grade{NoEvidence: true}}}
	for _, c := range []struct {
		second   any
		hyde     string
		degraded bool
	}{
		{"Employees absent for more than ten days need a medical certificate.", "Employees absent for more than ten days need a medical certificate.", false},
		{rag.Errorf("llm", rag.KindUnavailable, "down"), "", true},
	} {
		s := &scriptLLM{replies: []any{fuzzy, c.second}}
		p := &Pipeline{Retriever: fr, Understander: &Understander{LLM: s}}
		done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "how do we treat people who are away a lot?"}, (&recorder{}).emit)
		if err != nil {
			t.Fatal(err)
		}
		if fr.got.HyDE != c.hyde || fr.got.Text != "how do we treat people who are away a lot" || strings.Contains(strings.Join(done.Degraded, ","), "hyde") != c.degraded {
			t.Fatalf("query %+v, degraded %v", fr.got, done.Degraded)
		}
	}
	// Precise questions make no HyDE call.
	s := &scriptLLM{replies: []any{strings.Replace(fuzzy, `"fuzzy"`, `"precise"`, 1), "passage"}}
	p := &Pipeline{Retriever: fr, Understander: &Understander{LLM: s}}
	if _, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "how do we treat people who are away a lot?"}, (&recorder{}).emit); err != nil || s.calls != 1 || fr.got.HyDE != "" {
		t.Fatalf("precise: %d calls, hyde %q", s.calls, fr.got.HyDE)
	}
}
