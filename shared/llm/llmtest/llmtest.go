// Package llmtest is an in-process OpenAI-compatible chat server for tests: it records every call and
// answers from a script, streamed (word by word, optionally cut mid-answer) or not (with tool calls).
package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Message is a recorded message. Content is a string, or an array of parts in the OpenAI form (text
// and image_url): the text parts are joined into Content and the image URLs kept in Images.
type Message struct {
	Role       string          `json:"role"`
	Content    string          `json:"-"`
	Images     []string        `json:"-"`
	RawContent json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls,omitempty"`
}

// decodeContent fills Content and Images from RawContent; a content of another shape is an error, as
// the real API refuses it.
func (m *Message) decodeContent() error {
	raw := m.RawContent
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	if raw[0] == '"' {
		return json.Unmarshal(raw, &m.Content)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return fmt.Errorf("content is neither a string nor an array of parts: %w", err)
	}
	var text []string
	for _, p := range parts {
		switch {
		case p.Type == "text":
			text = append(text, p.Text)
		case p.Type == "image_url" && p.ImageURL != nil && p.ImageURL.URL != "":
			m.Images = append(m.Images, p.ImageURL.URL)
		default:
			return fmt.Errorf("a content part of type %q without its field", p.Type)
		}
	}
	m.Content = strings.Join(text, "\n")
	return nil
}

// Call is one recorded request.
type Call struct {
	Model       string    `json:"model"`
	Stream      bool      `json:"stream"`
	Temperature float64   `json:"temperature"`
	MaxTokens   int       `json:"max_tokens"`
	Messages    []Message `json:"messages"`
	Tools       []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	// Received is when the request arrived; FirstDelta when a stream's first delta was written.
	Received   time.Time `json:"-"`
	FirstDelta time.Time `json:"-"`
}

// System returns the first system message.
func (c Call) System() string {
	for _, m := range c.Messages {
		if m.Role == "system" {
			return m.Content
		}
	}
	return ""
}

// Last returns the last message's content.
func (c Call) Last() string {
	if len(c.Messages) == 0 {
		return ""
	}
	return c.Messages[len(c.Messages)-1].Content
}

// ToolNames lists the tools offered.
func (c Call) ToolNames() []string {
	var out []string
	for _, t := range c.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// The usage the server reports: every streamed call (in its last chunk, which a cut stream never sends)
// and every non-streamed call.
const (
	StreamPromptTokens, StreamCompletionTokens = 100, 10
	PlainPromptTokens, PlainCompletionTokens   = 50, 5
)

// ReportedTokens is the prompt and completion tokens the server reports for c when it answers in full.
func (c Call) ReportedTokens() int {
	if c.Stream {
		return StreamPromptTokens + StreamCompletionTokens
	}
	return PlainPromptTokens + PlainCompletionTokens
}

// ToolCall is a scripted tool call.
type ToolCall struct {
	ID, Name, Arguments string
}

// Reply is what the server answers to one call.
type Reply struct {
	Content   string
	ToolCalls []ToolCall // non-streamed calls only
	// Status, when non-zero, fails the call with that HTTP status.
	Status int
	// CutAfter, when positive, breaks a stream after that many deltas (garbage, then the connection ends).
	CutAfter int
	// Gap is the pause before each delta after the first (a model's inter-token time).
	Gap time.Duration
}

// Server is the fake.
type Server struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []*Call
	script func(Call) Reply
}

// New starts a server answering with script; it stops when the test ends. The base URL for clients is
// s.URL.
func New(t testing.TB, script func(Call) Reply) *Server {
	s := &Server{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// SetScript replaces the script.
func (s *Server) SetScript(script func(Call) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = script
}

// Calls returns the calls recorded so far and forgets them.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		out[i] = *c
	}
	s.calls = nil
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var c Call
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 32<<20)).Decode(&c); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	for i := range c.Messages {
		if err := c.Messages[i].decodeContent(); err != nil {
			http.Error(w, `{"error":{"message":"bad content"}}`, http.StatusBadRequest)
			return
		}
	}
	c.Received = time.Now()
	s.mu.Lock()
	rec := &c
	s.calls = append(s.calls, rec)
	script := s.script
	s.mu.Unlock()
	rep := script(c)
	if rep.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rep.Status)
		fmt.Fprintf(w, `{"error":{"message":"scripted status %d","type":"test"}}`, rep.Status)
		return
	}
	if !c.Stream {
		type fn struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		type tc struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function fn     `json:"function"`
		}
		msg := map[string]any{"role": "assistant", "content": rep.Content}
		var tcs []tc
		for _, t := range rep.ToolCalls {
			tcs = append(tcs, tc{ID: t.ID, Type: "function", Function: fn{Name: t.Name, Arguments: t.Arguments}})
		}
		if len(tcs) > 0 {
			msg["tool_calls"] = tcs
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-test", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage": map[string]int{"prompt_tokens": PlainPromptTokens, "completion_tokens": PlainCompletionTokens,
				"total_tokens": PlainPromptTokens + PlainCompletionTokens}})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	for i, d := range splitWords(rep.Content) {
		if i > 0 && rep.Gap > 0 {
			select {
			case <-time.After(rep.Gap):
			case <-r.Context().Done():
				return
			}
		}
		if rep.CutAfter > 0 && i == rep.CutAfter {
			fmt.Fprint(w, "data: {broken\n\n")
			flush()
			return
		}
		b, _ := json.Marshal(d)
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", b)
		flush()
		if i == 0 {
			s.mu.Lock()
			rec.FirstDelta = time.Now()
			s.mu.Unlock()
		}
	}
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n",
		StreamPromptTokens, StreamCompletionTokens, StreamPromptTokens+StreamCompletionTokens)
	fmt.Fprint(w, "data: [DONE]\n\n")
	flush()
}

// splitWords splits text after each space, so that the deltas concatenate back to it.
func splitWords(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
