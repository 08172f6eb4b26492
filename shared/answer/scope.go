package answer

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
)

// Short-circuit reasons (DESIGN.md steps 2 and 3): answered without retrieval or a model call.
const (
	ShortEmergency = "EMERGENCY"
	ShortChitchat  = "CHITCHAT"
	ShortKBMeta    = "KB_META"
	// ShortMetaConversation is a question about the conversation itself, answered from its history.
	ShortMetaConversation = "META_CONVERSATION"
)

// Guard is the safety guard: a question containing one of Phrases gets Answer, with no model call.
type Guard struct {
	Phrases []string
	Answer  string
}

// ParsePhrases splits a ;-separated list, dropping empty entries.
func ParsePhrases(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, strings.ToLower(p))
		}
	}
	return out
}

// Match reports whether q contains an emergency phrase (case-insensitive, whitespace-normalised).
func (g Guard) Match(q string) bool {
	q = strings.ToLower(lang.OneLine(q))
	for _, p := range g.Phrases {
		if strings.Contains(q, lang.OneLine(p)) {
			return true
		}
	}
	return false
}

// Tier-0 rules: whole-message patterns, so a real question that starts with "hi" is not chit-chat.
var (
	chitchat = regexp.MustCompile(`(?i)^\s*(hi|hello|hey|good (morning|afternoon|evening)|thanks?( you)?( very much)?|thank you|ok(ay)?|cool|great|bye|goodbye|who are you|what are you|` +
		`你好|您好|嗨|哈喽|谢谢|多谢|谢谢你|好的|再见|你是谁)[\s!！.。?？~]*$`)
	kbMeta = regexp.MustCompile(`(?i)^\s*(which|what) (knowledge bases|documents|files)( do you have| are there| can you (see|search|read))?\s*\??\s*$` +
		`|^\s*how many (documents|files|knowledge bases)( do you have| are there)?\s*\??\s*$` +
		`|^\s*(有|都有)?(哪些|什么|几个|多少)(个|份)?(知识库|文档|文件)[？?]?\s*$|^\s*(知识库|文档)(有哪些|有多少)[？?]?\s*$`)
)

var metaConversation = regexp.MustCompile(`(?i)^\s*(please\s+)?(summari[sz]e|recap)\s+(the\s+|our\s+|this\s+)?(above|conversation|chat|discussion|so far)[\s\w]*[.?!]?\s*$` +
	`|^\s*what\s+(did|have)\s+(i|we)\s+(ask(ed)?|talked about|discussed)(\s+so far|\s+before|\s+earlier)?\s*\??\s*$` +
	`|^\s*(请)?(总结|概括|回顾)(一下)?(上面|以上|前面|我们的|刚才的)(的)?(对话|内容|讨论|聊天)?[。？?]?\s*$|^\s*我(刚才|之前|前面)问(了|过)(什么|哪些)(问题)?[？?]?\s*$`)

// Tier0 classifies q by rules: a short-circuit reason, or "" for the full pipeline.
func Tier0(q string) string {
	switch {
	case metaConversation.MatchString(q):
		return ShortMetaConversation
	case chitchat.MatchString(q):
		return ShortChitchat
	case kbMeta.MatchString(q):
		return ShortKBMeta
	}
	return ""
}

// chitchatAnswer replies in the question's script.
func chitchatAnswer(q string) string {
	if lang.HasCJK(q) {
		return "你好！我根据你的知识库文档回答问题，并用编号标注出处。请直接提问。"
	}
	return "Hello! I answer questions from the documents in your knowledge bases, with numbered citations. Ask away."
}

// Catalog is what KB_META answers from: the relational store, scoped to the tenant.
type Catalog interface {
	ListKBs(ctx context.Context, tenant string) ([]rag.KnowledgeBase, error)
	ListDocuments(ctx context.Context, tenant, kbID, status string) ([]rag.Document, error)
}

// kbMetaAnswer lists the knowledge bases in scope (only those the request may read) with their ready
// documents.
func kbMetaAnswer(ctx context.Context, c Catalog, req Request) (string, error) {
	kbs, err := c.ListKBs(ctx, req.Tenant)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	n := 0
	for _, kb := range kbs {
		if len(req.KBIDs) > 0 && !slices.Contains(req.KBIDs, kb.ID) {
			continue
		}
		docs, err := c.ListDocuments(ctx, req.Tenant, kb.ID, "ready")
		if err != nil {
			return "", err
		}
		n++
		fmt.Fprintf(&b, "\n- **%s**: %d document(s)", kb.Name, len(docs))
		for i, d := range docs {
			if i == 20 {
				fmt.Fprintf(&b, "\n  - … and %d more", len(docs)-20)
				break
			}
			fmt.Fprintf(&b, "\n  - %s", d.FileName)
		}
	}
	if n == 0 {
		return "There is no knowledge base to search yet. Create one and add documents to it.", nil
	}
	return fmt.Sprintf("You can ask about %d knowledge base(s):", n) + b.String(), nil
}

// historyAnswer answers a question about the conversation from its history only: the questions asked so
// far, in order (no model call, so nothing can be invented).
func historyAnswer(q string, history []llm.Message) string {
	cjk := lang.HasCJK(q)
	var asked []string
	for _, m := range history {
		if m.Role == "user" {
			asked = append(asked, lang.Truncate(lang.OneLine(m.Content), 200))
		}
	}
	if len(asked) == 0 {
		if cjk {
			return "这是本次对话的第一个问题，还没有可以总结的内容。"
		}
		return "This is the first question in this conversation, so there is nothing earlier to summarise."
	}
	var b strings.Builder
	if cjk {
		fmt.Fprintf(&b, "本次对话中你问过 %d 个问题：", len(asked))
	} else {
		fmt.Fprintf(&b, "So far in this conversation you asked %d question(s):", len(asked))
	}
	for i, a := range asked {
		fmt.Fprintf(&b, "\n%d. %s", i+1, a)
	}
	return b.String()
}

// outOfScopeAnswer is the fixed refusal for requests no document could answer.
func outOfScopeAnswer(q string) string {
	if lang.HasCJK(q) {
		return "这个请求超出了知识库问答的范围。我只根据你的知识库文档回答问题，请换一个与文档相关的问题。"
	}
	return "That request is outside what docmind does: it answers questions from the documents in your knowledge bases. Ask about something the documents cover."
}
