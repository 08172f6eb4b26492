// Package limits enforces per-user request rates and daily model-token budgets with counters kept in the
// key-value cache port, so that every process sharing one Redis (Lambda instances, several local servers)
// enforces one combined allowance, and a single local process needs nothing but the in-memory cache.
//
// The rate limit uses only atomic IncrBy with a TTL, the one primitive both store.KV adapters make atomic:
//
//   - PerMinute is the sustained rate. Burst is how many requests may arrive back to back after a quiet
//     period (0 means Burst = PerMinute).
//   - Time is cut into fixed windows of length W = Burst × 60s / PerMinute, the time a full burst takes to
//     refill. A request is admitted when the estimated count over the W ending now, including itself,
//     ⌊prev × (1 − elapsed/W)⌋ + current + 1, is at most Burst, where prev and current are the admitted
//     counts of the previous and current fixed window and elapsed is the time since the current one began.
//     This is the "sliding window of two fixed windows" (Cloudflare's rate limiter). So: after a quiet
//     period Burst requests pass at once; a client sending faster than PerMinute is held to PerMinute a
//     minute over any stretch of time (10 minutes at 10× the rate admit PerMinute × 10 ± Burst); after a
//     burst, one request passes per emission interval (60s / PerMinute). The estimate assumes the previous
//     window's requests were spread evenly, so a burst at the very end of one window followed by one at the
//     start of the next can admit up to about 2 × Burst within a short span, never more.
//   - Concurrent callers never admit more than the allowance: each increments first and reads its own
//     count; a refused request takes its increment back, so the counters hold admitted requests only and a
//     client hammering at 10× its rate still gets its PerMinute through.
//
// The daily token budget is a counter per user and UTC day that Spend adds to when a request ends, with
// every model call the request made (the HTTP edge counts them with an llm.Meter: small and main model,
// finished or stopped by the client); Allow refuses once it has reached DailyTokens. It is a soft cap:
// requests admitted before the counter crossed the budget may finish and overshoot by their own tokens.
//
// A failing KV store fails open: Allow admits and marks the Decision Degraded, so the caller can log and
// report degraded "limits" instead of refusing every request because a cache is down.
package limits

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// KV is the part of the key-value cache port the limiter uses (store.KV has these methods).
type KV interface {
	IncrBy(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error)
	Get(ctx context.Context, key string) ([]byte, error)
}

// Config sets the limits per user. A zero PerMinute disables the rate limit; a zero DailyTokens disables the
// budget; Burst ≤ 0 means Burst = PerMinute (PerMinute requests in any sliding minute).
type Config struct {
	PerMinute   int
	Burst       int
	DailyTokens int64
}

// Limit names reported in Decision.Limit.
const (
	LimitRate        = "rate"
	LimitDailyTokens = "daily_tokens"
)

// Decision is the outcome of Allow.
type Decision struct {
	Allowed    bool
	Limit      string        // "rate" or "daily_tokens" when refused
	RetryAfter time.Duration // > 0 when refused; whole seconds, for a Retry-After header
	Degraded   bool          // the KV store failed: allowed (fail open), caller logs and reports degraded "limits"
}

// Limiter checks one user's requests against Config. It is safe for concurrent use; all its state is in the
// KV store.
type Limiter struct {
	kv  KV
	cfg Config
	now func() time.Time
	log *slog.Logger
}

// New returns a limiter over kv. now is the clock (time.Now when nil).
func New(kv KV, cfg Config, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	if cfg.Burst <= 0 {
		cfg.Burst = cfg.PerMinute
	}
	return &Limiter{kv: kv, cfg: cfg, now: now}
}

// WithLogger sets where Spend reports a KV failure (Spend has no error to return: the model call it
// accounts for has already happened). Without one, failures are dropped.
func (l *Limiter) WithLogger(lg *slog.Logger) *Limiter {
	l.log = lg
	return l
}

// Config returns the effective configuration (Burst defaulted).
func (l *Limiter) Config() Config { return l.cfg }

// Allow spends one request from the user's rate bucket and checks the daily token budget (read only).
// The budget is checked first so that a user out of tokens does not also burn rate allowance.
func (l *Limiter) Allow(ctx context.Context, tenant, user string) Decision {
	now := l.now().UTC()
	if d, done := l.checkBudget(ctx, tenant, user, now); done {
		return d
	}
	return l.spendRate(ctx, tenant, user, now)
}

// Spend adds tokens actually used to today's (UTC) counter. Non-positive tokens and a disabled budget are
// ignored.
func (l *Limiter) Spend(ctx context.Context, tenant, user string, tokens int64) {
	if l.cfg.DailyTokens <= 0 || tokens <= 0 {
		return
	}
	now := l.now().UTC()
	// Two days of TTL: the key must outlive its own UTC day wherever in that day it was created.
	if _, err := l.kv.IncrBy(ctx, tokensKey(tenant, user, now), tokens, 48*time.Hour); err != nil && l.log != nil {
		l.log.Warn("limits: token spend not recorded", "err", err, "tokens", tokens)
	}
}

// checkBudget refuses when today's tokens have reached the budget. done reports that d is final: refused, or
// degraded because the counter could not be read (the rate check would meet the same failing store).
func (l *Limiter) checkBudget(ctx context.Context, tenant, user string, now time.Time) (d Decision, done bool) {
	if l.cfg.DailyTokens <= 0 {
		return Decision{}, false
	}
	used, err := l.get(ctx, tokensKey(tenant, user, now))
	if err != nil {
		return Decision{Allowed: true, Degraded: true}, true
	}
	if used < l.cfg.DailyTokens {
		return Decision{}, false
	}
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	return Decision{Limit: LimitDailyTokens, RetryAfter: ceilSecond(midnight.Sub(now))}, true
}

// spendRate takes one request from the sliding two-window estimate (see the package comment).
func (l *Limiter) spendRate(ctx context.Context, tenant, user string, now time.Time) Decision {
	if l.cfg.PerMinute <= 0 {
		return Decision{Allowed: true}
	}
	w := l.window()
	idx := now.UnixNano() / int64(w)
	elapsed := time.Duration(now.UnixNano() - idx*int64(w))
	// Two windows of TTL: the current window is read as "previous" during the next one.
	ttl := 2*w + time.Second
	cur := rateKey(tenant, user, idx)
	n, err := l.kv.IncrBy(ctx, cur, 1, ttl)
	if err != nil {
		return Decision{Allowed: true, Degraded: true}
	}
	prev, err := l.get(ctx, rateKey(tenant, user, idx-1))
	if err != nil {
		l.undo(ctx, cur, ttl)
		return Decision{Allowed: true, Degraded: true}
	}
	if weighted(prev, elapsed, w)+n <= int64(l.cfg.Burst) {
		return Decision{Allowed: true}
	}
	l.undo(ctx, cur, ttl)
	return Decision{Limit: LimitRate, RetryAfter: ceilSecond(retryAfter(prev, n-1, l.cfg.Burst, w, elapsed))}
}

// undo takes back a refused request's increment so that the counters hold admitted requests only. If it
// fails the window merely counts one request too many, which errs on the side of refusing.
func (l *Limiter) undo(ctx context.Context, key string, ttl time.Duration) {
	_, _ = l.kv.IncrBy(ctx, key, -1, ttl)
}

// window is W = Burst × 60s / PerMinute.
func (l *Limiter) window() time.Duration {
	return time.Duration(int64(l.cfg.Burst) * int64(time.Minute) / int64(l.cfg.PerMinute))
}

// weighted is the previous window's count scaled by the part of it still inside the trailing W, rounded
// down: ⌊prev × (1 − elapsed/W)⌋. Rounding down lets a request of the previous window leave as soon as its
// share starts to, which is what makes the sustained rate Burst per W (PerMinute a minute) rather than
// (Burst−1) per W; rounding up or not at all halves the rate at Burst 2.
func weighted(prev int64, elapsed, w time.Duration) int64 {
	if prev <= 0 {
		return 0
	}
	return int64(math.Floor(float64(prev) * (1 - float64(elapsed)/float64(w))))
}

// retryAfter is the least wait after which ⌊prev×(1−frac)⌋+cur+1 ≤ burst holds, cur being the admitted
// count of the current window: later in this window when the previous window's share alone is in the way
// (prev×(1−(elapsed+t)/W) < burst−cur), otherwise in the next window, once cur's share has decayed
// (cur×(1−s/W) < burst). The inequalities are strict, hence the extra nanosecond.
func retryAfter(prev, cur int64, burst int, w, elapsed time.Duration) time.Duration {
	b := float64(burst)
	if cur+1 <= int64(burst) && prev > 0 {
		t := float64(w)*(1-(b-float64(cur))/float64(prev)) - float64(elapsed)
		return time.Duration(math.Max(t, 0)) + 1
	}
	s := 0.0
	if cur > 0 {
		s = float64(w) * (1 - b/float64(cur))
	}
	return w - elapsed + time.Duration(math.Max(s, 0)) + 1
}

// get reads an integer counter; a missing key is 0.
func (l *Limiter) get(ctx context.Context, key string) (int64, error) {
	b, err := l.kv.Get(ctx, key)
	if rag.KindOf(err) == rag.KindNotFound {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, errors.New("limits: counter is not an integer")
	}
	return n, nil
}

// rateKey is "limits:rate:<tenant>:<user>:<window>". QueryEscape turns ":" into "%3A" (and "%" into "%25"),
// so no tenant or user can forge another's key.
func rateKey(tenant, user string, idx int64) string {
	return "limits:rate:" + url.QueryEscape(tenant) + ":" + url.QueryEscape(user) + ":" + strconv.FormatInt(idx, 10)
}

// tokensKey is "limits:tokens:<tenant>:<user>:<yyyymmdd>" for now's UTC day.
func tokensKey(tenant, user string, now time.Time) string {
	return "limits:tokens:" + url.QueryEscape(tenant) + ":" + url.QueryEscape(user) + ":" + now.UTC().Format("20060102")
}

// ceilSecond rounds d up to whole seconds, at least one: Retry-After is in seconds, and a client that waits
// exactly that long must be admitted.
func ceilSecond(d time.Duration) time.Duration {
	s := (d + time.Second - 1) / time.Second
	if s < 1 {
		s = 1
	}
	return s * time.Second
}
