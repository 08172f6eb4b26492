package auth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/docmind/docmind/shared/rag"
)

// JWTConfig configures a JWTVerifier. At least one of JWKSURL and HS256Secret is required, and so are Issuer
// and Audience: a verifier that accepted any issuer or audience would accept tokens minted for another
// application by the same identity provider.
type JWTConfig struct {
	// JWKSURL is where the asymmetric public keys are published, e.g. an Amazon Cognito user pool's
	// https://cognito-idp.<region>.amazonaws.com/<pool>/.well-known/jwks.json. It must be https, except for
	// a loopback host (tests, a local identity provider).
	JWKSURL string
	// HS256Secret enables HS256 with this shared secret (at least 32 bytes). For development only: anyone
	// holding the secret can mint tokens for any tenant.
	HS256Secret []byte
	// Issuer is the exact "iss" required (Cognito: https://cognito-idp.<region>.amazonaws.com/<pool>).
	Issuer string
	// Audience lists the accepted audiences: a token is accepted when one of its "aud" values is in the list.
	// Cognito access tokens carry no "aud" but "client_id" (the app client id): when "aud" is absent,
	// "client_id" is checked against the same list instead, so one list of app client ids serves Cognito
	// ID tokens and access tokens alike.
	Audience []string
	// Algorithms is the allow-list of signature algorithms. Default: RS256 and ES256 when JWKSURL is set,
	// and HS256 when HS256Secret is set. "none" is never allowed, an HS algorithm only with HS256Secret, and
	// an HS token is only ever checked against HS256Secret, never against a JWKS key (the classic
	// RSA-public-key-as-HMAC-secret confusion).
	Algorithms []string
	// TenantClaim, UserClaim and EmailClaim name the claims the identity is read from. Defaults
	// "custom:tenant", "sub" and "email". A token without the tenant or user claim is rejected.
	TenantClaim string
	UserClaim   string
	EmailClaim  string
	// GroupsClaim names a string-array claim copied to Claims.Groups. Default "cognito:groups".
	GroupsClaim string
	// TokenUse, when set, lists the accepted values of the "token_use" claim that Cognito puts in its tokens
	// ("id", "access"); a token whose token_use is missing or another is refused. Empty: not checked
	// (other providers have no such claim).
	TokenUse []string
	// Leeway is the clock skew tolerated on "exp" and "nbf". Default 60s.
	Leeway time.Duration
	// HTTPClient fetches the JWKS. Required with JWKSURL: the caller owns timeouts and transport.
	HTTPClient *http.Client
	// MinRefreshInterval is the least time between two JWKS fetches made because a token named an unknown
	// "kid" (a key rotation): the first such token triggers one fetch, and a flood of random kids cannot make
	// the verifier hammer the JWKS URL. Default 1m.
	MinRefreshInterval time.Duration
	// JWKSMaxAge is how long a fetched JWKS is used before it is fetched again on the next verification.
	// Default 1h. A failed refetch keeps the old keys.
	JWKSMaxAge time.Duration
	// Now is the clock, time.Now when nil (tests set it).
	Now func() time.Time
}

// Claims is the identity a verified token carries.
type Claims struct {
	Tenant, Subject, Email string
	// EmailVerified is the token's email_verified claim (true, or the string "true" some providers send).
	// An unverified email must not be trusted to name an existing user.
	EmailVerified bool
	Expiry        time.Time
	Groups        []string
}

// JWTVerifier verifies bearer JWTs. It is safe for concurrent use.
type JWTVerifier struct {
	cfg   JWTConfig
	algs  map[string]jwa.SignatureAlgorithm
	jwks  *jwksCache // nil without JWKSURL
	hsKey []byte
}

// maxTokenLen bounds what is parsed at all: real tokens are a few KB (Cognito ID tokens with many groups
// stay under 8 KB), and a multi-megabyte header must not cost a base64 and JSON decode.
const maxTokenLen = 16 << 10

// minHSSecret is the shortest accepted HS256 secret: RFC 7518 §3.2 asks for a key at least as long as the
// hash output.
const minHSSecret = 32

// knownAlgs are the algorithms a config may allow. "none" is absent on purpose.
var knownAlgs = map[string]jwa.SignatureAlgorithm{
	"RS256": jwa.RS256(), "RS384": jwa.RS384(), "RS512": jwa.RS512(),
	"PS256": jwa.PS256(), "PS384": jwa.PS384(), "PS512": jwa.PS512(),
	"ES256": jwa.ES256(), "ES384": jwa.ES384(), "ES512": jwa.ES512(),
	"HS256": jwa.HS256(), "HS384": jwa.HS384(), "HS512": jwa.HS512(),
}

// NewJWTVerifier checks cfg, fills defaults and returns a verifier. A bad config is a KindInvalid error that
// lists every problem. The JWKS is not fetched here but on first use, so a server can start while the
// identity provider is unreachable.
func NewJWTVerifier(cfg JWTConfig) (*JWTVerifier, error) {
	cfg = withDefaults(cfg)
	algs, problems := checkConfig(cfg)
	if len(problems) > 0 {
		return nil, rag.Errorf("auth.NewJWTVerifier", rag.KindInvalid, "jwt config: %s", strings.Join(problems, "; "))
	}
	v := &JWTVerifier{cfg: cfg, algs: algs, hsKey: slices.Clone(cfg.HS256Secret)}
	if cfg.JWKSURL != "" {
		v.jwks = newJWKSCache(cfg.JWKSURL, cfg.HTTPClient, cfg.Now, cfg.MinRefreshInterval, cfg.JWKSMaxAge)
	}
	return v, nil
}

func withDefaults(cfg JWTConfig) JWTConfig {
	if cfg.TenantClaim == "" {
		cfg.TenantClaim = "custom:tenant"
	}
	if cfg.UserClaim == "" {
		cfg.UserClaim = "sub"
	}
	if cfg.EmailClaim == "" {
		cfg.EmailClaim = "email"
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "cognito:groups"
	}
	if cfg.Leeway == 0 {
		cfg.Leeway = 60 * time.Second
	}
	if cfg.MinRefreshInterval == 0 {
		cfg.MinRefreshInterval = time.Minute
	}
	if cfg.JWKSMaxAge == 0 {
		cfg.JWKSMaxAge = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if len(cfg.Algorithms) == 0 {
		if cfg.JWKSURL != "" {
			cfg.Algorithms = append(cfg.Algorithms, "RS256", "ES256")
		}
		if len(cfg.HS256Secret) > 0 {
			cfg.Algorithms = append(cfg.Algorithms, "HS256")
		}
	}
	return cfg
}

// checkConfig returns the allowed algorithms and every problem found.
func checkConfig(cfg JWTConfig) (map[string]jwa.SignatureAlgorithm, []string) {
	var problems []string
	if cfg.JWKSURL == "" && len(cfg.HS256Secret) == 0 {
		problems = append(problems, "set a JWKS URL or an HS256 secret")
	}
	if cfg.JWKSURL != "" {
		if err := checkJWKSURL(cfg.JWKSURL); err != nil {
			problems = append(problems, err.Error())
		}
		if cfg.HTTPClient == nil {
			problems = append(problems, "a JWKS URL needs an HTTP client")
		}
	}
	if n := len(cfg.HS256Secret); n > 0 && n < minHSSecret {
		problems = append(problems, fmt.Sprintf("the HS256 secret has %d bytes, at least %d are needed", n, minHSSecret))
	}
	if cfg.Issuer == "" {
		problems = append(problems, "an issuer is required")
	}
	if len(cfg.Audience) == 0 || slices.Contains(cfg.Audience, "") {
		problems = append(problems, "at least one non-empty audience is required")
	}
	if cfg.Leeway < 0 || cfg.Leeway > 5*time.Minute {
		problems = append(problems, "leeway must be between 0 and 5m")
	}
	algs := map[string]jwa.SignatureAlgorithm{}
	for _, name := range cfg.Algorithms {
		alg, ok := knownAlgs[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("algorithm %q is not supported", name))
		case alg.IsSymmetric() && len(cfg.HS256Secret) == 0:
			problems = append(problems, fmt.Sprintf("algorithm %s needs an HS256 secret", name))
		case !alg.IsSymmetric() && cfg.JWKSURL == "":
			problems = append(problems, fmt.Sprintf("algorithm %s needs a JWKS URL", name))
		default:
			algs[name] = alg
		}
	}
	return algs, problems
}

// checkJWKSURL requires https, except on a loopback host: keys fetched in clear text could be swapped by
// anyone on the path.
func checkJWKSURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("the JWKS URL is not an absolute URL")
	}
	if u.Scheme == "https" {
		return nil
	}
	if u.Scheme == "http" {
		h := u.Hostname()
		if ip := net.ParseIP(h); h == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return errors.New("the JWKS URL must be https (http only on a loopback host)")
}

// Verify checks token's signature (algorithm in the allow-list, key from the JWKS by "kid" or the HS256
// secret), "exp" (required) and "nbf" within Leeway, "iss", and the audience ("aud", or "client_id" when
// "aud" is absent), and returns the identity it carries. Every rejection is
// rag.E("auth.Verify", rag.KindPermission, reason) with a short reason that is safe to log: it never holds
// the token. When the JWKS cannot be fetched and no keys are cached the error is KindUnavailable instead:
// the token may be fine, the server cannot tell (answer 503, not 401).
func (v *JWTVerifier) Verify(ctx context.Context, token string) (Claims, error) {
	const op = "auth.Verify"
	alg, kid, err := v.header(token)
	if err != nil {
		return Claims{}, rag.E(op, rag.KindPermission, err)
	}
	key, err := v.key(ctx, alg, kid)
	if err != nil {
		return Claims{}, err
	}
	tok, err := jwt.Parse([]byte(token),
		jwt.WithKey(alg, key),
		jwt.WithValidate(true),
		jwt.WithContext(ctx),
		jwt.WithClock(jwt.ClockFunc(v.cfg.Now)),
		jwt.WithAcceptableSkew(v.cfg.Leeway),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithIssuer(v.cfg.Issuer),
	)
	if err != nil {
		return Claims{}, rag.E(op, rag.KindPermission, parseReason(err))
	}
	if err := v.checkAudience(tok); err != nil {
		return Claims{}, rag.E(op, rag.KindPermission, err)
	}
	if err := v.checkTokenUse(tok); err != nil {
		return Claims{}, rag.E(op, rag.KindPermission, err)
	}
	c, err := v.claims(tok)
	if err != nil {
		return Claims{}, rag.E(op, rag.KindPermission, err)
	}
	return c, nil
}

// header reads "alg" and "kid" from the compact JWS and checks the algorithm against the allow-list before
// any key is looked up.
func (v *JWTVerifier) header(token string) (jwa.SignatureAlgorithm, string, error) {
	var zero jwa.SignatureAlgorithm
	if len(token) > maxTokenLen {
		return zero, "", errors.New("token too large")
	}
	// Compact serialisation only: the JSON serialisation can carry several signatures and unprotected
	// headers, nothing a bearer token needs.
	if strings.Count(token, ".") != 2 {
		return zero, "", errors.New("malformed token")
	}
	msg, err := jws.Parse([]byte(token))
	if err != nil || len(msg.Signatures()) != 1 {
		return zero, "", errors.New("malformed token")
	}
	h := msg.Signatures()[0].ProtectedHeaders()
	got, ok := h.Algorithm()
	if !ok {
		return zero, "", errors.New("token has no algorithm")
	}
	alg, ok := v.algs[got.String()]
	if !ok {
		return zero, "", fmt.Errorf("algorithm %.16q not allowed", got.String())
	}
	kid, _ := h.KeyID()
	return alg, kid, nil
}

// key returns the verification key for alg: the HS256 secret for a symmetric algorithm (never a JWKS key,
// whatever the "kid" says), otherwise the JWKS key with that "kid" whose type fits the algorithm.
func (v *JWTVerifier) key(ctx context.Context, alg jwa.SignatureAlgorithm, kid string) (any, error) {
	if alg.IsSymmetric() {
		return v.hsKey, nil
	}
	return v.jwks.key(ctx, alg, kid)
}

// parseReason maps a jwx error to a fixed reason: jwx messages are detailed, and fixed strings keep logs
// free of anything the token's author chose.
func parseReason(err error) error {
	switch {
	case errors.Is(err, jwt.TokenExpiredError()):
		return errors.New("token expired")
	case errors.Is(err, jwt.TokenNotYetValidError()):
		return errors.New("token not yet valid")
	case errors.Is(err, jwt.InvalidIssuerError()):
		return errors.New("wrong issuer")
	case errors.Is(err, jwt.InvalidIssuedAtError()):
		return errors.New("issued in the future")
	case errors.Is(err, jwt.MissingRequiredClaimError()):
		return errors.New("token has no expiry")
	case errors.Is(err, jws.VerificationError()), errors.Is(err, jws.VerifyError()):
		return errors.New("bad signature")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	default:
		return errors.New("invalid token")
	}
}

// checkAudience accepts a token when one of its "aud" values is configured, or, for a token without "aud"
// (a Cognito access token), when its "client_id" is.
func (v *JWTVerifier) checkAudience(tok jwt.Token) error {
	if aud, ok := tok.Audience(); ok && len(aud) > 0 {
		for _, a := range aud {
			if slices.Contains(v.cfg.Audience, a) {
				return nil
			}
		}
		return errors.New("wrong audience")
	}
	var clientID string
	if err := tok.Get("client_id", &clientID); err == nil && slices.Contains(v.cfg.Audience, clientID) {
		return nil
	}
	return errors.New("wrong audience")
}

// checkTokenUse applies the TokenUse allow-list.
func (v *JWTVerifier) checkTokenUse(tok jwt.Token) error {
	if len(v.cfg.TokenUse) == 0 || slices.Contains(v.cfg.TokenUse, stringClaim(tok, "token_use")) {
		return nil
	}
	return errors.New("token_use not accepted")
}

// claims reads the identity claims; a token without the tenant or user claim names nobody and is refused.
func (v *JWTVerifier) claims(tok jwt.Token) (Claims, error) {
	var c Claims
	c.Tenant = stringClaim(tok, v.cfg.TenantClaim)
	if c.Tenant == "" {
		return Claims{}, errors.New("token has no tenant claim")
	}
	c.Subject = stringClaim(tok, v.cfg.UserClaim)
	if c.Subject == "" {
		return Claims{}, errors.New("token has no user claim")
	}
	c.Email = stringClaim(tok, v.cfg.EmailClaim)
	var verified any
	if err := tok.Get("email_verified", &verified); err == nil {
		c.EmailVerified = verified == true || verified == "true"
	}
	c.Expiry, _ = tok.Expiration()
	var groups []any
	if err := tok.Get(v.cfg.GroupsClaim, &groups); err == nil {
		for _, g := range groups {
			if s, ok := g.(string); ok {
				c.Groups = append(c.Groups, s)
			}
		}
	}
	return c, nil
}

// stringClaim returns a string claim ("sub" and the other registered names included), "" when it is
// missing or not a string.
func stringClaim(tok jwt.Token, name string) string {
	var s string
	if err := tok.Get(name, &s); err != nil {
		return ""
	}
	return s
}

// keyTypeFor is the JWK "kty" an algorithm's key must have.
func keyTypeFor(alg jwa.SignatureAlgorithm) jwa.KeyType {
	if strings.HasPrefix(alg.String(), "ES") {
		return jwa.EC()
	}
	return jwa.RSA()
}
