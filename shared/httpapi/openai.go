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
	"github.com/docmind/docmind/shared/answer/inject"
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
	// Extensions: the knowledge bases (ids or names) and documents to answer from, and a metadata
	// filter (rag.MetaFilter's JSON form, docs/metadata-filters.md) on the documents.
	KBs       []string        `json:"kbs"`
	Documents []string        `json:"documents"`
	Filter    json.RawMessage `json:"filter,omitempty"`
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
		return in, "", nil, rag.Errorf(op, rag.KindInvalid, `body must be {"model": ..., "messages": [...]}: %s`, jsonProblem(err))
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
	// InjectionFlags names the retrieved passages that instruct the assistant (never obeyed, never
	// quoted); always present, [] when none does.
	InjectionFlags []inject.Flag `json:"injection_flags"`
	// Abstained says the documents do not answer the question (done.abstained); present only then, so
	// that the bytes of an answer's extension did not change
	Abstained bool `json:"abstained,omitempty"`
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
	flags := d.InjectionFlags
	if flags == nil {
		flags = []inject.Flag{}
	}
	return src, oaiDocmind{Confidence: d.Confidence.Score, Band: d.Confidence.Band, Path: d.Path, FromCache: d.FromCache, Degraded: deg, Partial: d.Partial,
		InjectionFlags: flags, Abstained: d.Abstained}
}

// The response types. Their fields are in alphabetical order, the order the map-built bodies had, so
// that the bytes OpenAI clients (and testdata/openai_*.golden) see did not change when they became
// types.

// oaiErrorBody is OpenAI's error shape ({"error": {"code", "message", "type"}}), which clients parse
// and raise; Message is public text only.
type oaiErrorBody struct {
	Error oaiErrorDetail `json:"error"`
}

type oaiErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Type    string `json:"type"`
}

// oaiUsage is the answer's token usage.
type oaiUsage struct {
	CompletionTokens int `json:"completion_tokens"`
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// oaiCompletion is a plain (non-streamed) chat.completion.
type oaiCompletion struct {
	Choices []oaiChoice `json:"choices"`
	Created int64       `json:"created"`
	Docmind oaiDocmind  `json:"docmind"`
	ID      string      `json:"id"`
	Model   string      `json:"model"`
	Object  string      `json:"object"` // "chat.completion"
	Sources []oaiSource `json:"sources"`
	Usage   oaiUsage    `json:"usage"`
}

type oaiChoice struct {
	FinishReason string     `json:"finish_reason"`
	Index        int        `json:"index"`
	Message      oaiContent `json:"message"`
}

type oaiContent struct {
	Content string `json:"content"`
	Role    string `json:"role"`
}

// oaiChunk is one chat.completion.chunk of a stream. Only the last carries the finish reason, the
// usage and the extensions; the others have a null finish_reason and none of those fields.
type oaiChunk struct {
	Choices []oaiDeltaChoice `json:"choices"`
	Created int64            `json:"created"`
	Docmind *oaiDocmind      `json:"docmind,omitempty"`
	ID      string           `json:"id"`
	Model   string           `json:"model"`
	Object  string           `json:"object"`           // "chat.completion.chunk"
	Sources []oaiSource      `json:"sources,omitzero"` // nil: not the last chunk; empty: no sources
	Usage   *oaiUsage        `json:"usage,omitempty"`
}

type oaiDeltaChoice struct {
	Delta        oaiDelta `json:"delta"`
	FinishReason *string  `json:"finish_reason"` // null until the last chunk
	Index        int      `json:"index"`
}

// oaiDelta is a chunk's text: the first names the role with empty content, the last is empty.
type oaiDelta struct {
	Content *string `json:"content,omitempty"`
	Role    string  `json:"role,omitempty"`
}

// oaiCall is what every body of one completion repeats.
type oaiCall struct {
	id      string
	created int64
	model   string
}

func newOAICall() oaiCall {
	return oaiCall{id: "chatcmpl-" + strings.TrimPrefix(rag.NewID("x"), "x_"), created: time.Now().Unix(), model: "docmind"}
}

// completion is the plain response to a finished answer.
func (c oaiCall) completion(d *answer.Done) oaiCompletion {
	src, ext := oaiExtensions(d)
	return oaiCompletion{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices: []oaiChoice{{FinishReason: finishReason(d), Message: oaiContent{Role: "assistant", Content: d.Answer}}},
		Usage:   usage(d), Sources: src, Docmind: ext}
}

// chunk is one streamed chunk with delta and no finish reason.
func (c oaiCall) chunk(delta oaiDelta) oaiChunk {
	return oaiChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
		Choices: []oaiDeltaChoice{{Delta: delta}}}
}

// last is the stream's final chunk: the finish reason, the usage and the extensions.
func (c oaiCall) last(d *answer.Done) oaiChunk {
	ch := c.chunk(oaiDelta{})
	reason, u := finishReason(d), usage(d)
	src, ext := oaiExtensions(d)
	ch.Choices[0].FinishReason, ch.Usage, ch.Sources, ch.Docmind = &reason, &u, src, &ext
	return ch
}

func finishReason(d *answer.Done) string {
	if d.Truncated || d.Partial {
		return "length"
	}
	return "stop"
}

func usage(d *answer.Done) oaiUsage {
	return oaiUsage{PromptTokens: d.Usage.PromptTokens, CompletionTokens: d.Usage.CompletionTokens,
		TotalTokens: d.Usage.PromptTokens + d.Usage.CompletionTokens}
}

// oaiError writes an error in OpenAI's shape; a server-side failure is logged here, at the edge.
func (l *library) oaiError(w http.ResponseWriter, err error) {
	var tl errTooLarge
	if errors.As(err, &tl) {
		WriteJSON(w, http.StatusRequestEntityTooLarge, oaiErrorBody{oaiErrorDetail{Message: tl.Error(), Type: "invalid_request_error", Code: "TooLarge"}})
		return
	}
	kind := rag.KindOf(err)
	code := Status(kind)
	typ := "invalid_request_error"
	if code >= 500 {
		l.h.d.Logger.Error("openai-compatible chat failed", "kind", kind.String(), "err", err)
		typ = "server_error"
	}
	WriteJSON(w, code, oaiErrorBody{oaiErrorDetail{Message: publicMessage(err), Type: typ, Code: kind.String()}})
}

// chatCompletions answers POST /v1/chat/completions: plain, or streamed as chunks when asked.
func (l *library) chatCompletions(w http.ResponseWriter, r *http.Request) {
	p, in, req, err := l.oaiAsk(r)
	if err != nil {
		l.oaiError(w, err)
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
	if in.Stream {
		done = l.streamCompletion(ctx, w, req, limitsDown)
		return
	}
	done, err = l.run(ctx, req, func(string, any) error { return nil })
	if done != nil && limitsDown {
		addDegraded(done, "limits") // limits failed open: the docmind extension says so
	}
	if err != nil {
		l.oaiError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, newOAICall().completion(done))
}

// oaiAsk authenticates the caller (unless a middleware did) and turns the body into the question the
// caller may ask, with its history. Errors: Unauthenticated, Invalid, NotFound, Permission.
func (l *library) oaiAsk(r *http.Request) (rag.Principal, oaiRequest, answer.Request, error) {
	p, ok := PrincipalFrom(r.Context())
	if !ok {
		var err error
		if p, err = l.h.authenticate(r); err != nil {
			return p, oaiRequest{}, answer.Request{}, err
		}
	}
	in, question, history, err := parseOpenAI(r)
	if err != nil {
		return p, in, answer.Request{}, err
	}
	req, err := l.question(r.Context(), p, question, in.KBs, in.Documents)
	if err == nil {
		err = l.restrictKBs(r.Context(), p, &req)
	}
	if err == nil {
		err = l.restrictByFilter(r.Context(), p, in.Filter, &req)
	}
	req.History = history
	return p, in, req, err
}

// streamCompletion streams the answer as chat.completion.chunk events: the role, one chunk per token,
// the last chunk with the finish reason and the extensions, then [DONE]. A failure after the headers
// is streamed as an error object, which OpenAI clients raise. It returns the answer's done object (nil
// when the answer did not finish), for the caller to charge.
func (l *library) streamCompletion(ctx context.Context, w http.ResponseWriter, req answer.Request, limitsDown bool) *answer.Done {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &oaiStream{w: w, rc: http.NewResponseController(w)}
	call := newOAICall()
	empty := ""
	if err := s.write(call.chunk(oaiDelta{Role: "assistant", Content: &empty})); err != nil {
		return nil
	}
	done, err := l.run(ctx, req, func(_ string, v any) error {
		if t, ok := v.(answer.TokenEvent); ok {
			return s.write(call.chunk(oaiDelta{Content: &t.Text}))
		}
		return nil
	})
	if done != nil && limitsDown {
		addDegraded(done, "limits")
	}
	if err != nil {
		_ = s.write(oaiErrorBody{oaiErrorDetail{Message: publicMessage(err), Type: "server_error", Code: rag.KindOf(err).String()}})
		return done
	}
	if s.write(call.last(done)) == nil {
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		_ = s.rc.Flush()
	}
	return done
}

// oaiStream writes data-only SSE events; after a failed write it refuses the rest, so that a client
// that went away stops the answer at its next token.
type oaiStream struct {
	w      io.Writer
	rc     *http.ResponseController
	broken bool
}

func (s *oaiStream) write(v any) error {
	if s.broken {
		return errors.New("httpapi: stream closed")
	}
	b, err := sse.Encode(v)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", b); err != nil {
		s.broken = true
		return err
	}
	// the lambdaurl writer cannot flush: it streams as it goes
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		s.broken = true
		return err
	}
	return nil
}
