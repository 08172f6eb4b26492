package wire

import (
	"net/http"
	"time"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/identity"
	"github.com/docmind/docmind/shared/limits"
)

// Authenticator builds the identity check for cfg.Auth.Mode over the relational store: mode none gives
// every request the local principal (cfg.Tenant, user "local", admin). The JWKS is fetched on first use
// with its own client (the URL is the operator's configuration, not user input).
func Authenticator(cfg config.Config, store identity.Store) (*identity.Authenticator, error) {
	mode, err := identity.ParseMode(cfg.Auth.Mode)
	if err != nil {
		return nil, err
	}
	a := &identity.Authenticator{Mode: mode, Store: store, AdminGroup: cfg.Auth.AdminGroup, Local: identity.Local(cfg.Tenant)}
	if mode.JWT {
		v, err := auth.NewJWTVerifier(auth.JWTConfig{JWKSURL: cfg.Auth.JWKSURL, HS256Secret: []byte(cfg.Auth.HS256Secret),
			Issuer: cfg.Auth.Issuer, Audience: config.List(cfg.Auth.Audience), TenantClaim: cfg.Auth.TenantClaim,
			UserClaim: cfg.Auth.UserClaim, EmailClaim: cfg.Auth.EmailClaim,
			HTTPClient: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, TLSHandshakeTimeout: 5 * time.Second}}})
		if err != nil {
			return nil, err
		}
		a.JWT = v
	}
	return a, nil
}

// AccessMap is DOCMIND_ACCESS_MAP parsed (config.Validate refused a bad one): the principals of
// sources that do not name people by email, granted to docmind identities (shared/access).
func AccessMap(cfg config.Config) access.Map {
	m, _ := access.ParseMap(cfg.Auth.AccessMap)
	return m
}

// Limiter builds the per-user limits over the KV port; nil when none is configured.
func Limiter(cfg config.Config, kv limits.KV) *limits.Limiter {
	if cfg.Auth.RatePerMinute == 0 && cfg.Auth.DailyTokens == 0 {
		return nil
	}
	return limits.New(kv, limits.Config{PerMinute: cfg.Auth.RatePerMinute, Burst: cfg.Auth.RateBurst, DailyTokens: cfg.Auth.DailyTokens}, nil)
}
