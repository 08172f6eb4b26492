package limits

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/docmind/docmind/shared/store/redis"
)

// envRedis names a real Redis for TestLimiterRedisConformance (the same variable as the store suite's).
const envRedis = "DOCMIND_TEST_REDIS_ADDR"

// TestLimiterMiniredis runs the shared-store checks hermetically, through the real Redis adapter (its Lua
// IncrBy) against an in-process miniredis.
func TestLimiterMiniredis(t *testing.T) {
	m := miniredis.RunT(t)
	sharedStoreChecks(t, m.Addr())
}

// TestLimiterRedisConformance runs the same checks against a real Redis (DOCMIND_TEST_REDIS_ADDR, set by
// .ci/run); its name matches `make test-integration`'s filter.
func TestLimiterRedisConformance(t *testing.T) {
	addr := os.Getenv(envRedis)
	if addr == "" {
		t.Skipf("set %s to the host:port of a Redis to run the limiter against it", envRedis)
	}
	sharedStoreChecks(t, addr)
}

// sharedStoreChecks: two Limiter instances (two processes, two Lambda instances) over one Redis enforce one
// combined allowance, under concurrency, for the rate and for the token budget.
func sharedStoreChecks(t *testing.T, addr string) {
	ctx := context.Background()
	prefix := fmt.Sprintf("docmind-limits-test-%d:", time.Now().UnixNano())
	open := func() *redis.Cache {
		c := redis.New(redis.Options{Addr: addr, Prefix: prefix})
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Ping(ctx); err != nil {
			t.Fatalf("redis at %s: %v", addr, err)
		}
		return c
	}
	// The clock is fixed so the test cannot straddle a window; the keys' TTLs are real and long enough.
	now := func() time.Time { return t0 }

	t.Run("combined rate allowance", func(t *testing.T) {
		cfg := Config{PerMinute: 60, Burst: 25}
		a, b := New(open(), cfg, now), New(open(), cfg, now)
		var admitted, degraded atomic.Int64
		var wg sync.WaitGroup
		for i := range 16 {
			l := a
			if i%2 == 1 {
				l = b
			}
			wg.Go(func() {
				for range 10 {
					d := l.Allow(ctx, "acme", "ada")
					if d.Allowed {
						admitted.Add(1)
					}
					if d.Degraded {
						degraded.Add(1)
					}
				}
			})
		}
		wg.Wait()
		if degraded.Load() != 0 {
			t.Fatalf("%d decisions degraded: the Redis calls failed", degraded.Load())
		}
		if got := admitted.Load(); got != 25 {
			t.Errorf("two limiters, 160 concurrent requests: admitted %d, want exactly the burst 25", got)
		}
		if d := b.Allow(ctx, "acme", "bob"); !d.Allowed {
			t.Errorf("another user refused: %+v", d)
		}
	})

	t.Run("combined token budget", func(t *testing.T) {
		cfg := Config{DailyTokens: 1000}
		a, b := New(open(), cfg, now), New(open(), cfg, now)
		a.Spend(ctx, "acme", "ada", 600)
		if d := b.Allow(ctx, "acme", "ada"); !d.Allowed || d.Degraded {
			t.Fatalf("600 of 1000 spent: %+v, want allowed", d)
		}
		b.Spend(ctx, "acme", "ada", 450)
		for _, l := range []*Limiter{a, b} {
			if d := l.Allow(ctx, "acme", "ada"); d.Allowed || d.Limit != LimitDailyTokens {
				t.Errorf("1050 of 1000 spent across two limiters: %+v, want refused by daily_tokens", d)
			}
		}
	})
}
