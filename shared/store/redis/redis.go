// Package redis is the ElastiCache / Redis key-value cache through go-redis v9. Every key gets the
// configured prefix; every call is bounded by its context (and by the client's dial and read timeouts),
// and network failures come back as rag.KindUnavailable so callers can fall back (the cache is never the
// system of record).
package redis

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

var _ store.KV = (*Cache)(nil)

// Options configure the client.
type Options struct {
	Addr string
	// Username and Password are AUTH's: an ElastiCache RBAC user (Valkey/Redis 7, Serverless) has a
	// name; an empty Username with a Password is the default user (an AUTH token).
	Username string
	Password string
	DB       int
	// TLS encrypts the connection (ElastiCache in-transit encryption; Serverless requires it) and
	// verifies the server's certificate and host name against the system roots, or RootCAs when set.
	TLS     bool
	RootCAs *x509.CertPool
	Prefix  string
	// DialTimeout and ReadTimeout bound one attempt (defaults 2 s and 1 s); MaxRetries is the client's
	// retry count (default 1: one retry layer per hop, SR-17).
	DialTimeout time.Duration
	ReadTimeout time.Duration
	MaxRetries  int
}

// Cache is a store.KV over Redis.
type Cache struct {
	c      *goredis.Client
	prefix string
}

// New builds the client. It does not connect: call Ping to check the server.
func New(o Options) *Cache {
	if o.DialTimeout <= 0 {
		o.DialTimeout = 2 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = time.Second
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 1
	}
	ro := &goredis.Options{
		Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.ReadTimeout,
		MaxRetries: o.MaxRetries, ContextTimeoutEnabled: true,
		DisableIdentity: true, // CLIENT SETINFO is unknown to older servers and ElastiCache Serverless
	}
	if o.TLS {
		host, _, err := net.SplitHostPort(o.Addr)
		if err != nil {
			host = o.Addr
		}
		ro.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host, RootCAs: o.RootCAs}
	}
	return &Cache{c: goredis.NewClient(ro), prefix: o.Prefix}
}

func (c *Cache) k(key string) string { return c.prefix + key }

func classify(op string, err error) error {
	var ne net.Error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, goredis.Nil):
		return rag.E(op, rag.KindNotFound, nil)
	case strings.HasPrefix(err.Error(), "WRONGTYPE"), strings.Contains(err.Error(), "not an integer"):
		return rag.E(op, rag.KindInvalid, err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &ne),
		errors.Is(err, goredis.ErrClosed), errors.Is(err, net.ErrClosed), strings.Contains(err.Error(), "connection"),
		strings.HasPrefix(err.Error(), "LOADING"), strings.HasPrefix(err.Error(), "READONLY"), strings.HasPrefix(err.Error(), "MASTERDOWN"),
		strings.HasPrefix(err.Error(), "OOM"), errors.Is(err, goredis.ErrPoolTimeout), strings.Contains(err.Error(), "EOF"):
		return rag.E(op, rag.KindUnavailable, err)
	}
	return rag.E(op, rag.KindInternal, err)
}

// Get implements store.KV.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, error) {
	b, err := c.c.Get(ctx, c.k(key)).Bytes()
	return b, classify("redis.Get", err)
}

// Set implements store.KV.
func (c *Cache) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return classify("redis.Set", c.c.Set(ctx, c.k(key), value, max(ttl, 0)).Err())
}

// SetNX implements store.KV.
func (c *Cache) SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error) {
	ok, err := c.c.SetNX(ctx, c.k(key), value, max(ttl, 0)).Result()
	return ok, classify("redis.SetNX", err)
}

// Delete implements store.KV.
func (c *Cache) Delete(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = c.k(k)
	}
	return classify("redis.Delete", c.c.Del(ctx, ks...).Err())
}

// incrScript increments and sets the ttl only when the increment created the key, atomically.
var incrScript = goredis.NewScript(`
local v = redis.call('INCRBY', KEYS[1], ARGV[1])
if tonumber(ARGV[2]) > 0 and v == tonumber(ARGV[1]) and redis.call('PTTL', KEYS[1]) == -1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return v`)

// IncrBy implements store.KV.
func (c *Cache) IncrBy(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error) {
	n, err := incrScript.Run(ctx, c.c, []string{c.k(key)}, delta, ttl.Milliseconds()).Int64()
	return n, classify("redis.IncrBy", err)
}

// HSet implements store.KV.
func (c *Cache) HSet(ctx context.Context, key string, fields map[string][]byte) error {
	if len(fields) == 0 {
		return rag.Errorf("redis.HSet", rag.KindInvalid, "HSet needs at least one field")
	}
	args := make([]any, 0, 2*len(fields))
	for f, v := range fields {
		args = append(args, f, v)
	}
	return classify("redis.HSet", c.c.HSet(ctx, c.k(key), args...).Err())
}

// HGetAll implements store.KV.
func (c *Cache) HGetAll(ctx context.Context, key string) (map[string][]byte, error) {
	m, err := c.c.HGetAll(ctx, c.k(key)).Result()
	if err != nil {
		return nil, classify("redis.HGetAll", err)
	}
	out := make(map[string][]byte, len(m))
	for f, v := range m {
		out[f] = []byte(v)
	}
	return out, nil
}

// HDel implements store.KV.
func (c *Cache) HDel(ctx context.Context, key string, fields ...string) error {
	if len(fields) == 0 {
		return nil
	}
	return classify("redis.HDel", c.c.HDel(ctx, c.k(key), fields...).Err())
}

// Expire implements store.KV.
func (c *Cache) Expire(ctx context.Context, key string, ttl time.Duration) error {
	var ok bool
	var err error
	if ttl <= 0 {
		var n int64
		n, err = c.c.Del(ctx, c.k(key)).Result()
		ok = n > 0
	} else {
		ok, err = c.c.PExpire(ctx, c.k(key), ttl).Result()
	}
	if err != nil {
		return classify("redis.Expire", err)
	}
	if !ok {
		return rag.E("redis.Expire", rag.KindNotFound, nil)
	}
	return nil
}

// TTL implements store.KV.
func (c *Cache) TTL(ctx context.Context, key string) (time.Duration, error) {
	ms, err := c.c.Do(ctx, "PTTL", c.k(key)).Int64()
	if err != nil {
		return 0, classify("redis.TTL", err)
	}
	switch ms {
	case -2:
		return 0, rag.E("redis.TTL", rag.KindNotFound, nil)
	case -1:
		return 0, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Ping implements store.KV.
func (c *Cache) Ping(ctx context.Context) error { return classify("redis.Ping", c.c.Ping(ctx).Err()) }

// Close implements store.KV.
func (c *Cache) Close() error { return c.c.Close() }
