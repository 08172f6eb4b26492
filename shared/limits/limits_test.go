package limits

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memkv"
)

// t0 starts a 10 s window for every window length used below (1.8e9 s is a multiple of 10 s and 1 s).
var t0 = time.Unix(1_800_000_000, 0).UTC()

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newLimiter(cfg Config) (*Limiter, *clock) {
	clk := &clock{now: t0}
	return New(memkv.New(clk.Now, 0), cfg, clk.Now), clk
}

func TestBurstThenRefused(t *testing.T) {
	ctx := context.Background()
	// 60 a minute with a burst of 10: W = 10 s, one request a second sustained.
	l, clk := newLimiter(Config{PerMinute: 60, Burst: 10})
	for i := range 10 {
		if d := l.Allow(ctx, "acme", "ada"); !d.Allowed || d.Degraded {
			t.Fatalf("request %d of the burst: %+v, want allowed", i+1, d)
		}
	}
	d := l.Allow(ctx, "acme", "ada")
	if d.Allowed || d.Limit != LimitRate {
		t.Fatalf("11th request: %+v, want refused by rate", d)
	}
	if d.RetryAfter != 11*time.Second {
		t.Errorf("RetryAfter = %v, want 11s", d.RetryAfter)
	}
	// Another user and another tenant have their own buckets.
	if d := l.Allow(ctx, "acme", "bob"); !d.Allowed {
		t.Errorf("another user refused: %+v", d)
	}
	if d := l.Allow(ctx, "globex", "ada"); !d.Allowed {
		t.Errorf("same user name in another tenant refused: %+v", d)
	}

	// The true wait is a hair over 10 s (the window must turn and cur's share start to decay), rounded up
	// to 11 s for Retry-After.
	clk.Add(10 * time.Second)
	if d := l.Allow(ctx, "acme", "ada"); d.Allowed {
		t.Errorf("admitted exactly at the window boundary, before any share decayed: %+v", d)
	}
	clk.Add(time.Second)
	if d := l.Allow(ctx, "acme", "ada"); !d.Allowed {
		t.Fatalf("refused at RetryAfter: %+v", d)
	}
	// After a burst the rate is one per emission interval (1 s).
	d = l.Allow(ctx, "acme", "ada")
	if d.Allowed || d.RetryAfter != time.Second {
		t.Errorf("second request right after: %+v, want refused with RetryAfter 1s", d)
	}
	clk.Add(time.Second)
	if d := l.Allow(ctx, "acme", "ada"); !d.Allowed {
		t.Errorf("refused one emission interval later: %+v", d)
	}
}

func TestRefill(t *testing.T) {
	ctx := context.Background()
	l, clk := newLimiter(Config{PerMinute: 6, Burst: 3}) // W = 30 s
	burst := func() int {
		n := 0
		for range 10 {
			if l.Allow(ctx, "acme", "ada").Allowed {
				n++
			}
		}
		return n
	}
	if got := burst(); got != 3 {
		t.Fatalf("first burst admitted %d, want 3", got)
	}
	clk.Add(60 * time.Second) // two windows of quiet: the previous window is empty again
	if got := burst(); got != 3 {
		t.Errorf("burst after a quiet 2W admitted %d, want 3 (full refill)", got)
	}
}

func TestDefaultBurstIsPerMinute(t *testing.T) {
	ctx := context.Background()
	l, _ := newLimiter(Config{PerMinute: 5})
	if got := l.Config().Burst; got != 5 {
		t.Fatalf("Burst = %d, want PerMinute (5)", got)
	}
	n := 0
	for range 20 {
		if l.Allow(ctx, "t", "u").Allowed {
			n++
		}
	}
	if n != 5 {
		t.Errorf("admitted %d of 20 at once, want 5", n)
	}
}

// TestSustainedRate is STR-08's admission half: a client at 10× its rate for 10 minutes gets PerMinute a
// minute through (±10%), and every refusal carries a RetryAfter after which a retry is admitted.
func TestSustainedRate(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []Config{{PerMinute: 60, Burst: 10}, {PerMinute: 30}, {PerMinute: 7, Burst: 2}} {
		t.Run(fmt.Sprintf("%d/min burst %d", cfg.PerMinute, cfg.Burst), func(t *testing.T) {
			l, clk := newLimiter(cfg)
			step := time.Minute / time.Duration(10*cfg.PerMinute)
			admitted := 0
			const minutes = 10
			for clk.Now().Before(t0.Add(minutes * time.Minute)) {
				if l.Allow(ctx, "acme", "ada").Allowed {
					admitted++
				}
				clk.Add(step)
			}
			want := float64(cfg.PerMinute * minutes)
			if float64(admitted) > want*1.1 || float64(admitted) < want*0.9 {
				t.Errorf("admitted %d in %d minutes at 10× the rate, want %.0f ±10%%", admitted, minutes, want)
			}
			t.Logf("admitted %d in %d minutes at 10× (quota %.0f)", admitted, minutes, want)
		})
	}
}

func TestRetryAfterIsEnough(t *testing.T) {
	ctx := context.Background()
	l, clk := newLimiter(Config{PerMinute: 13, Burst: 4}) // W ≈ 18.46 s: windows not aligned with seconds
	clk.Add(3700 * time.Millisecond)
	for i := range 200 {
		d := l.Allow(ctx, "acme", "ada")
		if d.Allowed {
			clk.Add(time.Duration(i%5) * 300 * time.Millisecond)
			continue
		}
		if d.RetryAfter <= 0 || d.RetryAfter%time.Second != 0 {
			t.Fatalf("refusal %d: RetryAfter %v, want whole seconds > 0", i, d.RetryAfter)
		}
		clk.Add(d.RetryAfter)
		if d2 := l.Allow(ctx, "acme", "ada"); !d2.Allowed {
			t.Fatalf("refusal %d: retried after RetryAfter %v and refused again: %+v", i, d.RetryAfter, d2)
		}
	}
}

func TestDailyTokenBudget(t *testing.T) {
	ctx := context.Background()
	l, clk := newLimiter(Config{PerMinute: 1000, DailyTokens: 1000})
	clk.Add(12 * time.Hour) // t0 is 08:00 UTC: now 20:00
	if d := l.Allow(ctx, "acme", "ada"); !d.Allowed {
		t.Fatalf("fresh budget refused: %+v", d)
	}
	l.Spend(ctx, "acme", "ada", 600)
	if d := l.Allow(ctx, "acme", "ada"); !d.Allowed {
		t.Fatalf("600 of 1000 spent, refused: %+v", d)
	}
	l.Spend(ctx, "acme", "ada", 0)
	l.Spend(ctx, "acme", "ada", -50)
	l.Spend(ctx, "acme", "ada", 400) // exactly the budget
	d := l.Allow(ctx, "acme", "ada")
	if d.Allowed || d.Limit != LimitDailyTokens {
		t.Fatalf("budget spent: %+v, want refused by daily_tokens", d)
	}
	if d.RetryAfter != 4*time.Hour {
		t.Errorf("RetryAfter = %v, want 4h (next UTC midnight)", d.RetryAfter)
	}
	if d := l.Allow(ctx, "acme", "bob"); !d.Allowed {
		t.Errorf("another user refused: %+v", d)
	}
	clk.Add(4 * time.Hour)
	if d := l.Allow(ctx, "acme", "ada"); !d.Allowed {
		t.Errorf("next UTC day still refused: %+v", d)
	}
}

// A user out of tokens does not burn rate allowance with the refused requests.
func TestBudgetRefusalSpendsNoRate(t *testing.T) {
	ctx := context.Background()
	kv := memkv.New(func() time.Time { return t0 }, 0)
	l := New(kv, Config{PerMinute: 2, DailyTokens: 10}, func() time.Time { return t0 })
	l.Spend(ctx, "acme", "ada", 10)
	for range 5 {
		if d := l.Allow(ctx, "acme", "ada"); d.Limit != LimitDailyTokens {
			t.Fatalf("%+v, want refused by daily_tokens", d)
		}
	}
	// Raise the budget (a new limiter over the same counters): the rate bucket is untouched.
	l2 := New(kv, Config{PerMinute: 2, DailyTokens: 100}, func() time.Time { return t0 })
	for i := range 2 {
		if d := l2.Allow(ctx, "acme", "ada"); !d.Allowed {
			t.Errorf("request %d after the budget refusals: %+v, want allowed", i+1, d)
		}
	}
}

// failingKV fails every call, or only Get.
type failingKV struct {
	KV
	onlyGet bool
}

var errDown = rag.Errorf("fake.KV", rag.KindUnavailable, "connection refused")

func (f failingKV) IncrBy(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	if f.onlyGet {
		return f.KV.IncrBy(ctx, key, delta, ttl)
	}
	return 0, errDown
}

func (f failingKV) Get(ctx context.Context, key string) ([]byte, error) { return nil, errDown }

func TestFailingKVFailsOpen(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		kv   KV
		cfg  Config
	}{
		{"all calls fail, rate only", failingKV{}, Config{PerMinute: 1}},
		{"all calls fail, budget", failingKV{}, Config{PerMinute: 1, DailyTokens: 5}},
		{"Get fails, rate only", failingKV{KV: memkv.New(nil, 0), onlyGet: true}, Config{PerMinute: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.kv, tt.cfg, func() time.Time { return t0 })
			for i := range 3 {
				if d := l.Allow(ctx, "acme", "ada"); !d.Allowed || !d.Degraded {
					t.Errorf("request %d: %+v, want allowed and degraded", i+1, d)
				}
			}
			l.Spend(ctx, "acme", "ada", 100) // must not panic without a logger
		})
	}
}

// TestConcurrentNeverExceeds: 20 goroutines hammering one user admit exactly Burst, never more.
func TestConcurrentNeverExceeds(t *testing.T) {
	ctx := context.Background()
	for round := range 5 {
		l, _ := newLimiter(Config{PerMinute: 60, Burst: 17})
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				for range 50 {
					if l.Allow(ctx, "acme", "ada").Allowed {
						admitted.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if got := admitted.Load(); got != 17 {
			t.Errorf("round %d: 20×50 concurrent requests admitted %d, want exactly the burst 17", round, got)
		}
	}
}

// recordingKV records the keys used.
type recordingKV struct {
	KV
	mu   sync.Mutex
	keys []string
}

func (r *recordingKV) IncrBy(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	r.mu.Lock()
	r.keys = append(r.keys, key)
	r.mu.Unlock()
	return r.KV.IncrBy(ctx, key, delta, ttl)
}

func (r *recordingKV) Get(ctx context.Context, key string) ([]byte, error) {
	r.mu.Lock()
	r.keys = append(r.keys, key)
	r.mu.Unlock()
	return r.KV.Get(ctx, key)
}

func TestKeysEscaped(t *testing.T) {
	ctx := context.Background()
	kv := &recordingKV{KV: memkv.New(nil, 0)}
	l := New(kv, Config{PerMinute: 1, DailyTokens: 100}, func() time.Time { return t0 })
	if d := l.Allow(ctx, "a:b", "c"); !d.Allowed {
		t.Fatal(d)
	}
	// "a" / "b:c" would share the key "a:b:c" without escaping.
	if d := l.Allow(ctx, "a", "b:c"); !d.Allowed {
		t.Errorf("tenant a user b:c shares a bucket with tenant a:b user c: %+v", d)
	}
	l.Spend(ctx, "a:b", "c", 5)
	idx := t0.UnixNano() / int64(time.Minute)
	want := []string{
		"limits:tokens:a%3Ab:c:20270115",
		fmt.Sprintf("limits:rate:a%%3Ab:c:%d", idx),
		fmt.Sprintf("limits:rate:a%%3Ab:c:%d", idx-1),
		"limits:tokens:a:b%3Ac:20270115",
		fmt.Sprintf("limits:rate:a:b%%3Ac:%d", idx),
	}
	got := strings.Join(kv.keys, "\n")
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("key %q not used; keys:\n%s", w, got)
		}
	}
}

func TestDisabled(t *testing.T) {
	ctx := context.Background()
	kv := &recordingKV{KV: failingKV{}}
	l := New(kv, Config{}, nil)
	for range 100 {
		if d := l.Allow(ctx, "acme", "ada"); !d.Allowed || d.Degraded {
			t.Fatalf("disabled limits: %+v", d)
		}
	}
	l.Spend(ctx, "acme", "ada", 1<<40)
	if len(kv.keys) != 0 {
		t.Errorf("disabled limits touched the KV store: %v", kv.keys)
	}
}

func TestCeilSecond(t *testing.T) {
	for _, tt := range []struct{ in, want time.Duration }{
		{0, time.Second}, {1, time.Second}, {time.Second, time.Second},
		{time.Second + 1, 2 * time.Second}, {90 * time.Minute, 90 * time.Minute},
	} {
		if got := ceilSecond(tt.in); got != tt.want {
			t.Errorf("ceilSecond(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

// TestBoundsUnderRandomArrivals checks the two guarantees the package comment makes, for random arrival
// patterns: no span of length W admits more than 2 × Burst, and no stretch of time T admits more than
// Burst per fixed window it touches, Burst × (T/W + 2).
func TestBoundsUnderRandomArrivals(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, cfg := range []Config{{PerMinute: 60, Burst: 10}, {PerMinute: 7, Burst: 2}, {PerMinute: 100, Burst: 1}, {PerMinute: 20}} {
		t.Run(fmt.Sprintf("%d/min burst %d", cfg.PerMinute, cfg.Burst), func(t *testing.T) {
			l, clk := newLimiter(cfg)
			w := l.window()
			b := l.Config().Burst
			var admitted []time.Time
			for range 5000 {
				// Bursts of back-to-back requests between quiet gaps of up to 2W.
				if rng.IntN(4) == 0 {
					clk.Add(time.Duration(rng.Int64N(int64(2 * w))))
				} else {
					clk.Add(time.Duration(rng.Int64N(int64(w / 20))))
				}
				if l.Allow(ctx, "acme", "ada").Allowed {
					admitted = append(admitted, clk.Now())
				}
			}
			for i := range admitted {
				j := i
				for j < len(admitted) && admitted[j].Sub(admitted[i]) < w {
					j++
				}
				if j-i > 2*b {
					t.Fatalf("%d admitted within W = %v from %v, want at most 2 × Burst = %d", j-i, w, admitted[i], 2*b)
				}
			}
			span := admitted[len(admitted)-1].Sub(admitted[0])
			limit := float64(b) * (float64(span)/float64(w) + 2)
			if float64(len(admitted)) > limit {
				t.Errorf("%d admitted over %v, want at most Burst × (T/W + 2) = %.0f", len(admitted), span, limit)
			}
			t.Logf("%d of 5000 admitted over %v (bound %.0f)", len(admitted), span.Round(time.Second), limit)
		})
	}
}
