package redis

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/storetest"
)

// EnvAddr points the suite at a real Redis server as well (.ci/run sets it).
const EnvAddr = "DOCMIND_TEST_REDIS_ADDR"

func TestConformanceMiniredis(t *testing.T) {
	storetest.TestKV(t, func(t *testing.T) (store.KV, func(time.Duration)) {
		m := miniredis.RunT(t)
		c := New(Options{Addr: m.Addr(), Prefix: "test:"})
		t.Cleanup(func() { c.Close() })
		return c, m.FastForward
	})
}

func TestConformanceRealServer(t *testing.T) {
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		t.Skip("set " + EnvAddr + "=host:port to run the KV suite against a real Redis (.ci/run does)")
	}
	n := 0
	storetest.TestKV(t, func(t *testing.T) (store.KV, func(time.Duration)) {
		n++
		// a fresh prefix per subtest keeps runs independent without FLUSHDB on a shared server
		c := New(Options{Addr: addr, Prefix: "docmind-test:" + rag.NewID("run") + ":"})
		t.Cleanup(func() { c.Close() })
		if err := c.Ping(context.Background()); err != nil {
			t.Fatalf("real Redis at %s: %v", addr, err)
		}
		return c, time.Sleep
	})
}

func TestPrefixIsolation(t *testing.T) {
	m := miniredis.RunT(t)
	a := New(Options{Addr: m.Addr(), Prefix: "tenantA:"})
	b := New(Options{Addr: m.Addr(), Prefix: "tenantB:"})
	ctx := context.Background()
	if err := a.Set(ctx, "k", []byte("secret"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, "k"); rag.KindOf(err) != rag.KindNotFound {
		t.Fatalf("prefix B sees prefix A's key: %v", err)
	}
	if !m.Exists("tenantA:k") {
		t.Fatal("key not stored under its prefix")
	}
}

func TestUnavailable(t *testing.T) {
	m := miniredis.RunT(t)
	for _, mode := range []string{"stopped", "blackholed"} {
		t.Run(mode, func(t *testing.T) {
			proxy := storetest.NewProxy(t, m.Addr())
			c := New(Options{Addr: proxy.Addr()})
			t.Cleanup(func() { c.Close() })
			if err := c.Set(context.Background(), "k", []byte("v"), 0); err != nil {
				t.Fatal(err)
			}
			if mode == "stopped" {
				proxy.Stop()
			} else {
				proxy.Blackhole()
			}
			storetest.TestUnavailable(t, map[string]func(context.Context) error{
				"Get":     func(ctx context.Context) error { _, err := c.Get(ctx, "k"); return err },
				"Set":     func(ctx context.Context) error { return c.Set(ctx, "k", nil, 0) },
				"IncrBy":  func(ctx context.Context) error { _, err := c.IncrBy(ctx, "n", 1, time.Second); return err },
				"HGetAll": func(ctx context.Context) error { _, err := c.HGetAll(ctx, "h"); return err },
				"Ping":    c.Ping,
			})
		})
	}
}
