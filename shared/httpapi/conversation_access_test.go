package httpapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

func TestWithholdUnreadable(t *testing.T) {
	readable := func(id string) bool { return id == "kb_open" }
	assistant := func(content, sources, trace string) rag.Message {
		m := rag.Message{Role: "assistant", Content: content, Band: rag.BandHigh, Confidence: 0.9}
		if sources != "" {
			m.Sources = json.RawMessage(sources)
		}
		if trace != "" {
			m.Trace = json.RawMessage(trace)
		}
		return m
	}
	conv := rag.Conversation{ID: "conv_1", KBIDs: []string{"kb_gone"}, Summary: "the code word is CANARY"}
	msgs := []rag.Message{
		{Role: "user", Content: "what is the code word?"},
		assistant("open answer", `[{"kb_id":"kb_open","snippet":"open"}]`, ""),
		assistant("CANARY from sources", `[{"kb_id":"kb_open"},{"kb_id":"kb_gone","snippet":"CANARY"}]`, ""),
		assistant("CANARY from the trace", "", `[{"event":"retrieval","data":{"hits":[{"kb_id":"kb_gone","text":"CANARY"}]}}]`),
		assistant("CANARY, no sources", "", ""),                 // judged by the conversation's knowledge bases
		assistant("CANARY, unreadable trace", "", `[{"event":`), // cannot be checked: withheld
		assistant("CANARY via kb_ids", "", `[{"event":"meta","data":{"kb_ids":["kb_open","kb_gone"]}}]`),
	}
	got, shown := withholdUnreadable(conv, msgs, readable)
	if got.Summary != "" {
		t.Errorf("summary kept although answers were withheld: %q", got.Summary)
	}
	if shown[0].Withheld || shown[0].Content != msgs[0].Content {
		t.Errorf("the user's own question: %+v, want kept", shown[0])
	}
	if shown[1].Withheld || shown[1].Content != "open answer" {
		t.Errorf("an answer from a readable knowledge base: %+v, want shown", shown[1])
	}
	b, _ := json.Marshal(shown)
	if n := strings.Count(string(b), "CANARY"); n != 0 {
		t.Errorf("%d canary occurrences in %s", n, b)
	}
	for i := 2; i < len(shown); i++ {
		if !shown[i].Withheld || shown[i].WithheldReason == "" || shown[i].Sources != nil || shown[i].Trace != nil || shown[i].Band != "" {
			t.Errorf("message %d: %+v, want withheld with a reason and no sources, trace or band", i, shown[i])
		}
	}
	// every knowledge base readable: nothing withheld, the summary stays
	all := func(string) bool { return true }
	if got, shown := withholdUnreadable(conv, msgs[:6], all); got.Summary == "" || shown[2].Withheld {
		t.Errorf("with every knowledge base readable: summary %q, message 2 withheld %v", got.Summary, shown[2].Withheld)
	}
	if list := withoutSummaries([]rag.Conversation{conv}); list[0].Summary != "" {
		t.Errorf("the conversation list keeps a summary: %q", list[0].Summary)
	}
}
