package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"

	"github.com/docmind/docmind/shared/rag"
)

// maxJWKSBytes bounds a JWKS response: a provider publishes a handful of keys (Cognito two), a few KB.
const maxJWKSBytes = 1 << 20

// emptyRetry is the wait between fetch attempts while no JWKS has ever been fetched: short, so a provider
// that was down when the first token arrived is picked up quickly, yet not one fetch per request.
const emptyRetry = 5 * time.Second

// jwksCache holds the last fetched key set. Verifications read it under mu; fetches are serialised by
// fetchMu so that a burst of tokens with a new "kid" makes one request, and rate limited by
// minRefresh so that tokens with random kids cannot make the verifier hammer the JWKS URL.
type jwksCache struct {
	url        string
	client     *http.Client
	now        func() time.Time
	minRefresh time.Duration
	maxAge     time.Duration

	mu        sync.RWMutex
	set       jwk.Set // nil until the first successful fetch
	fetchedAt time.Time

	fetchMu     sync.Mutex
	lastAttempt time.Time // any fetch; guarded by fetchMu, zero before the first
	lastUnknown time.Time // the last fetch made for an unknown kid; guarded by fetchMu
}

func newJWKSCache(url string, client *http.Client, now func() time.Time, minRefresh, maxAge time.Duration) *jwksCache {
	return &jwksCache{url: url, client: client, now: now, minRefresh: minRefresh, maxAge: maxAge}
}

// key returns the key for alg and kid, fetching the JWKS when there is none yet, when it is older than
// maxAge, or when kid is unknown (a rotation), each subject to the refresh rate limit. A stale set is used
// when a refetch is not allowed yet or fails. Errors: KindPermission for a key id the provider does not
// publish, KindUnavailable when no usable key set could be had.
func (c *jwksCache) key(ctx context.Context, alg jwa.SignatureAlgorithm, kid string) (jwk.Key, error) {
	const op = "auth.Verify"
	if k, ok := c.cached(alg, kid); ok {
		return k, nil
	}
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	// Another verification may have fetched while this one waited for the lock.
	if k, ok := c.cached(alg, kid); ok {
		return k, nil
	}
	set, fresh := c.snapshot()
	stale := findKey(set, alg, kid)
	if !c.mayFetch(set != nil, fresh) {
		if stale != nil {
			return stale, nil
		}
		if set == nil {
			return nil, rag.Errorf(op, rag.KindUnavailable, "jwks not available yet")
		}
		return nil, rag.Errorf(op, rag.KindPermission, "unknown key id")
	}
	if set != nil && fresh {
		c.lastUnknown = c.now()
	}
	c.lastAttempt = c.now()
	got, err := c.fetch(ctx)
	if err != nil {
		if stale != nil {
			return stale, nil
		}
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	c.mu.Lock()
	c.set, c.fetchedAt = got, c.now()
	c.mu.Unlock()
	if k := findKey(got, alg, kid); k != nil {
		return k, nil
	}
	return nil, rag.Errorf(op, rag.KindPermission, "unknown key id")
}

// cached returns the key from a set that is not older than maxAge.
func (c *jwksCache) cached(alg jwa.SignatureAlgorithm, kid string) (jwk.Key, bool) {
	set, fresh := c.snapshot()
	if set == nil || !fresh {
		return nil, false
	}
	k := findKey(set, alg, kid)
	return k, k != nil
}

func (c *jwksCache) snapshot() (jwk.Set, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.set, c.set != nil && c.now().Sub(c.fetchedAt) < c.maxAge
}

// mayFetch applies the refresh rate limits; the caller holds fetchMu. Without keys, fetches are retried
// every emptyRetry (or MinRefreshInterval when shorter); a stale set is refetched at most once per
// MinRefreshInterval; an unknown kid in a fresh set triggers a fetch only when no other unknown kid did in
// the last MinRefreshInterval, whatever the other fetches, so that a rotation is picked up by its first token
// while random kids cost at most one fetch per interval.
func (c *jwksCache) mayFetch(haveSet, fresh bool) bool {
	now := c.now()
	switch {
	case !haveSet:
		return c.lastAttempt.IsZero() || now.Sub(c.lastAttempt) >= min(c.minRefresh, emptyRetry)
	case !fresh:
		return now.Sub(c.lastAttempt) >= c.minRefresh
	default:
		return c.lastUnknown.IsZero() || now.Sub(c.lastUnknown) >= c.minRefresh
	}
}

// fetchTimeout bounds one JWKS fetch whatever the HTTP client's settings: verifications that need new keys
// wait on it.
const fetchTimeout = 10 * time.Second

// fetch GETs and parses the JWKS. The fetch serves every verification waiting on fetchMu, not only the one
// that started it, so it is detached from that caller's cancellation (a client hanging up must not cost the
// next rotation a MinRefreshInterval) and bounded by fetchTimeout instead.
func (c *jwksCache) fetch(ctx context.Context) (jwk.Set, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwks fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks fetch: status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return nil, fmt.Errorf("jwks read: %w", err)
	}
	if len(body) > maxJWKSBytes {
		return nil, errors.New("jwks larger than 1 MB")
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return nil, fmt.Errorf("jwks parse: %w", err)
	}
	if set.Len() == 0 {
		return nil, errors.New("jwks has no keys")
	}
	return set, nil
}

// findKey returns the key of set that may verify alg under kid: its "kid" equal (when the token names one),
// its type fitting the algorithm, its own "alg" (when published) equal to alg, and its "use" (when
// published) "sig". A token without "kid" is matched only when exactly one key fits, never by trying all.
// nil when none fits.
func findKey(set jwk.Set, alg jwa.SignatureAlgorithm, kid string) jwk.Key {
	if set == nil {
		return nil
	}
	var found jwk.Key
	n := 0
	for i := range set.Len() {
		k, _ := set.Key(i)
		if !keyFits(k, alg, kid) {
			continue
		}
		if kid != "" {
			return k
		}
		found = k
		n++
	}
	if n != 1 {
		return nil
	}
	return found
}

func keyFits(k jwk.Key, alg jwa.SignatureAlgorithm, kid string) bool {
	if id, _ := k.KeyID(); kid != "" && id != kid {
		return false
	}
	if k.KeyType() != keyTypeFor(alg) {
		return false
	}
	if ka, ok := k.Algorithm(); ok && ka.String() != alg.String() {
		return false
	}
	var use string
	if err := k.Get(jwk.KeyUsageKey, &use); err == nil && use != "" && use != "sig" {
		return false
	}
	return true
}
