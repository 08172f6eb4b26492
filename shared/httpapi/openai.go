package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/sse"
)

// The OpenAI-compatible endpoint (DESIGN.md section 7): POST /v1/chat/completions runs the same pipeline
// for any OpenAI client. The last user message is the question and earlier user and assistant messages
// are the history; the client's system messages are ignored (docmind's own prompt rules; a caller cannot
// replace them). Citations travel as [n] markers in the text and as a `sources` extension field.

// maxOpenAIBody bounds the request (a long history is cut to the newest turns anyway).
const maxOpenAIBody = 512 << 10

type oaiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string, or an array of parts of which text parts are read
}

type oaiRequest struct {
	Model    string       `json:"model"`
	Messages []oaiMessage `json:"messages"`
	Stream   bool         `json:"stream"`
	// Extensions: the knowledge bases (ids or names) and documents to answer from.
	KBs       []string `json:"kbs"`
	Documents []string `json:"documents"`
}

// text returns a message's text: the string, or its text parts joined.
func (m oaiMessage) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", errors.New("content must be a string or an array of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// parseOpenAI validates the request and splits it into question and history (newest historyTurns).
func parseOpenAI(r *http.Request) (oaiRequest, string, []llm.Message, error) {
	const op = "httpapi"
	var in oaiRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, maxOpenAIBody+1))
	if err != nil {
		return in, "", nil, rag.Errorf(op, rag.KindInvalid, "reading the body: %v", err)
	}
	if len(body) > maxOpenAIBody {
		return in, "", nil, errTooLarge{limit: maxOpenAIBody}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return in, "", nil, rag.Errorf(op, rag.KindInvalid, `body must be {"model": ..., "messages": [...]}: %v`, err)
	}
	if len(in.Messages) == 0 || len(in.Messages) > 200 {
		return in, "", nil, rag.Errorf(op, rag.KindInvalid, "messages must hold 1 to 200 messages")
	}
	last := in.Messages[len(in.Messages)-1]
	if last.Role != "user" {
		return in, "", nil, rag.Errorf(op, rag.KindInvalid, "the last message must be the user's question")
	}
	question, err := last.text()
	if err != nil {
		return in, "", nil, rag.Errorf(op, rag.KindInvalid, "message %d: %v", len(in.Messages)-1, err)
	}
	var history []llm.Message
	for i, m := range in.Messages[:len(in.Messages)-1] {
		switch m.Role {
		case "user", "assistant":
			t, err := m.text()
			if err != nil {
				return in, "", nil, rag.Errorf(op, rag.KindInvalid, "message %d: %v", i, err)
			}
			history = append(history, llm.Message{Role: m.Role, Content: t})
		case "system", "developer", "tool":
			// docmind's own prompt rules; tool turns belong to the client's agent, not to this answer
		default:
			return in, "", nil, rag.Errorf(op, rag.KindInvalid, "message %d: unknown role %q", i, m.Role)
		}
	}
	if len(history) > historyTurns {
		history = history[len(history)-historyTurns:]
	}
	return in, question, history, nil
}

// oaiSource is a source in the `sources` extension.
type oaiSource struct {
	N        int     `json:"n"`
	FileName string  `json:"file_name,omitempty"`
	Chapter  string  `json:"chapter,omitempty"`
	Page     int     `json:"page,omitempty"`
	Snippet  string  `json:"snippet"`
	Score    float64 `json:"score"`
	Cited    bool    `json:"cited"`
}

// oaiDocmind is the `docmind` extension: what the chat endpoint's done says beyond the text.
type oaiDocmind struct {
	Confidence float64  `json:"confidence"`
	Band       string   `json:"band"`
	Path       string   `json:"path"`
	FromCache  bool     `json:"from_cache"`
	Degraded   []string `json:"degraded"`
	Partial    bool     `json:"partial,omitempty"`
}

func oaiExtensions(d *answer.Done) ([]oaiSource, oaiDocmind) {
	src := make([]oaiSource, 0, len(d.Sources))
	for _, s := range d.Sources {
		src = append(src, oaiSource{N: s.N, FileName: s.FileName, Chapter: s.Chapter, Page: s.Page, Snippet: s.Snippet, Score: s.Score, Cited: s.Cited})
	}
	deg := d.Degraded
	if deg == nil {
		deg = []string{}
	}
	return src, oaiDocmind{Confidence: d.Confidence.Score, Band: d.Confidence.Band, Path: d.Path, FromCache: d.FromCache, Degraded: deg, Partial: d.Partial}
}

func finishReason(d *answer.Done) string {
	if d.Truncated || d.Partial {
		return "length"
	}
	return "stop"
}

func usage(d *answer.Done) map[string]int {
	return map[string]int{"prompt_tokens": d.Usage.PromptTokens, "completion_tokens": d.Usage.CompletionTokens,
		"total_tokens": d.Usage.PromptTokens + d.Usage.CompletionTokens}
}

// oaiError writes an error in OpenAI's shape ({"error": {"message", "type", "code"}}), which OpenAI
// clients parse; the message is public text only.
func (l *library) oaiError(w http.ResponseWriter, err error) {
	var tl errTooLarge
	if errors.As(err, &tl) {
		WriteJSON(w, http.StatusRequestEntityTooLarge, map[string]any{"error": map[string]any{"message": tl.Error(), "type": "invalid_request_error", "code": "TooLarge"}})
		return
	}
	kind := rag.KindOf(err)
	code := Status(kind)
	if code >= 500 {
		l.h.d.Logger.Error("openai-compatible chat failed", "kind", kind.String(), "err", err)
	}
	typ := "invalid_request_error"
	if code >= 500 {
		typ = "server_error"
	}
	WriteJSON(w, code, map[string]any{"error": map[string]any{"message": publicMessage(err), "type": typ, "code": kind.String()}})
}

func (l *library) chatCompletions(w http.ResponseWriter, r *http.Request) {
	p, ok := PrincipalFrom(r.Context())
	if !ok {
		var err error
		if p, err = l.h.authenticate(r); err != nil {
			l.oaiError(w, err)
			return
		}
	}
	in, question, history, err := parseOpenAI(r)
	if err != nil {
		l.oaiError(w, err)
		return
	}
	req, err := l.question(r, p, question, in.KBs, in.Documents)
	if err == nil {
		err = l.restrictKBs(r.Context(), p, &req)
	}
	if err != nil {
		l.oaiError(w, err)
		return
	}
	if admitted, _ := l.h.admit(w, r, p); !admitted {
		return
	}
	req.History = history
	ctx, cancel := context.WithTimeout(r.Context(), l.h.d.ChatTimeout)
	defer cancel()
	id := "chatcmpl-" + strings.TrimPrefix(rag.NewID("x"), "x_")
	created := time.Now().Unix()
	model := "docmind"
	if !in.Stream {
		done, err := l.run(ctx, req, func(string, any) error { return nil })
		if done != nil {
			l.h.spend(r.Context(), p, done.Usage.PromptTokens+done.Usage.CompletionTokens)
		}
		if err != nil {
			l.oaiError(w, err)
			return
		}
		src, ext := oaiExtensions(done)
		WriteJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": map[string]string{"role": "assistant", "content": done.Answer},
				"finish_reason": finishReason(done)}},
			"usage": usage(done), "sources": src, "docmind": ext})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	broken := false
	write := func(v any) error {
		if broken {
			return errors.New("httpapi: stream closed")
		}
		b, err := sse.Encode(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			broken = true
			return err
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			broken = true
			return err
		}
		return nil
	}
	chunk := func(delta map[string]string, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if err := write(chunk(map[string]string{"role": "assistant", "content": ""}, nil)); err != nil {
		return
	}
	done, err := l.run(ctx, req, func(name string, v any) error {
		t, ok := v.(answer.TokenEvent)
		if !ok {
			return nil
		}
		return write(chunk(map[string]string{"content": t.Text}, nil))
	})
	if done != nil {
		l.h.spend(r.Context(), p, done.Usage.PromptTokens+done.Usage.CompletionTokens)
	}
	if err != nil {
		// OpenAI streams a failure as an error object; clients raise it.
		_ = write(map[string]any{"error": map[string]any{"message": publicMessage(err), "type": "server_error", "code": rag.KindOf(err).String()}})
		return
	}
	last := chunk(map[string]string{}, finishReason(done))
	last["usage"] = usage(done)
	last["sources"], last["docmind"] = oaiExtensions(done)
	if write(last) == nil {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		_ = rc.Flush()
	}
}
