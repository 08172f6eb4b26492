package llm

import (
	"context"
	"sync/atomic"

	"github.com/docmind/docmind/shared/text"
)

// Meter adds up the model tokens one request spends, across every call made with its context: the small
// model's (understanding, HyDE, summaries), the main model's and the agent's rounds, finished or cut. The
// daily token budget is charged from it, so that a stopped answer costs what it streamed (STR-08: a
// budget charged only from a finished answer's usage let a user who always pressed stop ask for free).
// It is safe for concurrent use: a request's calls may run in parallel.
type Meter struct {
	prompt, completion atomic.Int64
}

type meterKey struct{}

// WithMeter returns a context whose model calls add their usage to m.
func WithMeter(ctx context.Context, m *Meter) context.Context {
	return context.WithValue(ctx, meterKey{}, m)
}

// Tokens is the prompt and completion tokens counted so far.
func (m *Meter) Tokens() int64 {
	if m == nil {
		return 0
	}
	return m.prompt.Load() + m.completion.Load()
}

// add counts one call's usage.
func (m *Meter) add(u Usage) {
	m.prompt.Add(int64(u.PromptTokens))
	m.completion.Add(int64(u.CompletionTokens))
}

// meterOf is ctx's meter, nil when the caller counts nothing.
func meterOf(ctx context.Context) *Meter {
	m, _ := ctx.Value(meterKey{}).(*Meter)
	return m
}

// record counts a call's usage on ctx's meter: the provider's figures when it reported them, else
// docmind's estimate from the prompt and the text received (a stream cut by the client or an error never
// reaches the provider's final usage chunk, yet the provider bills what it generated).
func record(ctx context.Context, req Request, reported Usage, received string) {
	m := meterOf(ctx)
	if m == nil {
		return
	}
	if reported.PromptTokens+reported.CompletionTokens > 0 {
		m.add(reported)
		return
	}
	m.add(estimate(req, received))
}

// estimate is the usage of a call the provider did not report, from the text both ways.
func estimate(req Request, received string) Usage {
	u := Usage{CompletionTokens: text.EstimateTokens(received), Estimated: true}
	for _, msg := range req.Messages {
		u.PromptTokens += text.EstimateTokens(msg.Content)
		for _, c := range msg.ToolCalls {
			u.PromptTokens += text.EstimateTokens(c.Arguments)
		}
		u.PromptTokens += len(msg.Images) * ImageTokens
	}
	return u
}

// ImageTokens is what one image counts for in an estimate: OpenAI bills a high-detail image as 85
// tokens plus 170 per 512-pixel tile after scaling to fit 2048x2048 and then 768 px on the short side,
// which for a portrait page is 6 tiles (1,105 tokens).
const ImageTokens = 85 + 6*170
