package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/docmind/docmind/shared/rag"
)

// A stored answer is a copy of document text (its snippets, the answer itself, the trace's evidence).
// Owning the conversation is not enough to read it again: the caller must still be able to read every
// knowledge base the answer drew on. A revoked reader, or anyone after the knowledge base is deleted, gets
// the message with its answer, sources and trace withheld; their own questions stay (they wrote them).

// withheldReason is the one line a withheld answer carries instead of its text.
const withheldReason = "this answer drew on a knowledge base you can no longer read (access revoked or knowledge base deleted)"

// shownMessage is a stored message as the API shows it.
type shownMessage struct {
	rag.Message
	Withheld       bool   `json:"withheld,omitempty"`
	WithheldReason string `json:"withheld_reason,omitempty"`
}

// kbReadable reports whether the caller may read a knowledge base that still exists.
type kbReadable func(kbID string) bool

// readableNow loads what the caller may read at this moment: roles read afresh (not the request's memo)
// and only knowledge bases that exist (an admin "owns every knowledge base", deleted ones included).
func (l *library) readableNow(ctx context.Context, p rag.Principal) (kbReadable, error) {
	roles, err := l.h.roles(context.WithValue(ctx, rolesKey{}, (*rolesMemo)(nil)), p)
	if err != nil {
		return nil, err
	}
	kbs, err := l.lib.ListKBs(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	ok := make(map[string]bool, len(kbs))
	for _, kb := range roles.Readable(kbs) {
		ok[kb.ID] = true
	}
	return func(id string) bool { return ok[id] }, nil
}

// withholdUnreadable returns the messages as shown to the caller and the conversation with its summary
// cleared when any answer was withheld (the summary condenses those answers). An assistant message that
// names no knowledge base in its sources or trace is judged by the conversation's knowledge bases.
func withholdUnreadable(conv rag.Conversation, msgs []rag.Message, readable kbReadable) (rag.Conversation, []shownMessage) {
	out := make([]shownMessage, len(msgs))
	any := false
	for i, m := range msgs {
		out[i] = shownMessage{Message: m}
		if m.Role == "user" {
			continue
		}
		kbs := messageKBs(m)
		if len(kbs) == 0 {
			kbs = conv.KBIDs
		}
		for _, id := range kbs {
			if !readable(id) {
				out[i] = withheld(m)
				any = true
				break
			}
		}
	}
	if any {
		conv.Summary = ""
	}
	return conv, out
}

// withheld keeps a message's identity and bookkeeping, drops every byte that came from documents.
func withheld(m rag.Message) shownMessage {
	m.Content, m.Sources, m.Trace, m.Band, m.Confidence = "", nil, nil, "", 0
	return shownMessage{Message: m, Withheld: true, WithheldReason: withheldReason}
}

// messageKBs collects every knowledge-base id a stored answer names: "kb_id" and "kb_ids" anywhere in its
// sources and trace. An unreadable trace names an impossible id, so the message is withheld rather than
// shown unchecked.
func messageKBs(m rag.Message) []string {
	var ids []string
	for _, raw := range []json.RawMessage{m.Sources, m.Trace} {
		if len(raw) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return []string{"unreadable-trace"}
		}
		ids = collectKBIDs(v, ids)
	}
	return ids
}

func collectKBIDs(v any, ids []string) []string {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			switch s := x.(type) {
			case string:
				if k == "kb_id" && s != "" {
					ids = append(ids, s)
				} else if k == "data" {
					// a trace event's data is itself JSON text
					var inner any
					if json.Unmarshal([]byte(s), &inner) == nil {
						ids = collectKBIDs(inner, ids)
					}
				}
			case []any:
				if k == "kb_ids" {
					for _, e := range s {
						if id, ok := e.(string); ok && id != "" {
							ids = append(ids, id)
						}
					}
					continue
				}
				ids = collectKBIDs(s, ids)
			default:
				ids = collectKBIDs(x, ids)
			}
		}
	case []any:
		for _, x := range t {
			ids = collectKBIDs(x, ids)
		}
	}
	return ids
}

// withoutSummaries drops the stored summaries from a conversation list: a summary condenses earlier
// answers (document text) and the list is not checked message by message; the prompt, not the page,
// needs it, and GET .../messages shows it when every answer behind it is still readable.
func withoutSummaries(list []rag.Conversation) []rag.Conversation {
	for i := range list {
		list[i].Summary = ""
	}
	return list
}

// callerOf returns the request's principal (set by authn), authenticating again when a route runs
// without it.
func (l *library) callerOf(r *http.Request) (rag.Principal, error) {
	if p, ok := PrincipalFrom(r.Context()); ok {
		return p, nil
	}
	return l.h.authenticate(r)
}

// visibleHistory filters a continued conversation's earlier messages the same way before they become the
// prompt's history: a withheld answer must not reach the model (which would repeat it) either.
func (l *library) visibleHistory(r *http.Request, conv rag.Conversation, msgs []rag.Message) (rag.Conversation, []rag.Message, error) {
	p, err := l.callerOf(r)
	if err != nil {
		return conv, nil, err
	}
	readable, err := l.readableNow(r.Context(), p)
	if err != nil {
		return conv, nil, err
	}
	conv, shown := withholdUnreadable(conv, msgs, readable)
	out := make([]rag.Message, 0, len(shown))
	for _, m := range shown {
		if !m.Withheld {
			out = append(out, m.Message)
		}
	}
	return conv, out, nil
}
