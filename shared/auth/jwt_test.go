package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"

	"github.com/docmind/docmind/shared/rag"
)

const (
	testIssuer   = "https://issuer.docmind.test"
	testAudience = "docmind-client"
)

// t0 is the fixed "now" of every test; tokens are dated relative to it.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// testKey is a signing key with the kid it is published under.
type testKey struct {
	kid  string
	alg  jwa.SignatureAlgorithm
	priv any
	pub  any
}

func newRSAKey(t *testing.T, kid string) testKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{kid: kid, alg: jwa.RS256(), priv: k, pub: &k.PublicKey}
}

func newECKey(t *testing.T, kid string) testKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{kid: kid, alg: jwa.ES256(), priv: k, pub: &k.PublicKey}
}

// keys are generated once: RSA generation is the slow part of these tests.
var (
	keysOnce              sync.Once
	rsa1, rsa2, rsa3, ec1 testKey
)

func testKeys(t *testing.T) {
	keysOnce.Do(func() {
		rsa1, rsa2, rsa3 = newRSAKey(t, "rsa-1"), newRSAKey(t, "rsa-2"), newRSAKey(t, "rsa-3")
		ec1 = newECKey(t, "ec-1")
	})
}

// idp is an in-process identity provider: a JWKS endpoint on 127.0.0.1 that counts its fetches.
type idp struct {
	srv     *httptest.Server
	fetches atomic.Int64
	jwks    atomic.Pointer[[]byte]
	down    atomic.Bool
}

func newIDP(t *testing.T, keys ...testKey) *idp {
	t.Helper()
	p := &idp{}
	p.publish(t, keys...)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.fetches.Add(1)
		if p.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*p.jwks.Load())
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// publish replaces the served JWKS with the public halves of keys, shaped like Cognito's (kid, alg, use).
func (p *idp) publish(t *testing.T, keys ...testKey) {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		pk, err := jwk.Import(k.pub)
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]any{jwk.KeyIDKey: k.kid, jwk.AlgorithmKey: k.alg, jwk.KeyUsageKey: "sig"} {
			if err := pk.Set(name, v); err != nil {
				t.Fatal(err)
			}
		}
		if err := set.AddKey(pk); err != nil {
			t.Fatal(err)
		}
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	p.jwks.Store(&b)
}

// clock is a settable test clock.
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

func (p *idp) verifier(t *testing.T, clk *clock, mod func(*JWTConfig)) *JWTVerifier {
	t.Helper()
	cfg := JWTConfig{
		JWKSURL:    p.srv.URL + "/.well-known/jwks.json",
		Issuer:     testIssuer,
		Audience:   []string{testAudience},
		HTTPClient: p.srv.Client(),
		Now:        clk.Now,
	}
	if mod != nil {
		mod(&cfg)
	}
	v, err := NewJWTVerifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func baseClaims() map[string]any {
	return map[string]any{
		"iss":           testIssuer,
		"aud":           testAudience,
		"sub":           "user-1",
		"email":         "ada@example.com",
		"custom:tenant": "acme",
		"iat":           t0.Add(-time.Minute).Unix(),
		"exp":           t0.Add(time.Hour).Unix(),
	}
}

func with(claims map[string]any, kv ...any) map[string]any {
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(claims, kv[i].(string))
			continue
		}
		claims[kv[i].(string)] = kv[i+1]
	}
	return claims
}

// sign makes a compact JWS over the JSON of claims with alg and key; kid "" leaves the header without one.
func sign(t *testing.T, alg jwa.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	h := jws.NewHeaders()
	if err := h.Set(jws.TypeKey, "JWT"); err != nil {
		t.Fatal(err)
	}
	if kid != "" {
		if err := h.Set(jws.KeyIDKey, kid); err != nil {
			t.Fatal(err)
		}
	}
	b, err := jws.Sign(payload, jws.WithKey(alg, key, jws.WithProtectedHeaders(h)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func signWith(t *testing.T, k testKey, claims map[string]any) string {
	return sign(t, k.alg, k.priv, k.kid, claims)
}

// unsigned builds an "alg: none" token by hand: no library will sign one, which is the point.
func unsigned(alg string, claims map[string]any) string {
	h, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT", "kid": "rsa-1"})
	p, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	return enc(h) + "." + enc(p) + "."
}

// tamper swaps the payload of a signed token for other claims, keeping header and signature.
func tamper(token string, claims map[string]any) string {
	parts := strings.Split(token, ".")
	p, _ := json.Marshal(claims)
	parts[1] = base64.RawURLEncoding.EncodeToString(p)
	return strings.Join(parts, ".")
}

func rsaPublicPEM(t *testing.T, k testKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// TestSEC01JWT is RELIABILITY SEC-01's JWT layer: only the valid tokens pass; every other one is a
// KindPermission error whose text holds no part of the token.
func TestSEC01JWT(t *testing.T) {
	testKeys(t)
	hsSecret := []byte("0123456789abcdef0123456789abcdef-dev")
	type tc struct {
		name   string
		token  func(t *testing.T) string
		mod    func(*JWTConfig) // verifier config tweak
		accept bool
	}
	cases := []tc{
		{name: "valid RS256", accept: true, token: func(t *testing.T) string { return signWith(t, rsa1, baseClaims()) }},
		{name: "valid ES256", accept: true, token: func(t *testing.T) string { return signWith(t, ec1, baseClaims()) }},
		{name: "valid within leeway after exp", accept: true, token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "exp", t0.Add(-30*time.Second).Unix()))
		}},
		{name: "valid audience among several", accept: true, token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "aud", []string{"other", testAudience}))
		}},
		{name: "valid HS256 with the shared secret", accept: true,
			mod:   func(c *JWTConfig) { c.HS256Secret = hsSecret },
			token: func(t *testing.T) string { return sign(t, jwa.HS256(), hsSecret, "", baseClaims()) }},
		{name: "expired", token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "exp", t0.Add(-2*time.Minute).Unix()))
		}},
		{name: "not yet valid", token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "nbf", t0.Add(2*time.Minute).Unix()))
		}},
		{name: "no exp", token: func(t *testing.T) string { return signWith(t, rsa1, with(baseClaims(), "exp", nil)) }},
		{name: "wrong iss", token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "iss", "https://evil.example"))
		}},
		{name: "no iss", token: func(t *testing.T) string { return signWith(t, rsa1, with(baseClaims(), "iss", nil)) }},
		{name: "wrong aud", token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "aud", "another-app"))
		}},
		{name: "no aud and no client_id", token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "aud", nil))
		}},
		{name: "unknown kid, not published", token: func(t *testing.T) string { return signWith(t, rsa3, baseClaims()) }},
		{name: "known kid, signed by another key", token: func(t *testing.T) string {
			return sign(t, jwa.RS256(), rsa3.priv, rsa1.kid, baseClaims())
		}},
		{name: "alg none", token: func(t *testing.T) string { return unsigned("none", baseClaims()) }},
		{name: "alg None", token: func(t *testing.T) string { return unsigned("None", baseClaims()) }},
		{name: "alg none with HS256 also allowed", mod: func(c *JWTConfig) { c.HS256Secret = hsSecret },
			token: func(t *testing.T) string { return unsigned("none", baseClaims()) }},
		{name: "HS256 signed with the RSA public key (HS not allowed)", token: func(t *testing.T) string {
			return sign(t, jwa.HS256(), rsaPublicPEM(t, rsa1), rsa1.kid, baseClaims())
		}},
		{name: "HS256 signed with the RSA public key (HS allowed with another secret)",
			mod: func(c *JWTConfig) { c.HS256Secret = hsSecret },
			token: func(t *testing.T) string {
				return sign(t, jwa.HS256(), rsaPublicPEM(t, rsa1), rsa1.kid, baseClaims())
			}},
		{name: "HS256 signed with the JWKS JSON of the RSA key", mod: func(c *JWTConfig) { c.HS256Secret = hsSecret },
			token: func(t *testing.T) string {
				pk, _ := jwk.Import(rsa1.pub)
				b, _ := json.Marshal(pk)
				return sign(t, jwa.HS256(), b, rsa1.kid, baseClaims())
			}},
		{name: "RS256 header on an ES256 key id", token: func(t *testing.T) string {
			return sign(t, jwa.RS256(), rsa1.priv, ec1.kid, baseClaims())
		}},
		{name: "RS512 not in the allow-list", token: func(t *testing.T) string {
			return sign(t, jwa.RS512(), rsa1.priv, rsa1.kid, baseClaims())
		}},
		{name: "tampered payload (tenant switched)", token: func(t *testing.T) string {
			return tamper(signWith(t, rsa1, baseClaims()), with(baseClaims(), "custom:tenant", "globex"))
		}},
		{name: "tampered signature", token: func(t *testing.T) string {
			tok := signWith(t, rsa1, baseClaims())
			i := strings.LastIndexByte(tok, '.') + 5
			c := byte('A')
			if tok[i] == 'A' {
				c = 'B'
			}
			return tok[:i] + string(c) + tok[i+1:]
		}},
		{name: "missing tenant claim", token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "custom:tenant", nil))
		}},
		{name: "empty tenant claim", token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "custom:tenant", ""))
		}},
		{name: "tenant claim not a string", token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "custom:tenant", []string{"acme", "globex"}))
		}},
		{name: "missing sub", token: func(t *testing.T) string { return signWith(t, rsa1, with(baseClaims(), "sub", nil)) }},
		{name: "JSON serialisation", token: func(t *testing.T) string {
			return `{"payload":"e30","signatures":[{"protected":"eyJhbGciOiJub25lIn0","signature":""}]}`
		}},
		{name: "garbage", token: func(t *testing.T) string { return "not.a.token" }},
		{name: "oversized", token: func(t *testing.T) string {
			return signWith(t, rsa1, with(baseClaims(), "pad", strings.Repeat("x", 20000)))
		}},
	}
	// Each rejection for the reason it was built to exercise, not by accident.
	reasons := map[string]string{
		"expired": "token expired", "not yet valid": "not yet valid", "no exp": "no expiry",
		"wrong iss": "wrong issuer", "no iss": "wrong issuer", "wrong aud": "wrong audience",
		"no aud and no client_id": "wrong audience", "unknown kid, not published": "unknown key id",
		"known kid, signed by another key": "bad signature", "alg none": `"none" not allowed`,
		"alg None": "", "alg none with HS256 also allowed": `"none" not allowed`,
		"HS256 signed with the RSA public key (HS not allowed)":                 `"HS256" not allowed`,
		"HS256 signed with the RSA public key (HS allowed with another secret)": "bad signature",
		"HS256 signed with the JWKS JSON of the RSA key":                        "bad signature",
		"RS256 header on an ES256 key id":                                       "unknown key id",
		"RS512 not in the allow-list":                                           `"RS512" not allowed`,
		"tampered payload (tenant switched)":                                    "bad signature",
		"tampered signature":                                                    "bad signature",
		"missing tenant claim":                                                  "no tenant claim",
		"empty tenant claim":                                                    "no tenant claim",
		"tenant claim not a string":                                             "no tenant claim",
		"missing sub":                                                           "no user claim",
		"JSON serialisation":                                                    "malformed",
		"garbage":                                                               "malformed",
		"oversized":                                                             "too large",
	}
	pass := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newIDP(t, rsa1, rsa2, ec1)
			clk := &clock{now: t0}
			v := p.verifier(t, clk, c.mod)
			token := c.token(t)
			claims, err := v.Verify(context.Background(), token)
			switch {
			case c.accept && err != nil:
				t.Errorf("rejected a valid token: %v", err)
			case c.accept && (claims.Tenant != "acme" || claims.Subject != "user-1" || claims.Email != "ada@example.com"):
				t.Errorf("claims = %+v, want tenant acme, subject user-1, email ada@example.com", claims)
			case !c.accept && err == nil:
				t.Errorf("accepted: %+v", claims)
			case !c.accept && rag.KindOf(err) != rag.KindPermission:
				t.Errorf("kind = %v, want Permission (err %v)", rag.KindOf(err), err)
			case !c.accept && !strings.Contains(err.Error(), reasons[c.name]):
				t.Errorf("rejected as %q, want the reason %q", err, reasons[c.name])
			case !c.accept && leaksToken(err.Error(), token):
				t.Errorf("error text %q holds part of the token", err)
			default:
				pass++
			}
		})
	}
	t.Logf("SEC-01 (JWT layer): %d/%d cases as expected (%d valid accepted, %d invalid rejected)",
		pass, len(cases), countAccept(cases, func(c tc) bool { return c.accept }), countAccept(cases, func(c tc) bool { return !c.accept }))
	if pass != len(cases) {
		t.Errorf("SEC-01: %d/%d", pass, len(cases))
	}
}

func countAccept[T any](xs []T, f func(T) bool) int {
	n := 0
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}

// leaksToken reports whether msg holds any 12-character piece of the token's three parts.
func leaksToken(msg, token string) bool {
	for _, part := range strings.Split(token, ".") {
		for i := 0; i+12 <= len(part); i += 12 {
			if strings.Contains(msg, part[i:i+12]) {
				return true
			}
		}
	}
	return false
}

func TestVerifyClaims(t *testing.T) {
	testKeys(t)
	p := newIDP(t, rsa1)
	v := p.verifier(t, &clock{now: t0}, nil)
	tok := signWith(t, rsa1, with(baseClaims(), "cognito:groups", []string{"admins", "readers"}))
	c, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	want := Claims{Tenant: "acme", Subject: "user-1", Email: "ada@example.com", Expiry: t0.Add(time.Hour), Groups: []string{"admins", "readers"}}
	if c.Tenant != want.Tenant || c.Subject != want.Subject || c.Email != want.Email || !c.Expiry.Equal(want.Expiry) || !slices.Equal(c.Groups, want.Groups) {
		t.Errorf("claims = %+v, want %+v", c, want)
	}
}

func TestVerifyConfigurableClaims(t *testing.T) {
	testKeys(t)
	p := newIDP(t, rsa1)
	v := p.verifier(t, &clock{now: t0}, func(c *JWTConfig) {
		c.TenantClaim, c.UserClaim, c.EmailClaim, c.GroupsClaim = "org", "uid", "mail", "roles"
	})
	tok := signWith(t, rsa1, with(baseClaims(), "org", "initech", "uid", "u-9", "mail", "bob@example.com", "roles", []string{"x"}))
	c, err := v.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tenant != "initech" || c.Subject != "u-9" || c.Email != "bob@example.com" || !slices.Equal(c.Groups, []string{"x"}) {
		t.Errorf("claims = %+v, want tenant initech, subject u-9, email bob@example.com, groups [x]", c)
	}
}

// TestUnknownKidRefresh: a token with a new kid makes exactly one JWKS fetch; when the provider has rotated
// the key in, the token is accepted; when it has not, the token is rejected and further unknown kids make no
// fetch until MinRefreshInterval has passed.
func TestUnknownKidRefresh(t *testing.T) {
	testKeys(t)
	ctx := context.Background()

	t.Run("rotated in", func(t *testing.T) {
		p := newIDP(t, rsa1)
		v := p.verifier(t, &clock{now: t0}, nil)
		if _, err := v.Verify(ctx, signWith(t, rsa1, baseClaims())); err != nil {
			t.Fatal(err)
		}
		if got := p.fetches.Load(); got != 1 {
			t.Fatalf("fetches after the first token = %d, want 1", got)
		}
		p.publish(t, rsa1, rsa2)
		if _, err := v.Verify(ctx, signWith(t, rsa2, baseClaims())); err != nil {
			t.Errorf("token with the rotated-in kid rejected: %v", err)
		}
		if got := p.fetches.Load(); got != 2 {
			t.Errorf("fetches after the unknown kid = %d, want 2 (exactly one refresh)", got)
		}
		for range 5 { // both kids now cached: no more fetches
			if _, err := v.Verify(ctx, signWith(t, rsa2, baseClaims())); err != nil {
				t.Fatal(err)
			}
			if _, err := v.Verify(ctx, signWith(t, rsa1, baseClaims())); err != nil {
				t.Fatal(err)
			}
		}
		if got := p.fetches.Load(); got != 2 {
			t.Errorf("fetches after cached kids = %d, want 2", got)
		}
	})

	t.Run("not published, rate limited", func(t *testing.T) {
		p := newIDP(t, rsa1)
		clk := &clock{now: t0}
		v := p.verifier(t, clk, func(c *JWTConfig) { c.MinRefreshInterval = time.Minute })
		if _, err := v.Verify(ctx, signWith(t, rsa1, baseClaims())); err != nil {
			t.Fatal(err)
		}
		// The unknown-kid refresh is allowed MinRefreshInterval after the previous fetch.
		clk.Add(time.Minute)
		_, err := v.Verify(ctx, signWith(t, rsa2, baseClaims()))
		if rag.KindOf(err) != rag.KindPermission {
			t.Fatalf("unpublished kid: err = %v, want Permission", err)
		}
		if got := p.fetches.Load(); got != 2 {
			t.Fatalf("fetches = %d, want 2 (one refresh for the unknown kid)", got)
		}
		for i := range 50 { // a flood of random kids within the interval
			clk.Add(time.Second / 2)
			_, err := v.Verify(ctx, sign(t, jwa.RS256(), rsa2.priv, "random-"+string(rune('a'+i%26)), baseClaims()))
			if rag.KindOf(err) != rag.KindPermission {
				t.Fatalf("random kid: err = %v, want Permission", err)
			}
		}
		if got := p.fetches.Load(); got != 2 {
			t.Errorf("fetches after a flood of unknown kids within MinRefreshInterval = %d, want 2", got)
		}
		// Known kids keep working meanwhile.
		if _, err := v.Verify(ctx, signWith(t, rsa1, baseClaims())); err != nil {
			t.Errorf("known kid rejected during the flood: %v", err)
		}
		// After the interval the provider has rotated rsa2 in: one more fetch, accepted.
		p.publish(t, rsa1, rsa2)
		clk.Add(time.Minute)
		if _, err := v.Verify(ctx, signWith(t, rsa2, baseClaims())); err != nil {
			t.Errorf("rotated-in kid after the interval rejected: %v", err)
		}
		if got := p.fetches.Load(); got != 3 {
			t.Errorf("fetches = %d, want 3", got)
		}
	})

	t.Run("concurrent unknown kid, one fetch", func(t *testing.T) {
		p := newIDP(t, rsa1)
		v := p.verifier(t, &clock{now: t0}, nil)
		if _, err := v.Verify(ctx, signWith(t, rsa1, baseClaims())); err != nil {
			t.Fatal(err)
		}
		p.publish(t, rsa1, rsa2)
		tok := signWith(t, rsa2, baseClaims())
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range 20 {
			wg.Go(func() {
				if _, err := v.Verify(ctx, tok); err != nil {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		if failed.Load() != 0 {
			t.Errorf("%d of 20 concurrent verifications failed", failed.Load())
		}
		if got := p.fetches.Load(); got != 2 {
			t.Errorf("fetches = %d, want 2 (one shared refresh)", got)
		}
	})
}

func TestJWKSUnavailable(t *testing.T) {
	testKeys(t)
	ctx := context.Background()
	p := newIDP(t, rsa1)
	clk := &clock{now: t0}
	v := p.verifier(t, clk, func(c *JWTConfig) { c.JWKSMaxAge = 10 * time.Minute })

	p.down.Store(true)
	_, err := v.Verify(ctx, signWith(t, rsa1, baseClaims()))
	if rag.KindOf(err) != rag.KindUnavailable {
		t.Fatalf("JWKS down, nothing cached: err = %v, want Unavailable", err)
	}
	// Within the empty-set retry wait no new fetch is made.
	_, _ = v.Verify(ctx, signWith(t, rsa1, baseClaims()))
	if got := p.fetches.Load(); got != 1 {
		t.Errorf("fetches while down = %d, want 1", got)
	}
	p.down.Store(false)
	clk.Add(emptyRetry)
	if _, err := v.Verify(ctx, signWith(t, rsa1, baseClaims())); err != nil {
		t.Fatalf("after the provider came back: %v", err)
	}
	// A stale set whose refetch fails keeps serving the keys it has.
	p.down.Store(true)
	clk.Add(11 * time.Minute)
	if _, err := v.Verify(ctx, signWith(t, rsa1, with(baseClaims(), "exp", clk.Now().Add(time.Hour).Unix()))); err != nil {
		t.Errorf("stale JWKS with a failed refetch: %v", err)
	}
	if got := p.fetches.Load(); got != 3 {
		t.Errorf("fetches = %d, want 3 (the stale set was refetched once)", got)
	}
}

// TestCognitoFixtures verifies tokens with the claims Amazon Cognito issues (testdata/cognito_*.json, with
// the pool's issuer and an app client id), signed by a test key published the way Cognito publishes its
// JWKS. An access token has no "aud"; its "client_id" is the audience.
func TestCognitoFixtures(t *testing.T) {
	testKeys(t)
	const pool = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_XXXX"
	const client = "3n4b5urk1ft4fl3mg5e62d9ado"
	p := newIDP(t, rsa1, rsa2)
	v := p.verifier(t, &clock{now: t0}, func(c *JWTConfig) {
		c.Issuer = pool
		c.Audience = []string{client}
	})
	for _, tt := range []struct{ file, tokenUse string }{
		{"testdata/cognito_id_token.json", "id"},
		{"testdata/cognito_access_token.json", "access"},
	} {
		t.Run(tt.tokenUse, func(t *testing.T) {
			claims := loadClaims(t, tt.file)
			if claims["token_use"] != tt.tokenUse || claims["iss"] != pool {
				t.Fatalf("fixture %s: token_use %v iss %v", tt.file, claims["token_use"], claims["iss"])
			}
			c, err := v.Verify(context.Background(), signWith(t, rsa2, claims))
			if err != nil {
				t.Fatalf("Cognito %s token rejected: %v", tt.tokenUse, err)
			}
			if c.Tenant != "acme" || c.Subject != "aa8f0a1e-3c1b-4d2e-9f61-5d0e4d3b2a10" || !slices.Equal(c.Groups, []string{"docmind-admins"}) {
				t.Errorf("claims = %+v", c)
			}
			if tt.tokenUse == "id" && c.Email != "ada@example.com" {
				t.Errorf("id token email = %q, want ada@example.com", c.Email)
			}
			// Restricted to ID tokens, the access token is refused and the ID token still passes.
			idOnly := p.verifier(t, &clock{now: t0}, func(c *JWTConfig) {
				c.Issuer, c.Audience, c.TokenUse = pool, []string{client}, []string{"id"}
			})
			_, err = idOnly.Verify(context.Background(), signWith(t, rsa2, claims))
			if accepted := err == nil; accepted != (tt.tokenUse == "id") {
				t.Errorf("TokenUse [id], token_use %s: err = %v", tt.tokenUse, err)
			}
			// The same token for another app client is refused.
			other, _ := NewJWTVerifier(JWTConfig{JWKSURL: p.srv.URL, Issuer: pool, Audience: []string{"another-client"},
				HTTPClient: p.srv.Client(), Now: func() time.Time { return t0 }})
			if _, err := other.Verify(context.Background(), signWith(t, rsa2, claims)); rag.KindOf(err) != rag.KindPermission {
				t.Errorf("token for client %s accepted by a verifier for another client: %v", client, err)
			}
		})
	}
}

// loadClaims reads a claims fixture and dates it around t0 (iat/auth_time a minute before, exp an hour after).
func loadClaims(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["iat"] = t0.Add(-time.Minute).Unix()
	m["auth_time"] = t0.Add(-time.Minute).Unix()
	m["exp"] = t0.Add(time.Hour).Unix()
	return m
}

func TestNewJWTVerifierConfig(t *testing.T) {
	client := http.DefaultClient
	good := func() JWTConfig {
		return JWTConfig{JWKSURL: "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_XXXX/.well-known/jwks.json",
			Issuer: "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_XXXX", Audience: []string{"app"}, HTTPClient: client}
	}
	secret := []byte(strings.Repeat("s", 32))
	tests := []struct {
		name string
		mod  func(*JWTConfig)
		ok   bool
	}{
		{"cognito", func(*JWTConfig) {}, true},
		{"HS256 only", func(c *JWTConfig) { c.JWKSURL, c.HTTPClient, c.HS256Secret = "", nil, secret }, true},
		{"http on loopback", func(c *JWTConfig) { c.JWKSURL = "http://127.0.0.1:9999/jwks.json" }, true},
		{"nothing to verify with", func(c *JWTConfig) { c.JWKSURL = "" }, false},
		{"http elsewhere", func(c *JWTConfig) { c.JWKSURL = "http://idp.example/jwks.json" }, false},
		{"relative URL", func(c *JWTConfig) { c.JWKSURL = "/jwks.json" }, false},
		{"no HTTP client", func(c *JWTConfig) { c.HTTPClient = nil }, false},
		{"no issuer", func(c *JWTConfig) { c.Issuer = "" }, false},
		{"no audience", func(c *JWTConfig) { c.Audience = nil }, false},
		{"empty audience", func(c *JWTConfig) { c.Audience = []string{""} }, false},
		{"alg none", func(c *JWTConfig) { c.Algorithms = []string{"RS256", "none"} }, false},
		{"HS256 without a secret", func(c *JWTConfig) { c.Algorithms = []string{"RS256", "HS256"} }, false},
		{"RS256 without a JWKS", func(c *JWTConfig) { c.JWKSURL, c.HS256Secret, c.Algorithms = "", secret, []string{"RS256"} }, false},
		{"short secret", func(c *JWTConfig) { c.HS256Secret = []byte("short") }, false},
		{"huge leeway", func(c *JWTConfig) { c.Leeway = time.Hour }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good()
			tt.mod(&cfg)
			_, err := NewJWTVerifier(cfg)
			if tt.ok && err != nil {
				t.Errorf("rejected a good config: %v", err)
			}
			if !tt.ok && rag.KindOf(err) != rag.KindInvalid {
				t.Errorf("err = %v, want Invalid", err)
			}
		})
	}
}

func TestDefaultAlgorithms(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	for _, tt := range []struct {
		name string
		cfg  JWTConfig
		want []string
	}{
		{"jwks", JWTConfig{JWKSURL: "https://idp.example/jwks.json", HTTPClient: http.DefaultClient}, []string{"ES256", "RS256"}},
		{"secret", JWTConfig{HS256Secret: secret}, []string{"HS256"}},
		{"both", JWTConfig{JWKSURL: "https://idp.example/jwks.json", HTTPClient: http.DefaultClient, HS256Secret: secret}, []string{"ES256", "HS256", "RS256"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Issuer, tt.cfg.Audience = "iss", []string{"aud"}
			v, err := NewJWTVerifier(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for name := range v.algs {
				got = append(got, name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("algorithms = %v, want %v", got, tt.want)
			}
		})
	}
}
