package storetest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// TestKV runs the KV contract. open returns an empty cache and advance, which moves the cache's clock
// forward by d (or sleeps d for a real server): TTL checks use it instead of wall-clock assumptions.
func TestKV(t *testing.T, open func(t *testing.T) (kv store.KV, advance func(d time.Duration))) {
	t.Run("GetSetDelete", func(t *testing.T) {
		kv, _ := open(t)
		ctx := ctxT(t)
		checkKind(t, "get missing", rag.KindNotFound, second(kv.Get(ctx, "nope")))
		must(t, kv.Set(ctx, "a", []byte("1"), 0))
		must(t, kv.Set(ctx, "键", []byte{0, 1, 255}, 0))
		if v, err := kv.Get(ctx, "a"); err != nil || string(v) != "1" {
			t.Fatalf("Get(a) = %q, %v", v, err)
		}
		if v, err := kv.Get(ctx, "键"); err != nil || !slices.Equal(v, []byte{0, 1, 255}) {
			t.Fatalf("binary value round trip = %v, %v", v, err)
		}
		must(t, kv.Set(ctx, "a", []byte("2"), 0))
		if v, _ := kv.Get(ctx, "a"); string(v) != "2" {
			t.Fatalf("overwrite: %q", v)
		}
		must(t, kv.Set(ctx, "empty", nil, 0))
		if v, err := kv.Get(ctx, "empty"); err != nil || len(v) != 0 {
			t.Fatalf("empty value = %q, %v", v, err)
		}
		must(t, kv.Delete(ctx, "a", "missing", "键"))
		checkKind(t, "get deleted", rag.KindNotFound, second(kv.Get(ctx, "a")))
		checkKind(t, "get deleted 2", rag.KindNotFound, second(kv.Get(ctx, "键")))
		must(t, kv.Delete(ctx))
		must(t, kv.Ping(ctx))
	})

	t.Run("TTL", func(t *testing.T) {
		kv, advance := open(t)
		ctx := ctxT(t)
		must(t, kv.Set(ctx, "short", []byte("x"), 1500*time.Millisecond))
		must(t, kv.Set(ctx, "forever", []byte("y"), 0))
		if d, err := kv.TTL(ctx, "short"); err != nil || d <= 0 || d > 1500*time.Millisecond {
			t.Fatalf("TTL(short) = %v, %v", d, err)
		}
		if d, err := kv.TTL(ctx, "forever"); err != nil || d != 0 {
			t.Fatalf("TTL(forever) = %v, %v; want 0", d, err)
		}
		checkKind(t, "ttl missing", rag.KindNotFound, second(kv.TTL(ctx, "missing")))
		advance(2 * time.Second)
		checkKind(t, "expired", rag.KindNotFound, second(kv.Get(ctx, "short")))
		if _, err := kv.Get(ctx, "forever"); err != nil {
			t.Fatalf("no-ttl key lost: %v", err)
		}
		must(t, kv.Expire(ctx, "forever", 1500*time.Millisecond))
		if d, _ := kv.TTL(ctx, "forever"); d <= 0 {
			t.Fatalf("Expire did not set a ttl: %v", d)
		}
		checkKind(t, "expire missing", rag.KindNotFound, kv.Expire(ctx, "missing", time.Second))
		advance(2 * time.Second)
		checkKind(t, "expired after Expire", rag.KindNotFound, second(kv.Get(ctx, "forever")))
	})

	t.Run("SetNX", func(t *testing.T) {
		kv, advance := open(t)
		ctx := ctxT(t)
		ok, err := kv.SetNX(ctx, "lock", []byte("a"), 1500*time.Millisecond)
		if err != nil || !ok {
			t.Fatalf("first SetNX = %v, %v", ok, err)
		}
		ok, err = kv.SetNX(ctx, "lock", []byte("b"), time.Second)
		if err != nil || ok {
			t.Fatalf("second SetNX = %v, %v; want false", ok, err)
		}
		if v, _ := kv.Get(ctx, "lock"); string(v) != "a" {
			t.Fatalf("SetNX overwrote: %q", v)
		}
		advance(2 * time.Second)
		if ok, _ := kv.SetNX(ctx, "lock", []byte("c"), 0); !ok {
			t.Fatal("SetNX after expiry refused")
		}
		// 20 racers: exactly one wins
		var wg sync.WaitGroup
		var mu sync.Mutex
		wins := 0
		for i := range 20 {
			wg.Go(func() {
				ok, err := kv.SetNX(ctx, "race", []byte(strconv.Itoa(i)), time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("%d SetNX winners, want 1", wins)
		}
	})

	t.Run("Counters", func(t *testing.T) {
		kv, advance := open(t)
		ctx := ctxT(t)
		if n, err := kv.IncrBy(ctx, "n", 5, 1500*time.Millisecond); err != nil || n != 5 {
			t.Fatalf("IncrBy new = %d, %v", n, err)
		}
		if n, err := kv.IncrBy(ctx, "n", -2, time.Hour); err != nil || n != 3 {
			t.Fatalf("IncrBy = %d, %v", n, err)
		}
		// the ttl is the one set at creation: a fixed window, not extended by later increments
		if d, _ := kv.TTL(ctx, "n"); d <= 0 || d > 1500*time.Millisecond {
			t.Fatalf("window ttl = %v, want <= 1.5s", d)
		}
		advance(2 * time.Second)
		if n, err := kv.IncrBy(ctx, "n", 1, 0); err != nil || n != 1 {
			t.Fatalf("IncrBy after window = %d, %v; want 1", n, err)
		}
		if d, _ := kv.TTL(ctx, "n"); d != 0 {
			t.Fatalf("ttl 0 set an expiry: %v", d)
		}
		must(t, kv.Set(ctx, "s", []byte("abc"), 0))
		checkKind(t, "incr a string", rag.KindInvalid, second(kv.IncrBy(ctx, "s", 1, 0)))
		var wg sync.WaitGroup
		for range 50 {
			wg.Go(func() {
				if _, err := kv.IncrBy(ctx, "par", 2, 0); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if v, _ := kv.Get(ctx, "par"); string(v) != "100" {
			t.Fatalf("50 parallel IncrBy(2) = %s, want 100", v)
		}
	})

	t.Run("Hashes", func(t *testing.T) {
		kv, advance := open(t)
		ctx := ctxT(t)
		if m, err := kv.HGetAll(ctx, "h"); err != nil || m == nil || len(m) != 0 {
			t.Fatalf("HGetAll missing = %v, %v; want empty map", m, err)
		}
		must(t, kv.HSet(ctx, "h", map[string][]byte{"kb1": []byte("3"), "kb2": []byte("7")}))
		must(t, kv.HSet(ctx, "h", map[string][]byte{"kb2": []byte("8"), "知识库": []byte("1")}))
		m, err := kv.HGetAll(ctx, "h")
		must(t, err)
		if len(m) != 3 || string(m["kb1"]) != "3" || string(m["kb2"]) != "8" || string(m["知识库"]) != "1" {
			t.Fatalf("HGetAll = %v", m)
		}
		must(t, kv.HDel(ctx, "h", "kb1", "missing"))
		if m, _ := kv.HGetAll(ctx, "h"); len(m) != 2 {
			t.Fatalf("after HDel: %v", m)
		}
		must(t, kv.HDel(ctx, "nohash", "x"))
		checkKind(t, "HSet with no fields", rag.KindInvalid, kv.HSet(ctx, "h", nil))
		must(t, kv.Set(ctx, "str", []byte("x"), 0))
		checkKind(t, "HSet on a string", rag.KindInvalid, kv.HSet(ctx, "str", map[string][]byte{"a": nil}))
		checkKind(t, "Get on a hash", rag.KindInvalid, second(kv.Get(ctx, "h")))
		must(t, kv.Expire(ctx, "h", 1500*time.Millisecond))
		advance(2 * time.Second)
		if m, _ := kv.HGetAll(ctx, "h"); len(m) != 0 {
			t.Fatalf("expired hash still has %v", m)
		}
		must(t, kv.HSet(ctx, "h2", map[string][]byte{"only": []byte("1")}))
		must(t, kv.HDel(ctx, "h2", "only"))
		checkKind(t, "hash emptied by HDel is gone", rag.KindNotFound, second(kv.TTL(ctx, "h2")))
	})

	t.Run("CanceledContext", func(t *testing.T) {
		kv, _ := open(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		checkKind(t, "get", rag.KindUnavailable, second(kv.Get(ctx, "a")))
		checkKind(t, "set", rag.KindUnavailable, kv.Set(ctx, "a", nil, 0))
	})

	t.Run("ManyKeys", func(t *testing.T) {
		kv, _ := open(t)
		ctx := ctxT(t)
		for i := range 500 {
			must(t, kv.Set(ctx, fmt.Sprintf("k%d", i), []byte(strconv.Itoa(i)), time.Hour))
		}
		for i := range 500 {
			if v, err := kv.Get(ctx, fmt.Sprintf("k%d", i)); err != nil || string(v) != strconv.Itoa(i) {
				t.Fatalf("k%d = %q, %v", i, v, err)
			}
		}
	})
}
