package httpapi

import (
	"context"
	"net/http"

	"github.com/docmind/docmind/shared/identity"
	"github.com/docmind/docmind/shared/rag"
)

// Authenticator identifies the caller from the Authorization header (identity.Authenticator).
// Errors: Unauthenticated (401), Unavailable (503).
type Authenticator interface {
	Authenticate(ctx context.Context, authorization string) (rag.Principal, error)
}

// MemberRoles reads a user's knowledge-base roles (the relational store).
type MemberRoles interface {
	MemberRoles(ctx context.Context, tenant, userID string) (map[string]rag.KBRole, error)
}

type principalKey struct{}

// PrincipalFrom returns the principal the request was authenticated as.
func PrincipalFrom(ctx context.Context) (rag.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(rag.Principal)
	return p, ok
}

// authn authenticates every /api/ and /v1/ request before its handler runs; the page, its assets and
// /healthz stay public (they hold nothing private).
func (h *handler) authn(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !apiPath(r.URL.Path) || r.URL.Path == "/retrieval" { // /retrieval answers in its own error shape
			next.ServeHTTP(w, r)
			return
		}
		p, err := h.authenticate(r)
		if err != nil {
			if rag.Is(err, rag.KindUnauthenticated) {
				w.Header().Set("WWW-Authenticate", h.challenge(r))
				h.d.Logger.Info("request refused", "path", r.URL.Path, "reason", err.Error())
			}
			WriteError(w, r, h.d.Logger, err)
			return
		}
		ctx := context.WithValue(r.Context(), principalKey{}, p)
		ctx = context.WithValue(ctx, rolesKey{}, &rolesMemo{})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// authenticate asks the Authenticator, or (none configured) builds the local principal from the
// configured tenant and user functions.
func (h *handler) authenticate(r *http.Request) (rag.Principal, error) {
	if h.d.Auth != nil {
		return h.d.Auth.Authenticate(r.Context(), r.Header.Get("Authorization"))
	}
	if h.d.Tenant == nil {
		return rag.Principal{}, rag.Errorf("httpapi", rag.KindUnauthenticated, "no identity is configured")
	}
	tenant, err := h.d.Tenant(r)
	if err != nil {
		return rag.Principal{}, err
	}
	user, err := h.d.User(r)
	if err != nil {
		return rag.Principal{}, err
	}
	p := identity.Local(tenant)
	p.UserID = user
	return p, nil
}

// principal returns the caller, or writes 401 and returns false (a route outside /api and /v1 that
// needs one).
func (h *handler) principal(w http.ResponseWriter, r *http.Request) (rag.Principal, bool) {
	if p, ok := PrincipalFrom(r.Context()); ok {
		return p, true
	}
	p, err := h.authenticate(r)
	if err != nil {
		WriteError(w, r, h.d.Logger, err)
		return rag.Principal{}, false
	}
	return p, true
}

type rolesKey struct{}

// rolesMemo holds the caller's roles for the rest of one request: a question checks them while naming its
// knowledge bases and again once its conversation's are known, and that is one query, not several.
type rolesMemo struct {
	loaded bool
	who    rag.Principal
	roles  identity.Roles
}

// roles loads what the caller may do with each knowledge base, once per request. Without a member store
// every caller owns every knowledge base of its tenant (the local single-user mode).
func (h *handler) roles(ctx context.Context, p rag.Principal) (identity.Roles, error) {
	memo, _ := ctx.Value(rolesKey{}).(*rolesMemo)
	if memo != nil && memo.loaded && memo.who.Equal(p) {
		return memo.roles, nil
	}
	who := p
	if h.d.Members == nil {
		p.Role = rag.RoleAdmin
	}
	roles, err := identity.RolesOf(ctx, h.d.Members, p)
	if err == nil && memo != nil {
		memo.loaded, memo.who, memo.roles = true, who, roles
	}
	return roles, err
}

// requireKB checks the caller's role on a knowledge base of its tenant: no read access is NotFound (an id
// the caller may not see leaks nothing, not even that it exists); read access without the role needed is
// Permission.
func requireKB(roles identity.Roles, kb rag.KnowledgeBase, need rag.KBRole) error {
	have := roles.Of(kb.ID)
	switch {
	case have < rag.KBReader:
		// the same answer as a knowledge base that does not exist: neither its name nor its existence leaks
		return rag.E("httpapi", rag.KindNotFound, nil)
	case have < need:
		return rag.Errorf("httpapi", rag.KindPermission, "this needs the %s role on knowledge base %q; you are %s", need, kb.Name, have)
	}
	return nil
}
