// Package llm is docmind's chat-model provider: any OpenAI-compatible API through go-openai, streamed
// token by token. One retry layer lives here (a failed attempt is retried once, and only before the
// first token reached the caller: a half-streamed answer is never replayed).
package llm

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/docmind/docmind/shared/rag"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // system, user, assistant, tool
	Content string `json:"content"`
	// ToolCalls are the tools an assistant message asked for; ToolCallID names the call a tool message
	// answers.
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Images go with a user message to a model that reads images (the vision OCR engine's page
	// images), sent after Content as base64 data URLs.
	Images []Image `json:"-"`
}

// Image is one image sent to the model: its bytes and their media type (image/png, image/jpeg,
// image/webp or image/gif, the types OpenAI-compatible APIs take).
type Image struct {
	MIME string
	Data []byte
}

// Request is one completion.
type Request struct {
	Model       string
	Messages    []Message
	Temperature float32
	MaxTokens   int
}

// Usage is the token count the provider reported (zero when it did not).
type Usage struct {
	PromptTokens     int  `json:"prompt_tokens"`
	CompletionTokens int  `json:"completion_tokens"`
	Estimated        bool `json:"estimated,omitempty"` // counted by docmind's estimate, not reported by the provider
}

// Streamer streams a completion: onDelta receives each piece of text as it arrives; an error from
// onDelta stops the stream and is returned.
type Streamer interface {
	Stream(ctx context.Context, req Request, onDelta func(string) error) (Usage, error)
}

// OpenAI is a Streamer over an OpenAI-compatible API.
type OpenAI struct {
	client *openai.Client
	// RetryDelay is the pause before the one retry (default 500 ms).
	RetryDelay time.Duration
}

// NewOpenAI returns a client for baseURL (empty: api.openai.com) with the given HTTP client (nil: a
// client with a 2-minute overall timeout).
func NewOpenAI(baseURL, apiKey string, hc *http.Client) *OpenAI {
	c := openai.DefaultConfig(apiKey)
	if baseURL != "" {
		c.BaseURL = baseURL
	}
	if hc == nil {
		hc = &http.Client{Timeout: 2 * time.Minute}
	}
	c.HTTPClient = hc
	return &OpenAI{client: openai.NewClientWithConfig(c), RetryDelay: 500 * time.Millisecond}
}

// Stream implements Streamer.
func (o *OpenAI) Stream(ctx context.Context, req Request, onDelta func(string) error) (Usage, error) {
	const op = "llm.Stream"
	creq := chatRequest(req)
	creq.Stream, creq.StreamOptions = true, &openai.StreamOptions{IncludeUsage: true}
	var usage Usage
	// received is the text of the last attempt, kept only when a meter will need to estimate from it
	var received strings.Builder
	if meterOf(ctx) != nil {
		inner := onDelta
		onDelta = func(s string) error {
			received.WriteString(s)
			return inner(s)
		}
	}
	// billable: the provider may have generated (and billed) something. A call it refused before sending
	// anything (400, 401, 404, 429, 5xx, no connection) costs nothing and is not estimated: a wrong key or
	// an outage must not use up users' daily budgets while they get the offline answer.
	billable := false
	defer func() {
		if billable || usage.PromptTokens+usage.CompletionTokens > 0 {
			record(ctx, req, usage, received.String())
		}
	}()
	for attempt := 0; ; attempt++ {
		received.Reset()
		accepted, delivered, err := o.once(ctx, creq, onDelta, &usage)
		if err == nil || accepted || ctx.Err() != nil {
			billable = true // the provider took the call (and bills it), or it was cut while it ran
		}
		if err == nil {
			return usage, nil
		}
		var cb callbackError
		if errors.As(err, &cb) {
			billable = true // the caller stopped a stream the provider was generating
			return usage, cb.err
		}
		kind := classify(err)
		if delivered || attempt == 1 || kind != rag.KindUnavailable || ctx.Err() != nil {
			return usage, rag.E(op, kind, err)
		}
		if werr := rag.Wait(ctx, o.RetryDelay); werr != nil {
			return usage, rag.E(op, rag.KindUnavailable, err)
		}
	}
}

// chatRequest converts a Request to go-openai's.
func chatRequest(req Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		if len(m.Images) > 0 {
			msgs[i].Content, msgs[i].MultiContent = "", imageParts(m)
		}
		for _, c := range m.ToolCalls {
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, openai.ToolCall{ID: c.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: c.Name, Arguments: c.Arguments}})
		}
	}
	temp := req.Temperature
	if temp == 0 {
		// go-openai omits a zero temperature (omitempty) and the API then uses its default (1.0): send
		// the smallest positive value instead, which every provider treats as greedy.
		temp = math.SmallestNonzeroFloat32
	}
	return openai.ChatCompletionRequest{Model: req.Model, Messages: msgs, Temperature: temp, MaxTokens: req.MaxTokens}
}

// imageParts is a message with images as go-openai's content parts: the text first, then each image
// as a data URL at high detail (a page of small print is unreadable at low detail's 512 px).
func imageParts(m Message) []openai.ChatMessagePart {
	var parts []openai.ChatMessagePart
	if m.Content != "" {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeText, Text: m.Content})
	}
	for _, im := range m.Images {
		parts = append(parts, openai.ChatMessagePart{Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{
			URL: "data:" + im.MIME + ";base64," + base64.StdEncoding.EncodeToString(im.Data), Detail: openai.ImageURLDetailHigh}})
	}
	return parts
}

type callbackError struct{ err error }

func (c callbackError) Error() string { return c.err.Error() }

// once makes one streamed call. accepted: the provider answered 200 and began the stream (a call it
// bills even when the stream breaks before any text); delivered: some text reached onDelta.
func (o *OpenAI) once(ctx context.Context, creq openai.ChatCompletionRequest, onDelta func(string) error, usage *Usage) (accepted, delivered bool, err error) {
	stream, err := o.client.CreateChatCompletionStream(ctx, creq)
	if err != nil {
		return false, false, err
	}
	defer stream.Close()
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return true, delivered, nil
		}
		if err != nil {
			return true, delivered, err
		}
		if resp.Usage != nil {
			*usage = Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}
		}
		for _, c := range resp.Choices {
			if c.Delta.Content == "" {
				continue
			}
			delivered = true
			if err := onDelta(c.Delta.Content); err != nil {
				return true, true, callbackError{err}
			}
		}
	}
}

// classify maps provider errors to kinds: 429 and 5xx and transport errors are Unavailable (retried),
// 401/403 Permission, other 4xx Invalid.
func classify(err error) rag.Kind {
	var api *openai.APIError
	var reqErr *openai.RequestError
	status := 0
	switch {
	case errors.As(err, &api):
		status = api.HTTPStatusCode
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	}
	switch {
	case status == 0, status == http.StatusTooManyRequests, status >= 500:
		return rag.KindUnavailable
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return rag.KindPermission
	}
	return rag.KindInvalid
}
