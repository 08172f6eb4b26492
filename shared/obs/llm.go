package obs

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
)

// Streamer wraps a model client with one client span per call: the model, the tokens the provider
// reported (or docmind estimated) and the cost at the configured prices (USD per million tokens).
type Streamer struct {
	Next              llm.Streamer
	Tracer            trace.Tracer
	PriceIn, PriceOut float64
}

var _ llm.Streamer = (*Streamer)(nil)

// Stream implements llm.Streamer.
func (s *Streamer) Stream(ctx context.Context, req llm.Request, onDelta func(string) error) (llm.Usage, error) {
	ctx, span := s.Tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", req.Model),
			attribute.Int("gen_ai.request.max_tokens", req.MaxTokens)))
	defer span.End()
	u, err := s.Next.Stream(ctx, req, onDelta)
	span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", u.PromptTokens), attribute.Int("gen_ai.usage.output_tokens", u.CompletionTokens),
		attribute.Bool("docmind.usage.estimated", u.Estimated), attribute.Float64("docmind.cost_usd", Cost(u, s.PriceIn, s.PriceOut)))
	if err != nil {
		span.SetStatus(codes.Error, rag.KindOf(err).String())
	}
	return u, err
}

// ToolCaller wraps a tool-calling model client (the agent's) with one client span per call, as Streamer.
type ToolCaller struct {
	Next              llm.ToolCaller
	Tracer            trace.Tracer
	PriceIn, PriceOut float64
}

var _ llm.ToolCaller = (*ToolCaller)(nil)

// CallTools implements llm.ToolCaller.
func (c *ToolCaller) CallTools(ctx context.Context, req llm.Request, tools []llm.Tool) (llm.Reply, error) {
	ctx, span := c.Tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.request.model", req.Model),
			attribute.Int("docmind.tools", len(tools))))
	defer span.End()
	r, err := c.Next.CallTools(ctx, req, tools)
	span.SetAttributes(attribute.Int("gen_ai.usage.input_tokens", r.Usage.PromptTokens), attribute.Int("gen_ai.usage.output_tokens", r.Usage.CompletionTokens),
		attribute.Int("docmind.tool_calls", len(r.ToolCalls)), attribute.Float64("docmind.cost_usd", Cost(r.Usage, c.PriceIn, c.PriceOut)))
	if err != nil {
		span.SetStatus(codes.Error, rag.KindOf(err).String())
	}
	return r, err
}

// Cost is the price of a call's usage at prices per million input and output tokens.
func Cost(u llm.Usage, in, out float64) float64 {
	return (float64(u.PromptTokens)*in + float64(u.CompletionTokens)*out) / 1e6
}
