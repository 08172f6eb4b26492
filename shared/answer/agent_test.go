package answer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

// scriptedAgent replies from a script, one entry per call; it records what it was sent.
type scriptedAgent struct {
	mu      sync.Mutex
	replies []func(n int) (llm.Reply, error)
	got     []llm.Request
	tools   []string
}

func (s *scriptedAgent) CallTools(_ context.Context, req llm.Request, tools []llm.Tool) (llm.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, req)
	s.tools = s.tools[:0]
	for _, t := range tools {
		s.tools = append(s.tools, t.Name)
	}
	n := len(s.got)
	if n > len(s.replies) {
		return llm.Reply{Content: "DONE"}, nil
	}
	return s.replies[n-1](n)
}

func calls(cs ...llm.ToolCall) func(int) (llm.Reply, error) {
	return func(int) (llm.Reply, error) {
		return llm.Reply{ToolCalls: cs, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 2}}, nil
	}
}

func call(id, name, query string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Arguments: fmt.Sprintf(`{"query":%q}`, query)}
}

// toolRetriever returns evidence by query text, recording every query and whether it was keyword-only.
type toolRetriever struct {
	mu      sync.Mutex
	ev      map[string][]rank.Evidence
	queries []string
}

func (b *toolRetriever) Retrieve(_ context.Context, q retrieve.Query) (*retrieve.Result, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	tag := q.Text
	if q.KeywordOnly {
		tag = "kw:" + tag
	}
	b.queries = append(b.queries, tag)
	ev := b.ev[q.Text]
	tier := rank.TierLow
	if len(ev) > 0 {
		tier = rank.TierHigh
	}
	return &retrieve.Result{Evidence: ev, Reranked: ev, Grade: rank.Grade{Tier: tier, NoEvidence: len(ev) == 0}}, nil
}

const complexQuestion = "Walk me through everything a new full-time employee should know about annual leave and the HR-17 request form."

func TestAgenticPath(t *testing.T) {
	leave := ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 0.9)
	form := ev("forms.md", "Leave is requested with form HR-17, signed by the line manager.", 0.8)
	r := &toolRetriever{ev: map[string][]rank.Evidence{"annual leave": {leave}, "HR-17": {form, leave}}}
	agent := &scriptedAgent{replies: []func(int) (llm.Reply, error){
		calls(call("1", "search_docs", "annual leave")),
		calls(call("2", "keyword_search", "HR-17"), llm.ToolCall{ID: "3", Name: "delete_documents", Arguments: `{"query":"x"}`},
			llm.ToolCall{ID: "4", Name: "search_docs", Arguments: `not json`}),
		calls(call("5", "search_docs", "annual leave")), // nothing new: the loop stops
	}}
	model := &fakeLLM{deltas: []string{"20 days [1], form HR-17 [2]."}}
	p := &Pipeline{Retriever: r, LLM: model, Model: "main", Agent: &Agent{LLM: agent, Model: "main"}}
	var rec recorder
	done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: complexQuestion}, rec.emit)
	if err != nil {
		t.Fatal(err)
	}
	if done.Path != PathAgentic || done.AgentRounds != 3 || done.AgentStop != "NO_NEW_EVIDENCE" || len(agent.got) != 3 {
		t.Fatalf("path %s rounds %d stop %s calls %d", done.Path, done.AgentRounds, done.AgentStop, len(agent.got))
	}
	// Only the read-only tools ran; the keyword tool skipped the vector leg; the bad calls were reported
	// to the model, not executed; no standard retrieval on top.
	if want := []string{"annual leave", "kw:HR-17", "annual leave"}; !slices.Equal(r.queries, want) {
		t.Fatalf("queries %v, want %v", r.queries, want)
	}
	round2 := agent.got[2].Messages
	var toolMsgs []string
	for _, m := range round2 {
		if m.Role == "tool" {
			toolMsgs = append(toolMsgs, m.ToolCallID+": "+m.Content)
		}
	}
	if len(toolMsgs) != 4 || !strings.Contains(toolMsgs[1], "HR-17") || !strings.Contains(toolMsgs[2], `no tool "delete_documents"`) || !strings.Contains(toolMsgs[3], "not a JSON object") {
		t.Fatalf("tool messages %q", toolMsgs)
	}
	// The prompt never states the budget.
	sys := agent.got[0].Messages[0].Content
	if strings.Contains(sys, "4") || strings.Contains(strings.ToLower(sys), "round") || strings.Contains(strings.ToLower(sys), "four") {
		t.Fatalf("the agent prompt states a budget: %s", sys)
	}
	if slices.Contains(agent.tools, "web_search") {
		t.Fatal("web_search offered without a web provider")
	}
	// Evidence from both searches, deduplicated, in discovery order; the answer cites both.
	if len(done.Sources) != 2 || done.Sources[0].FileName != "handbook.docx" || done.Sources[1].FileName != "forms.md" || !done.Sources[1].Cited {
		t.Fatalf("sources %+v", done.Sources)
	}
	if n := strings.Count(strings.Join(rec.names, " "), "agent_step"); n != 3 {
		t.Fatalf("%d agent_step events: %v", n, rec.names)
	}
	// The agent's tokens are counted: 3 rounds x 10 prompt tokens + the answer's 100.
	if done.Usage.PromptTokens != 130 {
		t.Fatalf("usage %+v", done.Usage)
	}
}

func TestAgentStops(t *testing.T) {
	fresh := func(n int) (llm.Reply, error) {
		return llm.Reply{ToolCalls: []llm.ToolCall{call("c", "search_docs", fmt.Sprintf("q%d", n))}}, nil
	}
	r := &toolRetriever{ev: map[string][]rank.Evidence{}}
	for i := 1; i <= 9; i++ {
		q := fmt.Sprintf("q%d", i)
		e := ev(q+".md", "Passage lang.Number "+q+" about leave.", 0.5)
		r.ev[q] = []rank.Evidence{e}
	}
	// Every round finds something new: the budget stops it at 4.
	agent := &scriptedAgent{replies: slices.Repeat([]func(int) (llm.Reply, error){fresh}, 9)}
	p := &Pipeline{Retriever: r, Agent: &Agent{LLM: agent}}
	done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: complexQuestion}, (&recorder{}).emit)
	if err != nil || done.AgentRounds != 4 || done.AgentStop != "ROUND_LIMIT" || len(agent.got) != 4 || len(done.Sources) != 4 {
		t.Fatalf("budget: %+v %v", done, err)
	}
	// The model stops calling tools: MODEL_DONE after one search.
	agent = &scriptedAgent{replies: []func(int) (llm.Reply, error){fresh}}
	p.Agent.LLM = agent
	done, err = p.Run(context.Background(), Request{Tenant: "acme", Question: complexQuestion}, (&recorder{}).emit)
	if err != nil || done.AgentStop != "MODEL_DONE" || done.AgentRounds != 2 || len(done.Sources) != 1 {
		t.Fatalf("model done: %+v %v", done, err)
	}
	// The model fails at once: flagged, and the standard retrieval answers.
	r.queries = nil
	r.ev[complexQuestion] = []rank.Evidence{ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 0.9)}
	p.Agent.LLM = &scriptedAgent{replies: []func(int) (llm.Reply, error){func(int) (llm.Reply, error) {
		return llm.Reply{}, rag.Errorf("llm", rag.KindUnavailable, "503")
	}}}
	done, err = p.Run(context.Background(), Request{Tenant: "acme", Question: complexQuestion}, (&recorder{}).emit)
	if err != nil || done.AgentStop != "MODEL_FAILED" || !slices.Contains(done.Degraded, "agent") || len(done.Sources) != 1 || !slices.Equal(r.queries, []string{complexQuestion}) {
		t.Fatalf("model failed: %+v %v (queries %v)", done, err, r.queries)
	}
	// With a web provider the tool is offered; a selected document withholds it.
	spy := &scriptedAgent{}
	p.Agent.LLM, p.Web = spy, &WebSearch{URL: "http://127.0.0.1:1"}
	if _, err := p.Run(context.Background(), Request{Tenant: "acme", Question: complexQuestion}, (&recorder{}).emit); err != nil || !slices.Contains(spy.tools, "web_search") {
		t.Fatalf("web tool: %v %v", spy.tools, err)
	}
}
