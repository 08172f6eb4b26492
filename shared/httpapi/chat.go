package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/sse"
)

// chatRequest is the body of POST /api/chat.
type chatRequest struct {
	Question string `json:"question"`
	// KBs names the knowledge bases to search, by id or name; empty searches all of the caller's.
	KBs []string `json:"kbs,omitempty"`
}

// maxChatKBs bounds the knowledge bases one question may name.
const maxChatKBs = 32

// chat streams the answer as Server-Sent Events (DESIGN.md section 7). Errors found before the stream
// starts (bad body, unknown knowledge base) are plain JSON errors with their status; errors after it
// starts are an `error` event.
func (l *library) chat(w http.ResponseWriter, r *http.Request) {
	tenant, ok := l.scope(w, r)
	if !ok {
		return
	}
	var in chatRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, `body must be {"question": ..., "kbs": [...]}: %v`, err))
		return
	}
	if len(in.KBs) > maxChatKBs {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "at most %d knowledge bases per question", maxChatKBs))
		return
	}
	req := answer.Request{Tenant: tenant, Question: in.Question}
	for _, key := range in.KBs {
		kb, err := l.resolveKB(r.Context(), tenant, key)
		if err != nil {
			l.fail(w, r, err)
			return
		}
		req.KBIDs = append(req.KBIDs, kb.ID)
	}
	if err := l.h.d.Chat.Check(req); err != nil {
		l.fail(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), l.h.d.ChatTimeout)
	defer cancel()
	stream, err := sse.Start(w)
	if err != nil {
		return // the client is gone
	}
	if _, err := l.h.d.Chat.Run(ctx, req, stream.Send); err != nil {
		kind := rag.KindOf(err)
		if code := Status(kind); code >= 500 {
			l.h.d.Logger.Error("chat failed", "kind", kind.String(), "err", err)
		}
		_ = stream.Send("error", map[string]string{"code": kind.String(), "message": publicMessage(err)})
	}
}
