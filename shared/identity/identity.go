// Package identity turns a request's credential into a rag.Principal and answers what that principal may
// do with each knowledge base. It owns the rules of issue 10: modes (none, keys, jwt or both), API keys
// looked up by their SHA-256, JWTs verified by shared/auth with the user provisioned on first sign-in, and
// knowledge-base roles (a tenant admin owns every knowledge base of the tenant). It never trusts a tenant
// or user named in a request body: the principal comes from the credential alone (SR-01).
package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/rag"
)

// Mode says which credentials are accepted. The zero Mode is "none": no credential, one local principal.
type Mode struct {
	Keys bool
	JWT  bool
}

// None reports the local single-user mode.
func (m Mode) None() bool { return !m.Keys && !m.JWT }

func (m Mode) String() string {
	switch {
	case m.Keys && m.JWT:
		return "keys,jwt"
	case m.Keys:
		return "keys"
	case m.JWT:
		return "jwt"
	}
	return "none"
}

// ParseMode parses DOCMIND_AUTH: "none", "keys", "jwt" or "keys,jwt" (either order, spaces ignored).
func ParseMode(s string) (Mode, error) {
	var m Mode
	s = strings.TrimSpace(s)
	if s == "" || s == "none" {
		return m, nil
	}
	for _, p := range strings.Split(s, ",") {
		switch strings.TrimSpace(p) {
		case "keys":
			m.Keys = true
		case "jwt":
			m.JWT = true
		default:
			return Mode{}, fmt.Errorf("auth mode %q: want none, keys, jwt or keys,jwt", s)
		}
	}
	return m, nil
}

// Store is the relational store as authentication uses it (sqldb.DB).
type Store interface {
	LookupAPIKey(ctx context.Context, hash string) (rag.APIKey, rag.User, error)
	TouchAPIKey(ctx context.Context, tenant, id string) error
	GetUserBySubject(ctx context.Context, tenant, subject string) (rag.User, error)
	GetUserByEmail(ctx context.Context, tenant, email string) (rag.User, error)
	SetUserSubject(ctx context.Context, tenant, id, subject string) error
	CreateUser(ctx context.Context, u *rag.User) error
	SetUserRole(ctx context.Context, tenant, id, role string) error
	// AppendAudit records a tenant role the identity provider's groups changed (who, what, when).
	AppendAudit(ctx context.Context, e *rag.AuditEntry) error
}

// Verifier checks a JWT (auth.JWTVerifier).
type Verifier interface {
	Verify(ctx context.Context, token string) (auth.Claims, error)
}

// Authenticator identifies callers.
type Authenticator struct {
	Mode  Mode
	Store Store    // needed with any mode but none
	JWT   Verifier // needed with Mode.JWT
	// AdminGroup, when set, makes the identity provider decide who is a tenant admin: a JWT whose groups
	// claim holds it (for example a Cognito group) signs in as admin, and one without it as a member, even
	// if SQL said admin (someone removed from the group must not stay admin). The SQL role is updated to
	// match at sign-in (and audited as user.set_role). A key of a user who signs in by token never carries
	// admin: the group is the only source of that role, and someone removed from it who then uses only
	// keys would otherwise keep the admin role SQL last recorded, since no sign-in comes to update it.
	// Admins who work with keys are users without a subject (created by `docmind user create`, never
	// signed in by token). Unset: the role in SQL decides (docmind user set-role, PATCH /api/users/{id}).
	AdminGroup string
	// Local is the principal of every request in mode none.
	Local rag.Principal
	Log   *slog.Logger

	// touched is when this process last recorded each key's use (key id -> time.Time): the store keeps
	// last_used_at to the minute, and asking it on every request made a burst of one key's requests queue
	// on SQLite's write lock (an UPDATE takes it even when it changes no row).
	touched sync.Map
}

// touchEvery is how often one process records a key's use; the store's own bound is the same minute.
const touchEvery = time.Minute

// Local returns the principal of the local single-user mode: the configured tenant, user "local", admin.
func Local(tenant string) rag.Principal {
	return rag.Principal{Tenant: tenant, UserID: "local", Role: rag.RoleAdmin, Method: "none"}
}

func unauthenticated(format string, args ...any) error {
	return rag.Errorf("identity", rag.KindUnauthenticated, format, args...)
}

// Authenticate returns the principal for an Authorization header value. Errors: Unauthenticated (no,
// malformed, unknown, revoked or invalid credential: the message says which, never echoing the
// credential), Unavailable (the store or the identity provider is down).
func (a *Authenticator) Authenticate(ctx context.Context, authorization string) (rag.Principal, error) {
	if a.Mode.None() {
		return a.Local, nil
	}
	token, ok := auth.BearerToken(authorization)
	if !ok {
		return rag.Principal{}, unauthenticated("send Authorization: Bearer <API key or token>")
	}
	if auth.LooksLikeAPIKey(token) {
		if !a.Mode.Keys {
			return rag.Principal{}, unauthenticated("API keys are not accepted here; sign in with a token")
		}
		return a.byKey(ctx, token)
	}
	if !a.Mode.JWT {
		return rag.Principal{}, unauthenticated("the credential is not an API key")
	}
	return a.byJWT(ctx, token)
}

func (a *Authenticator) byKey(ctx context.Context, key string) (rag.Principal, error) {
	k, u, err := a.Store.LookupAPIKey(ctx, auth.HashAPIKey(key))
	if err != nil {
		if rag.Is(err, rag.KindNotFound) || rag.Is(err, rag.KindInvalid) {
			return rag.Principal{}, unauthenticated("unknown or revoked API key")
		}
		return rag.Principal{}, err
	}
	if last, ok := a.touched.Load(k.ID); !ok || time.Since(last.(time.Time)) >= touchEvery {
		a.touched.Store(k.ID, time.Now())
		if err := a.Store.TouchAPIKey(ctx, k.Tenant, k.ID); err != nil && a.Log != nil {
			a.Log.Warn("recording an API key's use failed", "key", k.ID, "err", err)
		}
	}
	return rag.Principal{Tenant: u.Tenant, UserID: u.ID, Email: u.Email, Role: a.keyRole(u), Method: "key", KeyID: k.ID}, nil
}

// keyRole is the tenant role a user's API key carries: SQL's, except that with AdminGroup set a user who
// signs in by token (a subject is linked) is at most a member through a key; see AdminGroup.
func (a *Authenticator) keyRole(u rag.User) string {
	if a.AdminGroup != "" && u.Subject != "" && u.Role == rag.RoleAdmin {
		return rag.RoleMember
	}
	return u.Role
}

func (a *Authenticator) byJWT(ctx context.Context, token string) (rag.Principal, error) {
	c, err := a.JWT.Verify(ctx, token)
	if err != nil {
		if rag.Is(err, rag.KindUnavailable) {
			return rag.Principal{}, err
		}
		return rag.Principal{}, rag.E("identity", rag.KindUnauthenticated, err)
	}
	if err := rag.ValidateID("tenant", c.Tenant); err != nil {
		return rag.Principal{}, unauthenticated("the token's tenant claim is not a valid tenant id")
	}
	u, err := a.provision(ctx, c)
	if err != nil {
		return rag.Principal{}, err
	}
	role, err := a.groupRole(ctx, u, c)
	if err != nil {
		return rag.Principal{}, err
	}
	// the groups come from the verified token on every request: someone removed from a group at the
	// identity provider loses what it granted with the token's expiry, never later
	return rag.Principal{Tenant: u.Tenant, UserID: u.ID, Email: u.Email, Role: role, Method: "jwt", Groups: slices.Clone(c.Groups)}, nil
}

// groupRole is the tenant role of a JWT sign-in: with AdminGroup configured the token's groups decide and
// SQL is brought in line (one write when the group membership changed); otherwise SQL's role stands.
func (a *Authenticator) groupRole(ctx context.Context, u rag.User, c auth.Claims) (string, error) {
	if a.AdminGroup == "" {
		return u.Role, nil
	}
	role := rag.RoleMember
	if slices.Contains(c.Groups, a.AdminGroup) {
		role = rag.RoleAdmin
	}
	if role != u.Role {
		if err := a.Store.SetUserRole(ctx, u.Tenant, u.ID, role); err != nil {
			// a demotion that cannot be recorded must not leave the caller admin through its keys
			return "", err
		}
		if a.Log != nil {
			a.Log.Info("tenant role follows the token's groups", "tenant", u.Tenant, "user", u.ID, "from", u.Role, "to", role)
		}
		// the audit log is where an admin looks for who became admin and when; a failed write is logged,
		// not fatal: the role change itself is already recorded and must hold
		e := &rag.AuditEntry{Tenant: u.Tenant, Actor: "idp:" + a.AdminGroup, Action: "user.set_role", Target: u.ID,
			Detail: u.Email + " " + u.Role + " -> " + role + " (token groups)"}
		if err := a.Store.AppendAudit(context.WithoutCancel(ctx), e); err != nil && a.Log != nil {
			a.Log.Warn("auditing a role change failed", "tenant", u.Tenant, "user", u.ID, "err", err)
		}
	}
	return role, nil
}

// provision finds the user who signs in with this subject, else the user created with this email (an
// admin may create users before their first sign-in, to grant them knowledge bases), linking the
// subject; else creates a member. Only a verified email (email_verified) may link to an existing user:
// anyone can register an unverified address at an identity provider, and linking by it would hand them
// that user's knowledge bases.
func (a *Authenticator) provision(ctx context.Context, c auth.Claims) (rag.User, error) {
	u, err := a.Store.GetUserBySubject(ctx, c.Tenant, c.Subject)
	if err == nil || !rag.Is(err, rag.KindNotFound) {
		return u, err
	}
	email := c.Email
	if email == "" || !c.EmailVerified {
		// A token without a verified email still names a user; a synthetic address keeps the users
		// table's (tenant, email) key unique without claiming a real one.
		sum := sha256.Sum256([]byte(c.Subject))
		email = "sub-" + hex.EncodeToString(sum[:16]) + "@subject.invalid"
	}
	if u, err := a.Store.GetUserByEmail(ctx, c.Tenant, email); err == nil {
		if u.Subject != "" && u.Subject != c.Subject {
			return rag.User{}, unauthenticated("this email belongs to another signed-in user")
		}
		if err := a.Store.SetUserSubject(ctx, c.Tenant, u.ID, c.Subject); err != nil {
			if rag.Is(err, rag.KindConflict) { // another identity linked it first
				return rag.User{}, unauthenticated("this email belongs to another signed-in user")
			}
			return rag.User{}, err
		}
		u.Subject = c.Subject
		return u, nil
	} else if !rag.Is(err, rag.KindNotFound) {
		if rag.Is(err, rag.KindInvalid) {
			return rag.User{}, unauthenticated("the token's email claim is not an email address")
		}
		return rag.User{}, err
	}
	u = rag.User{Tenant: c.Tenant, Email: email, Subject: c.Subject, Role: rag.RoleMember}
	if err := a.Store.CreateUser(ctx, &u); err != nil {
		if rag.Is(err, rag.KindConflict) { // a concurrent first sign-in created it
			return a.Store.GetUserBySubject(ctx, c.Tenant, c.Subject)
		}
		return rag.User{}, err
	}
	return u, nil
}
