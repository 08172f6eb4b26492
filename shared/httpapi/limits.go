package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/limits"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
)

// Limiter is the per-user rate limit and daily token budget (limits.Limiter).
type Limiter interface {
	Allow(ctx context.Context, tenant, user string) limits.Decision
	Spend(ctx context.Context, tenant, user string, tokens int64)
}

// admit checks the caller's limits before any model or embedding call: a refusal is 429 with Retry-After
// and a JSON error naming the limit. It reports whether the request may go on and whether the limit store
// failed (the request goes on: limits fail open, logged and reported as degraded "limits").
func (h *handler) admit(w http.ResponseWriter, r *http.Request, p rag.Principal) (ok, degraded bool) {
	degraded, err := h.allow(r.Context(), p)
	var refused *LimitError
	if !errors.As(err, &refused) {
		return true, degraded
	}
	w.Header().Set("Retry-After", strconv.Itoa(refused.RetryAfterSeconds))
	WriteJSON(w, http.StatusTooManyRequests, map[string]map[string]string{"error": {"code": "RateLimited", "limit": refused.Limit, "message": refused.Message}})
	return false, false
}

// LimitError is a refusal by the per-user limits: the HTTP API answers it with 429, Retry-After and the
// code RateLimited; other edges (MCP) report the same code and message.
type LimitError struct {
	Limit             string // limits.LimitRate or limits.LimitDailyTokens
	Message           string
	RetryAfterSeconds int
}

func (e *LimitError) Error() string { return e.Message }

// allow checks the caller's limits: a *LimitError when refused; degraded when the limit store failed (the
// call goes on: limits fail open, logged).
func (h *handler) allow(ctx context.Context, p rag.Principal) (degraded bool, err error) {
	if h.d.Limits == nil {
		return false, nil
	}
	d := h.d.Limits.Allow(ctx, p.Tenant, p.UserID)
	if d.Degraded {
		h.d.Logger.Warn("limits store failed; request allowed", "tenant", p.Tenant, "user", p.UserID)
	}
	if d.Allowed {
		return d.Degraded, nil
	}
	secs := int(d.RetryAfter.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	msg := "too many requests: the per-user rate limit is reached; retry after " + strconv.Itoa(secs) + " s"
	if d.Limit == limits.LimitDailyTokens {
		msg = "the daily token budget of this user is spent; it resets at 00:00 UTC"
	}
	return false, &LimitError{Limit: d.Limit, Message: msg, RetryAfterSeconds: secs}
}

// metered returns r with a context that counts the tokens of every model call made with it (the small
// model's and the main model's, streamed or not, finished or cut), and the meter counting them. Callers
// defer charge right after, so that every exit path pays: a stopped answer, an error, a timeout.
func metered(r *http.Request) (*http.Request, *llm.Meter) {
	m := &llm.Meter{}
	return r.WithContext(llm.WithMeter(r.Context(), m)), m
}

// charge spends on the caller's daily budget what the request's model calls counted, or the answer's own
// usage when that is more: an Asker runs the model in another process (the answer state machine), where
// this request's meter cannot see it. A cached answer's usage is the original's, not this request's: a
// cache hit is charged only the calls it made (the understanding step, if it ran).
func (h *handler) charge(ctx context.Context, p rag.Principal, m *llm.Meter, done *answer.Done) {
	tokens := m.Tokens()
	if done != nil && !done.FromCache {
		tokens = max(tokens, int64(done.Usage.PromptTokens+done.Usage.CompletionTokens))
	}
	if h.d.Limits != nil && tokens > 0 {
		h.d.Limits.Spend(context.WithoutCancel(ctx), p.Tenant, p.UserID, tokens)
	}
}
