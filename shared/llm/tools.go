package llm

import (
	"context"
	"encoding/json"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/docmind/docmind/shared/rag"
)

// Tool is a function the model may call. Parameters is its JSON Schema.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is one call the model asked for; Arguments is the JSON text it wrote (untrusted).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Reply is one non-streamed completion: text, tool calls, or both.
type Reply struct {
	Content   string
	ToolCalls []ToolCall
	Usage     Usage
}

// ToolCaller makes one completion that may call tools.
type ToolCaller interface {
	CallTools(ctx context.Context, req Request, tools []Tool) (Reply, error)
}

// CallTools implements ToolCaller, with the same one retry as Stream (a call delivers nothing until it
// returns, so a retry can never duplicate output).
func (o *OpenAI) CallTools(ctx context.Context, req Request, tools []Tool) (Reply, error) {
	const op = "llm.CallTools"
	creq := chatRequest(req)
	for _, t := range tools {
		creq.Tools = append(creq.Tools, openai.Tool{Type: openai.ToolTypeFunction,
			Function: &openai.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: t.Parameters}})
	}
	for attempt := 0; ; attempt++ {
		resp, err := o.client.CreateChatCompletion(ctx, creq)
		if err == nil {
			r := Reply{Usage: Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens}}
			record(ctx, req, r.Usage, replyText(resp))
			if len(resp.Choices) == 0 {
				return r, rag.Errorf(op, rag.KindInvalid, "the model returned no choice")
			}
			m := resp.Choices[0].Message
			r.Content = m.Content
			for _, c := range m.ToolCalls {
				r.ToolCalls = append(r.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
			return r, nil
		}
		kind := classify(err)
		if ctx.Err() != nil {
			record(ctx, req, Usage{}, "") // a call cut by the caller: the provider has read the prompt
		}
		if attempt == 1 || kind != rag.KindUnavailable || ctx.Err() != nil {
			return Reply{}, rag.E(op, kind, err)
		}
		if werr := rag.Wait(ctx, o.RetryDelay); werr != nil {
			return Reply{}, rag.E(op, rag.KindUnavailable, err)
		}
	}
}

// replyText is a reply's text and tool-call arguments, what an estimate of its completion tokens reads.
func replyText(resp openai.ChatCompletionResponse) string {
	var b strings.Builder
	for _, c := range resp.Choices {
		b.WriteString(c.Message.Content)
		for _, t := range c.Message.ToolCalls {
			b.WriteString(t.Function.Arguments)
		}
	}
	return b.String()
}
