package answer

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/text"
)

// Short-circuit reasons (DESIGN.md steps 2 and 3): answered without retrieval or a model call.
const (
	ShortEmergency = "EMERGENCY"
	ShortChitchat  = "CHITCHAT"
	ShortKBMeta    = "KB_META"
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
	q = strings.ToLower(oneLine(q))
	for _, p := range g.Phrases {
		if strings.Contains(q, oneLine(p)) {
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

// Tier0 classifies q by rules: a short-circuit reason, or "" for the full pipeline.
func Tier0(q string) string {
	switch {
	case chitchat.MatchString(q):
		return ShortChitchat
	case kbMeta.MatchString(q):
		return ShortKBMeta
	}
	return ""
}

// chitchatAnswer replies in the question's script.
func chitchatAnswer(q string) string {
	for _, r := range q {
		if text.IsCJK(r) {
			return "你好！我根据你的知识库文档回答问题，并用编号标注出处。请直接提问。"
		}
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
		if len(req.KBIDs) > 0 && !contains(req.KBIDs, kb.ID) {
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

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
