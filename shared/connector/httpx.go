package connector

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// HTTP sends a connector's requests through one client (the hardened netx client) and waits out rate
// limiting: a 429, or a 503 with Retry-After, is retried after the delay the source asks for (seconds
// or an HTTP date; 1 s, 2 s, 4 s ... when it names none), within MaxRetries and MaxWait. It counts the
// requests it sends. One HTTP serves one sync at a time.
type HTTP struct {
	Client     *http.Client
	MaxRetries int           // default 4
	MaxWait    time.Duration // one wait longer than this is not waited: Unavailable (default 2 min)
	// Sleep waits d or until ctx ends (nil: a timer); tests record the waits instead.
	Sleep func(ctx context.Context, d time.Duration) error
	Now   func() time.Time // nil: time.Now (parses Retry-After dates)
	Calls int              // requests sent, retries included
	Waits []time.Duration
}

// Do sends req (whose body, if any, must be rewindable through GetBody) and returns the first
// response that is not a rate-limit answer. Unavailable when the source keeps limiting past
// MaxRetries or asks for a wait longer than MaxWait; the transport's error otherwise.
func (h *HTTP) Do(req *http.Request) (*http.Response, error) {
	retries := h.MaxRetries
	if retries <= 0 {
		retries = 4
	}
	maxWait := h.MaxWait
	if maxWait <= 0 {
		maxWait = 2 * time.Minute
	}
	for attempt := 0; ; attempt++ {
		r := req.Clone(req.Context())
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			r.Body = body
		}
		h.Calls++
		resp, err := h.Client.Do(r)
		if err != nil {
			return nil, err
		}
		limited := resp.StatusCode == http.StatusTooManyRequests ||
			(resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "")
		if !limited {
			return resp, nil
		}
		wait := h.retryAfter(resp.Header.Get("Retry-After"), attempt)
		resp.Body.Close()
		if attempt >= retries {
			return nil, rag.Errorf("connector.HTTP", rag.KindUnavailable, "%s %s: still rate limited after %d retries", req.Method, req.URL.Redacted(), retries)
		}
		if wait > maxWait {
			return nil, rag.Errorf("connector.HTTP", rag.KindUnavailable, "%s %s: the source asks to wait %s (more than %s)", req.Method, req.URL.Redacted(), wait, maxWait)
		}
		h.Waits = append(h.Waits, wait)
		if err := h.sleep(req.Context(), wait); err != nil {
			return nil, err
		}
	}
}

func (h *HTTP) retryAfter(v string, attempt int) time.Duration {
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		now := time.Now
		if h.Now != nil {
			now = h.Now
		}
		return max(t.Sub(now()), 0)
	}
	return time.Second << min(attempt, 6)
}

func (h *HTTP) sleep(ctx context.Context, d time.Duration) error {
	if h.Sleep != nil {
		return h.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// StatusError classifies a source's unexpected HTTP status: 401/403 Permission (bad or insufficient
// credentials), 404/410 NotFound, other 4xx Invalid, 5xx Unavailable.
func StatusError(op string, resp *http.Response) error {
	kind := rag.KindUnavailable
	switch c := resp.StatusCode; {
	case c == 401 || c == 403:
		kind = rag.KindPermission
	case c == 404 || c == 410:
		kind = rag.KindNotFound
	case c >= 400 && c < 500:
		kind = rag.KindInvalid
	}
	return rag.E(op, kind, fmt.Errorf("%s %s: HTTP %d", resp.Request.Method, resp.Request.URL.Redacted(), resp.StatusCode))
}

// Transport is h as an http.RoundTripper, for official clients that take an *http.Client (the Google
// Drive client, the oauth2 token sources): their requests go through the same hardened client, are
// counted and wait out 429 Retry-After like the connector's own.
func (h *HTTP) Transport() http.RoundTripper { return roundTripper{h} }

type roundTripper struct{ h *HTTP }

func (t roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return t.h.Do(r) }

// Backoff waits d (recorded in Waits) for a source that signals a rate limit its own way (Drive's 403
// userRateLimitExceeded), through the same Sleep as Do's waits.
func (h *HTTP) Backoff(ctx context.Context, d time.Duration) error {
	h.Waits = append(h.Waits, d)
	return h.sleep(ctx, d)
}
