package httpapi

import (
	"context"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/limits"
)

// fakeLimiter answers every Allow with one decision and records what was spent.
type fakeLimiter struct {
	d     limits.Decision
	spent atomic.Int64
	asked atomic.Int32
}

func (f *fakeLimiter) Allow(context.Context, string, string) limits.Decision {
	f.asked.Add(1)
	return f.d
}

func (f *fakeLimiter) Spend(_ context.Context, _, _ string, tokens int64) { f.spent.Add(tokens) }

func TestLimitsRefuseBeforeThePipeline(t *testing.T) {
	for _, c := range []struct {
		d         limits.Decision
		wantLimit string
	}{
		{limits.Decision{Limit: limits.LimitRate, RetryAfter: 1500 * time.Millisecond}, `"limit":"rate"`},
		{limits.Decision{Limit: limits.LimitDailyTokens, RetryAfter: 3 * time.Hour}, `"limit":"daily_tokens"`},
	} {
		lim := &fakeLimiter{d: c.d}
		f := newChatFixtureWith(t, false, func(d *Deps) { d.Limits = lim })
		resp := f.post(t, `{"question":"How many days of leave?"}`)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 429 || !strings.Contains(string(body), c.wantLimit) || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: %d %s Retry-After=%q", c.d.Limit, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
		if n := len(f.rec.got); n != 0 {
			t.Fatalf("%s: the pipeline retrieved %d times after a refusal", c.d.Limit, n)
		}
	}
}

func TestLimitsStoreDownFailsOpenAndSaysSo(t *testing.T) {
	lim := &fakeLimiter{d: limits.Decision{Allowed: true, Degraded: true}}
	f := newChatFixtureWith(t, false, func(d *Deps) { d.Limits = lim })
	resp := f.post(t, `{"question":"How many days of leave?"}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"limits"`) {
		t.Fatalf("a failing limits store: %d; the done event must name limits in degraded: %s", resp.StatusCode, body)
	}
	if !strings.Contains(f.logs.String(), "limits store failed") {
		t.Fatalf("no log line for the failing limits store: %s", f.logs.String())
	}
}
