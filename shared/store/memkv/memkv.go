// Package memkv is the in-process key-value cache used by `docmind serve`: strings, hashes and counters
// with TTLs, with Redis's semantics for the subset docmind uses (store.KV). Expired keys are dropped
// lazily on access and by a periodic sweep bounded by MaxKeys.
package memkv

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

var _ store.KV = (*Cache)(nil)

type entry struct {
	val     []byte
	hash    map[string][]byte // non-nil for a hash
	expires time.Time         // zero: never
}

// Cache is an in-process store.KV. Safe for concurrent use.
type Cache struct {
	now     func() time.Time
	maxKeys int

	mu   sync.Mutex
	data map[string]*entry
}

// New returns an empty cache. now may be nil (time.Now). maxKeys bounds memory: when a write would
// exceed it, expired keys are swept and then the keys closest to expiry are evicted (0: 1,000,000).
func New(now func() time.Time, maxKeys int) *Cache {
	if now == nil {
		now = time.Now
	}
	if maxKeys <= 0 {
		maxKeys = 1_000_000
	}
	return &Cache{now: now, maxKeys: maxKeys, data: map[string]*entry{}}
}

func (c *Cache) live(key string) *entry {
	e, ok := c.data[key]
	if !ok {
		return nil
	}
	if !e.expires.IsZero() && !c.now().Before(e.expires) {
		delete(c.data, key)
		return nil
	}
	return e
}

func (c *Cache) expiry(ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return c.now().Add(ttl)
}

// makeRoom evicts when the cache is full: expired keys first, then those with the nearest expiry, then any.
func (c *Cache) makeRoom() {
	if len(c.data) < c.maxKeys {
		return
	}
	now := c.now()
	for k, e := range c.data {
		if !e.expires.IsZero() && !now.Before(e.expires) {
			delete(c.data, k)
		}
	}
	for len(c.data) >= c.maxKeys {
		var victim string
		var soonest time.Time
		for k, e := range c.data {
			if victim == "" || (!e.expires.IsZero() && (soonest.IsZero() || e.expires.Before(soonest))) {
				victim, soonest = k, e.expires
			}
		}
		delete(c.data, victim)
	}
}

func ctxErr(op string, ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	return nil
}

func wrongType(op, key string) error {
	return rag.Errorf(op, rag.KindInvalid, "key %q holds the wrong kind of value", key)
}

// Get implements store.KV.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, error) {
	const op = "memkv.Get"
	if err := ctxErr(op, ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.live(key)
	switch {
	case e == nil:
		return nil, rag.E(op, rag.KindNotFound, nil)
	case e.hash != nil:
		return nil, wrongType(op, key)
	}
	return append([]byte(nil), e.val...), nil
}

// Set implements store.KV.
func (c *Cache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := ctxErr("memkv.Set", ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live(key) == nil {
		c.makeRoom()
	}
	c.data[key] = &entry{val: append([]byte(nil), value...), expires: c.expiry(ttl)}
	return nil
}

// SetNX implements store.KV.
func (c *Cache) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	if err := ctxErr("memkv.SetNX", ctx); err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.live(key) != nil {
		return false, nil
	}
	c.makeRoom()
	c.data[key] = &entry{val: append([]byte(nil), value...), expires: c.expiry(ttl)}
	return true, nil
}

// Delete implements store.KV.
func (c *Cache) Delete(ctx context.Context, keys ...string) error {
	if err := ctxErr("memkv.Delete", ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		delete(c.data, k)
	}
	return nil
}

// IncrBy implements store.KV.
func (c *Cache) IncrBy(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	const op = "memkv.IncrBy"
	if err := ctxErr(op, ctx); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.live(key)
	if e == nil {
		c.makeRoom()
		e = &entry{val: []byte("0"), expires: c.expiry(ttl)}
		c.data[key] = e
	}
	if e.hash != nil {
		return 0, wrongType(op, key)
	}
	n, err := strconv.ParseInt(string(e.val), 10, 64)
	if err != nil {
		return 0, rag.Errorf(op, rag.KindInvalid, "key %q does not hold an integer", key)
	}
	n += delta
	e.val = strconv.AppendInt(e.val[:0], n, 10)
	return n, nil
}

// HSet implements store.KV.
func (c *Cache) HSet(ctx context.Context, key string, fields map[string][]byte) error {
	const op = "memkv.HSet"
	if err := ctxErr(op, ctx); err != nil {
		return err
	}
	if len(fields) == 0 {
		return rag.Errorf(op, rag.KindInvalid, "HSet needs at least one field")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.live(key)
	if e == nil {
		c.makeRoom()
		e = &entry{hash: map[string][]byte{}}
		c.data[key] = e
	}
	if e.hash == nil {
		return wrongType(op, key)
	}
	for f, v := range fields {
		e.hash[f] = append([]byte(nil), v...)
	}
	return nil
}

// HGetAll implements store.KV.
func (c *Cache) HGetAll(ctx context.Context, key string) (map[string][]byte, error) {
	const op = "memkv.HGetAll"
	if err := ctxErr(op, ctx); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]byte{}
	e := c.live(key)
	if e == nil {
		return out, nil
	}
	if e.hash == nil {
		return nil, wrongType(op, key)
	}
	for f, v := range e.hash {
		out[f] = append([]byte(nil), v...)
	}
	return out, nil
}

// HDel implements store.KV. A hash left without fields is removed, as in Redis.
func (c *Cache) HDel(ctx context.Context, key string, fields ...string) error {
	const op = "memkv.HDel"
	if err := ctxErr(op, ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.live(key)
	if e == nil {
		return nil
	}
	if e.hash == nil {
		return wrongType(op, key)
	}
	for _, f := range fields {
		delete(e.hash, f)
	}
	if len(e.hash) == 0 {
		delete(c.data, key)
	}
	return nil
}

// Expire implements store.KV.
func (c *Cache) Expire(ctx context.Context, key string, ttl time.Duration) error {
	const op = "memkv.Expire"
	if err := ctxErr(op, ctx); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.live(key)
	if e == nil {
		return rag.E(op, rag.KindNotFound, nil)
	}
	if ttl <= 0 {
		delete(c.data, key) // Redis deletes a key given a non-positive ttl
		return nil
	}
	e.expires = c.expiry(ttl)
	return nil
}

// TTL implements store.KV.
func (c *Cache) TTL(ctx context.Context, key string) (time.Duration, error) {
	const op = "memkv.TTL"
	if err := ctxErr(op, ctx); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.live(key)
	if e == nil {
		return 0, rag.E(op, rag.KindNotFound, nil)
	}
	if e.expires.IsZero() {
		return 0, nil
	}
	return e.expires.Sub(c.now()), nil
}

// Ping implements store.KV.
func (c *Cache) Ping(ctx context.Context) error { return ctxErr("memkv.Ping", ctx) }

// Close implements store.KV.
func (c *Cache) Close() error { return nil }

// Len returns the number of keys held, expired ones included until they are swept.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.data)
}
