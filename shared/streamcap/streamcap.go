// Package streamcap holds the server-side caps of a streamed answer that a Lambda needs because it is
// not cancelled when the client leaves (SR-16, STR-03/05): an idle-gap cap on the model stream, and a
// reserve before the invocation's deadline so that every stream ends with its own terminal event
// (done or error) instead of "Task timed out" and a truncated frame. The other caps (max tokens, stream
// wall time) are the pipeline's MaxTokens and the handler's ChatTimeout.
package streamcap

import (
	"context"
	"net/http"
	"time"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
)

// IdleGap ends a model stream that sends nothing for Gap: before its first token and between tokens.
// The error is Unavailable, so the pipeline degrades or reports it like any failed model call.
type IdleGap struct {
	Next llm.Streamer
	Gap  time.Duration
}

var _ llm.Streamer = (*IdleGap)(nil)

// Stream implements llm.Streamer.
func (g *IdleGap) Stream(ctx context.Context, req llm.Request, onDelta func(string) error) (llm.Usage, error) {
	if g.Gap <= 0 {
		return g.Next.Stream(ctx, req, onDelta)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := rag.Errorf("streamcap", rag.KindUnavailable, "the model sent nothing for %s", g.Gap)
	timer := time.AfterFunc(g.Gap, func() { cancel(idle) })
	defer timer.Stop()
	u, err := g.Next.Stream(ctx, req, func(s string) error {
		timer.Reset(g.Gap)
		return onDelta(s)
	})
	if err != nil && context.Cause(ctx) == idle {
		return u, idle
	}
	return u, err
}

// Reserve ends each request's context Reserve before the invocation's deadline (the Lambda context's,
// which lambdaurl passes on as the request's), so the handler, seeing its context end, still has
// Reserve to write and store its terminal event. Requests without a deadline pass unchanged.
func Reserve(reserve time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if dl, ok := r.Context().Deadline(); ok && reserve > 0 {
			ctx, cancel := context.WithDeadline(r.Context(), dl.Add(-reserve))
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}
