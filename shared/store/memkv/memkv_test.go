package memkv

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/storetest"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestConformance(t *testing.T) {
	storetest.TestKV(t, func(t *testing.T) (store.KV, func(time.Duration)) {
		c := &clock{t: time.Unix(1_700_000_000, 0)}
		return New(c.now, 0), c.add
	})
}

func TestEvictionBound(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	kv := New(c.now, 100)
	ctx := context.Background()
	for i := range 1000 {
		ttl := time.Duration(i+1) * time.Minute
		if i%2 == 0 {
			ttl = 0
		}
		kv.Set(ctx, fmt.Sprintf("k%d", i), []byte("v"), ttl)
	}
	if kv.Len() > 100 {
		t.Fatalf("cache holds %d keys, bound is 100", kv.Len())
	}
	// the newest write always survives
	if _, err := kv.Get(ctx, "k999"); err != nil {
		t.Fatalf("newest key evicted: %v", err)
	}
}
