package answer

import (
	"context"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

func TestTier0(t *testing.T) {
	for q, want := range map[string]string{
		"hi":                                   ShortChitchat,
		"Hello!":                               ShortChitchat,
		"thank you very much.":                 ShortChitchat,
		"你好":                                   ShortChitchat,
		"谢谢！":                                  ShortChitchat,
		"Which knowledge bases do you have?":   ShortKBMeta,
		"how many documents are there":         ShortKBMeta,
		"有哪些知识库？":                              ShortKBMeta,
		"有多少文档":                                ShortKBMeta,
		"hi, how many days of leave do I get?": "",
		"Thanks to the new policy, is leave paid?":    "",
		"Which documents mention the waiting period?": "",
		"你好，年假有多少天？":                                  "",
		"哪些文档提到了等待期？":                                 "",
	} {
		if got := Tier0(q); got != want {
			t.Errorf("Tier0(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestGuard(t *testing.T) {
	g := Guard{Phrases: ParsePhrases(" chest pain ; ;想自杀;"), Answer: "call 112"}
	if len(g.Phrases) != 2 {
		t.Fatalf("phrases %q", g.Phrases)
	}
	for q, want := range map[string]bool{"I have CHEST   pain now": true, "我想自杀": true, "chest x-ray coverage?": false, "": false} {
		if g.Match(q) != want {
			t.Errorf("Match(%q) = %v", q, !want)
		}
	}
	if (Guard{}).Match("anything") {
		t.Error("an empty guard matches nothing")
	}
}

type fakeCatalog struct{}

func (fakeCatalog) ListKBs(_ context.Context, tenant string) ([]rag.KnowledgeBase, error) {
	if tenant != "acme" {
		return nil, nil
	}
	return []rag.KnowledgeBase{{ID: "kb_1", Name: "handbook"}, {ID: "kb_2", Name: "contracts"}}, nil
}

func (fakeCatalog) ListDocuments(_ context.Context, _, kbID, status string) ([]rag.Document, error) {
	if status != "ready" {
		return nil, nil
	}
	if kbID == "kb_1" {
		return []rag.Document{{FileName: "leave.docx"}, {FileName: "travel.md"}}, nil
	}
	return []rag.Document{{FileName: "msa.pdf"}}, nil
}

var shortProtocol = `start token( token)*` // then the edge's done

func TestShortCircuits(t *testing.T) {
	fr := &fakeRetriever{res: &retrieve.Result{Grade: rank.Grade{NoEvidence: true}}}
	model := &fakeLLM{deltas: []string{"model"}}
	p := &Pipeline{Retriever: fr, LLM: model, Catalog: fakeCatalog{}, Guard: Guard{Phrases: []string{"chest pain"}, Answer: "Call 112 now."}}
	for _, c := range []struct {
		q, reason, contains string
		kbs                 []string
	}{
		{"I have chest pain, is it covered?", ShortEmergency, "Call 112 now.", nil},
		{"hello", ShortChitchat, "numbered citations", nil},
		{"你好", ShortChitchat, "你好", nil},
		{"which knowledge bases do you have?", ShortKBMeta, "**contracts**: 1 document(s)", nil},
		{"有哪些知识库？", ShortKBMeta, "leave.docx", []string{"kb_1"}},
	} {
		fr.got = retrieve.Query{}
		model.got.Model = "untouched"
		var rec recorder
		done, err := p.Run(context.Background(), Request{Tenant: "acme", KBIDs: c.kbs, Question: c.q}, rec.emit)
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		seq := strings.Join(rec.names, " ")
		if !strings.HasPrefix(seq, "start token") || !strings.HasSuffix(seq, "token") {
			t.Errorf("%s: events %q, want %s", c.q, seq, shortProtocol)
		}
		if done.ShortCircuit != c.reason || !strings.Contains(done.Answer, c.contains) || done.Confidence.Band != "" {
			t.Errorf("%s: done %+v", c.q, done)
		}
		if fr.got.Text != "" || model.got.Model != "untouched" {
			t.Errorf("%s: a short circuit reached retrieval or the model", c.q)
		}
		if c.kbs != nil && strings.Contains(done.Answer, "contracts") {
			t.Errorf("%s: KB_META listed a knowledge base outside the request's scope:\n%s", c.q, done.Answer)
		}
	}
	// Without a catalog, KB questions take the full pipeline.
	p.Catalog = nil
	if done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "how many documents"}, (&recorder{}).emit); err != nil || done.ShortCircuit != "" {
		t.Fatalf("no catalog: %+v %v", done, err)
	}
}

func TestMetaConversation(t *testing.T) {
	for q, want := range map[string]string{
		"Summarize the above":            ShortMetaConversation,
		"please recap our conversation.": ShortMetaConversation,
		"What did I ask so far?":         ShortMetaConversation,
		"总结一下上面的对话":                      ShortMetaConversation,
		"我刚才问了什么？":                       ShortMetaConversation,
		"Summarize the leave policy":     "",
		"What did the contract say?":     "",
		"总结一下年假政策":                       "",
	} {
		if got := Tier0(q); got != want {
			t.Errorf("Tier0(%q) = %q, want %q", q, got, want)
		}
	}
	fr := &fakeRetriever{}
	model := &fakeLLM{}
	p := &Pipeline{Retriever: fr, LLM: model}
	history := []llm.Message{{Role: "user", Content: "How long is annual leave?"}, {Role: "assistant", Content: "20 days [1]."},
		{Role: "user", Content: "And sick leave?"}, {Role: "assistant", Content: "10 days [2]."}}
	done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "What did I ask so far?", History: history}, (&recorder{}).emit)
	if err != nil || done.ShortCircuit != ShortMetaConversation || !strings.Contains(done.Answer, "1. How long is annual leave?\n2. And sick leave?") || fr.got.Text != "" || model.got.Model != "" {
		t.Fatalf("meta conversation: %+v %v", done, err)
	}
	done, _ = p.Run(context.Background(), Request{Tenant: "acme", Question: "总结一下上面的对话"}, (&recorder{}).emit)
	if !strings.Contains(done.Answer, "第一个问题") {
		t.Fatalf("no history: %q", done.Answer)
	}
}

func TestHistoryInPrompt(t *testing.T) {
	history := []llm.Message{{Role: "user", Content: strings.Repeat("old question ", 400)}, {Role: "assistant", Content: "old answer [1]"},
		{Role: "user", Content: "How long is annual leave?"}, {Role: "assistant", Content: "Twenty days [1][2]."}}
	p, err := BuildPrompt(PromptInput{Question: "And unused days?", Evidence: []rank.Evidence{ev("h.docx", "Unused leave carries over.", 1)}, Mode: ModeStandard, Ceiling: 900, History: history})
	if err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, m := range p.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, " ") != "system assistant user assistant user" && strings.Join(roles, " ") != "system user assistant user" {
		t.Fatalf("roles %v", roles)
	}
	if p.History == 0 || p.Tokens > 900 {
		t.Fatalf("history %d tokens %d", p.History, p.Tokens)
	}
	n := len(p.Messages)
	if p.Messages[n-2].Content != "Twenty days ." || p.Messages[n-3].Content != "How long is annual leave?" || strings.Contains(p.Messages[1].Content, "old question old question") {
		t.Fatalf("history must keep the newest turns, without [n], and drop what does not fit: %+v", p.Messages)
	}
	if !strings.Contains(p.Messages[n-1].Content, "Question: And unused days?") {
		t.Fatal("the question is the last message")
	}
}
