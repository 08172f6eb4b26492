package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
)

// Asker answers one question without streaming: on AWS, a synchronous execution of the answer state
// machine (infra/statemachines/answer.asl.json). Errors are classified like the pipeline's.
type Asker interface {
	Ask(ctx context.Context, req answer.Request) (*answer.Done, error)
}

// askRequest is the body of POST /api/ask: chat's, without a conversation (nothing is stored).
type askRequest struct {
	Question  string   `json:"question"`
	KBs       []string `json:"kbs,omitempty"`
	Documents []string `json:"documents,omitempty"`
	// Filter restricts the answer's evidence to documents whose metadata passes it.
	Filter json.RawMessage `json:"filter,omitempty"`
}

// ask answers POST /api/ask with the done object as one JSON body: for callers that cannot read an event
// stream (scripts, an API Gateway integration, the canary). It is authorised exactly as /api/chat (the
// knowledge bases and documents the caller may read, roles re-checked, limits before any model call)
// and charges the tokens used; errors are JSON with their status, never a half answer.
func (l *library) ask(w http.ResponseWriter, r *http.Request) {
	p, ok := l.h.principal(w, r)
	if !ok {
		return
	}
	var in askRequest
	if err := decodeBody(w, r, &in, `{"question": ..., "kbs": [...]}`); err != nil {
		l.fail(w, r, err)
		return
	}
	req, err := l.question(r.Context(), p, in.Question, in.KBs, in.Documents)
	if err == nil {
		err = l.restrictKBs(r.Context(), p, &req)
	}
	if err == nil {
		err = l.restrictByFilter(r.Context(), p, in.Filter, &req)
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	admitted, limitsDown := l.h.admit(w, r, p)
	if !admitted {
		return
	}
	r, meter := metered(r)
	var done *answer.Done
	defer func() { l.h.charge(r.Context(), p, meter, done) }()
	ctx, cancel := context.WithTimeout(r.Context(), l.h.d.ChatTimeout)
	defer cancel()
	done, err = l.answer(ctx, req)
	if err == nil && done == nil {
		err = rag.Errorf("httpapi.ask", rag.KindInternal, "no answer")
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	if limitsDown {
		addDegraded(done, "limits")
	}
	l.h.d.Logger.Info("ask", "tenant", p.Tenant, "path", done.Path, "band", done.Confidence.Band, "answerer", done.Answerer, "degraded", done.Degraded)
	WriteJSON(w, http.StatusOK, done)
}

// answer runs the Asker when one is configured, else the chat pipeline with its events discarded.
func (l *library) answer(ctx context.Context, req answer.Request) (*answer.Done, error) {
	if l.h.d.Asker != nil {
		return l.h.d.Asker.Ask(ctx, req)
	}
	return l.run(ctx, req, func(string, any) error { return nil })
}
