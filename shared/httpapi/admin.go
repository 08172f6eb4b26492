package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/rag"
)

// Admin is the relational store as the identity endpoints use it.
type Admin interface {
	ListUsers(ctx context.Context, tenant string) ([]rag.User, error)
	CreateUser(ctx context.Context, u *rag.User) error
	GetUser(ctx context.Context, tenant, id string) (rag.User, error)
	GetUserByEmail(ctx context.Context, tenant, email string) (rag.User, error)
	CreateAPIKey(ctx context.Context, k *rag.APIKey) error
	ListAPIKeys(ctx context.Context, tenant, user string) ([]rag.APIKey, error)
	RevokeAPIKey(ctx context.Context, tenant, id string) (bool, error)
	SetUserRole(ctx context.Context, tenant, id, role string) error
	DeleteUser(ctx context.Context, tenant, id string) (int, error)
	SetMember(ctx context.Context, tenant, kbID, userID string, role rag.KBRole) error
	GetMember(ctx context.Context, tenant, kbID, userID string) (rag.Member, error)
	RemoveMember(ctx context.Context, tenant, kbID, userID string) error
	ListMembers(ctx context.Context, tenant, kbID string) ([]rag.Member, error)
	ListAudit(ctx context.Context, tenant string, limit int) ([]rag.AuditEntry, error)
}

// Auditor records who did what (the audit_log table).
type Auditor interface {
	AppendAudit(ctx context.Context, e *rag.AuditEntry) error
}

// audit records an action of the caller. The action has happened: a failed audit write is logged, not
// returned (the client must not retry a deletion that succeeded).
func (h *handler) audit(ctx context.Context, p rag.Principal, action, target, detail string) {
	if h.d.Audit == nil {
		return
	}
	e := rag.AuditEntry{Tenant: p.Tenant, Actor: p.Actor(), Action: action, Target: target, Detail: detail}
	if err := h.d.Audit.AppendAudit(context.WithoutCancel(ctx), &e); err != nil {
		h.d.Logger.Error("audit write failed", "action", action, "target", target, "err", err)
	}
}

// me is GET /api/me: who the caller is and how it was identified.
func (h *handler) me(w http.ResponseWriter, r *http.Request) {
	p, ok := h.principal(w, r)
	if !ok {
		return
	}
	mode := h.d.AuthMode
	if mode == "" {
		mode = "none"
	}
	WriteJSON(w, http.StatusOK, map[string]string{"tenant": p.Tenant, "user": p.UserID, "email": p.Email, "role": p.Role,
		"auth": mode, "method": p.Method})
}

type admin struct {
	store Admin
	lib   Library
	h     *handler
}

func (a *admin) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/users", a.listUsers)
	mux.HandleFunc("POST /api/users", a.createUser)
	mux.HandleFunc("PATCH /api/users/{id}", a.setUserRole)
	mux.HandleFunc("DELETE /api/users/{id}", a.deleteUser)
	mux.HandleFunc("GET /api/keys", a.listKeys)
	mux.HandleFunc("POST /api/keys", a.createKey)
	mux.HandleFunc("DELETE /api/keys/{id}", a.revokeKey)
	mux.HandleFunc("GET /api/audit", a.listAudit)
	if a.lib != nil {
		mux.HandleFunc("GET /api/kbs/{kb}/members", a.listMembers)
		mux.HandleFunc("PUT /api/kbs/{kb}/members", a.setMember)
		mux.HandleFunc("DELETE /api/kbs/{kb}/members/{user}", a.removeMember)
	}
}

func (a *admin) fail(w http.ResponseWriter, r *http.Request, err error) {
	WriteError(w, r, a.h.d.Logger, err)
}

// tenantAdmin returns the caller when it is an admin of its tenant; otherwise writes 403.
func (a *admin) tenantAdmin(w http.ResponseWriter, r *http.Request) (rag.Principal, bool) {
	p, ok := a.h.principal(w, r)
	if !ok {
		return p, false
	}
	if !p.IsAdmin() {
		a.fail(w, r, rag.Errorf("httpapi", rag.KindPermission, "only a tenant admin may do this"))
		return p, false
	}
	return p, true
}

func (a *admin) listUsers(w http.ResponseWriter, r *http.Request) {
	p, ok := a.tenantAdmin(w, r)
	if !ok {
		return
	}
	users, err := a.store.ListUsers(r.Context(), p.Tenant)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"users": users})
}

func (a *admin) createUser(w http.ResponseWriter, r *http.Request) {
	p, ok := a.tenantAdmin(w, r)
	if !ok {
		return
	}
	var in struct {
		Email string `json:"email"`
		Name  string `json:"name"`
		Role  string `json:"role"`
	}
	if err := decodeBody(w, r, &in, `{"email": ..., "role": "admin|member"}`); err != nil {
		a.fail(w, r, err)
		return
	}
	u := rag.User{Tenant: p.Tenant, Email: in.Email, Name: in.Name, Role: in.Role}
	if err := a.store.CreateUser(r.Context(), &u); err != nil {
		if rag.Is(err, rag.KindConflict) {
			err = rag.Errorf("httpapi", rag.KindConflict, "a user with this email exists")
		}
		a.fail(w, r, err)
		return
	}
	a.h.audit(r.Context(), p, "user.create", u.ID, u.Email+" "+u.Role)
	WriteJSON(w, http.StatusCreated, u)
}

// setUserRole is PATCH /api/users/{id} (id or email), body {"role": "admin|member"}: admins promote or
// demote a user of their tenant. An admin cannot demote themselves (another admin must), so a tenant is
// never left without the admin who could undo it by a slip.
func (a *admin) setUserRole(w http.ResponseWriter, r *http.Request) {
	p, ok := a.tenantAdmin(w, r)
	if !ok {
		return
	}
	var in struct {
		Role string `json:"role"`
	}
	if err := decodeBody(w, r, &in, `{"role": "admin|member"}`); err != nil {
		a.fail(w, r, err)
		return
	}
	u, err := a.user(r.Context(), p.Tenant, r.PathValue("id"))
	if err == nil && u.ID == p.UserID && in.Role != rag.RoleAdmin {
		err = rag.Errorf("httpapi", rag.KindConflict, "you cannot demote yourself; ask another admin (or docmind user set-role)")
	}
	if err == nil {
		err = a.store.SetUserRole(r.Context(), p.Tenant, u.ID, in.Role)
	}
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.h.audit(r.Context(), p, "user.set_role", u.ID, u.Email+" "+u.Role+" -> "+in.Role)
	u.Role = in.Role
	WriteJSON(w, http.StatusOK, u)
}

// deleteUser is DELETE /api/users/{id} (id or email): the user's keys are revoked and their knowledge-base
// roles removed at once. An admin cannot delete themselves.
func (a *admin) deleteUser(w http.ResponseWriter, r *http.Request) {
	p, ok := a.tenantAdmin(w, r)
	if !ok {
		return
	}
	u, err := a.user(r.Context(), p.Tenant, r.PathValue("id"))
	if err == nil && u.ID == p.UserID {
		err = rag.Errorf("httpapi", rag.KindConflict, "you cannot delete yourself; ask another admin (or docmind user delete)")
	}
	var revoked int
	if err == nil {
		revoked, err = a.store.DeleteUser(r.Context(), p.Tenant, u.ID)
	}
	if err != nil {
		a.fail(w, r, notFoundAs(err, "no user %q", r.PathValue("id")))
		return
	}
	a.h.audit(r.Context(), p, "user.delete", u.ID, fmt.Sprintf("%s, %d keys revoked", u.Email, revoked))
	w.WriteHeader(http.StatusNoContent)
}

// listKeys lists the caller's own keys, or with ?all=1 every key of the tenant (admins).
func (a *admin) listKeys(w http.ResponseWriter, r *http.Request) {
	p, ok := a.h.principal(w, r)
	if !ok {
		return
	}
	user := p.UserID
	if r.URL.Query().Get("all") == "1" {
		if !p.IsAdmin() {
			a.fail(w, r, rag.Errorf("httpapi", rag.KindPermission, "only a tenant admin may list every key"))
			return
		}
		user = ""
	}
	keys, err := a.store.ListAPIKeys(r.Context(), p.Tenant, user)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	emails, err := a.emails(r.Context(), p, user)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := make([]listedKey, len(keys))
	for i, k := range keys {
		out[i] = listedKey{APIKey: k, Email: emails[k.UserID]}
	}
	WriteJSON(w, http.StatusOK, map[string][]listedKey{"keys": out})
}

// listedKey is a key as GET /api/keys lists it: with its user's email, as `docmind key list` prints it
// (empty for a deleted user).
type listedKey struct {
	rag.APIKey
	Email string `json:"email,omitempty"`
}

// emails maps user ids to emails for a key listing: the caller's own when user is the caller, every
// user of the tenant when it is empty (an admin's ?all=1).
func (a *admin) emails(ctx context.Context, p rag.Principal, user string) (map[string]string, error) {
	if user != "" {
		return map[string]string{p.UserID: p.Email}, nil
	}
	users, err := a.store.ListUsers(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(users))
	for _, u := range users {
		out[u.ID] = u.Email
	}
	return out, nil
}

// createKey makes a key for the caller, or (admins) for another user of the tenant named by email. The
// key is in this response only.
func (a *admin) createKey(w http.ResponseWriter, r *http.Request) {
	p, ok := a.h.principal(w, r)
	if !ok {
		return
	}
	var in struct {
		Name string `json:"name"`
		User string `json:"user"` // email; empty: the caller
	}
	if err := decodeBody(w, r, &in, `{"name": ..., "user": "email (admins)"}`); err != nil {
		a.fail(w, r, err)
		return
	}
	if p.Method == "key" && !p.IsAdmin() {
		// a key must not mint keys: a leaked key would outlive its own revocation
		a.fail(w, r, rag.Errorf("httpapi", rag.KindPermission, "create keys signed in with a token, or ask an admin (docmind key create)"))
		return
	}
	owner := p.UserID
	if in.User != "" && !strings.EqualFold(in.User, p.Email) {
		if !p.IsAdmin() {
			a.fail(w, r, rag.Errorf("httpapi", rag.KindPermission, "only a tenant admin may create keys for others"))
			return
		}
		u, err := a.store.GetUserByEmail(r.Context(), p.Tenant, in.User)
		if err != nil {
			a.fail(w, r, notFoundAs(err, "no user %q", in.User))
			return
		}
		owner = u.ID
	}
	out, err := CreateKey(r.Context(), a.store, p.Tenant, owner, in.Name)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.h.audit(r.Context(), p, "key.create", out.ID, "for "+owner+" prefix "+out.Prefix)
	WriteJSON(w, http.StatusCreated, out)
}

// NewKey is a created API key as shown once: the plaintext key is in no other response.
type NewKey struct {
	ID     string `json:"id"`
	Key    string `json:"key"`
	Prefix string `json:"prefix"`
	Tenant string `json:"tenant"`
	User   string `json:"user"`
	Name   string `json:"name,omitempty"`
}

// KeyCreator stores API keys.
type KeyCreator interface {
	CreateAPIKey(ctx context.Context, k *rag.APIKey) error
}

// CreateKey generates a key for a user of the tenant and stores its hash (the CLI's `docmind key create`
// and POST /api/keys share it).
func CreateKey(ctx context.Context, store KeyCreator, tenant, userID, name string) (NewKey, error) {
	plain, prefix, hash, err := auth.NewAPIKey()
	if err != nil {
		return NewKey{}, rag.E("httpapi.CreateKey", rag.KindInternal, err)
	}
	k := rag.APIKey{Tenant: tenant, UserID: userID, Hash: hash, Prefix: prefix, Name: name}
	if err := store.CreateAPIKey(ctx, &k); err != nil {
		return NewKey{}, err
	}
	return NewKey{ID: k.ID, Key: plain, Prefix: prefix, Tenant: tenant, User: userID, Name: name}, nil
}

// revokeKey revokes one of the caller's keys, or any key of the tenant (admins). Another user's key is
// NotFound for a non-admin; a key already revoked is 409 Conflict, as `docmind key revoke` refuses it
// (the first revocation is the one in the audit log).
func (a *admin) revokeKey(w http.ResponseWriter, r *http.Request) {
	p, ok := a.h.principal(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if !p.IsAdmin() {
		keys, err := a.store.ListAPIKeys(r.Context(), p.Tenant, p.UserID)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		mine := false
		for _, k := range keys {
			mine = mine || k.ID == id
		}
		if !mine {
			a.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "no key %q", id))
			return
		}
	}
	changed, err := a.store.RevokeAPIKey(r.Context(), p.Tenant, id)
	if err != nil {
		a.fail(w, r, notFoundAs(err, "no key %q", id))
		return
	}
	if !changed {
		a.fail(w, r, rag.Errorf("httpapi", rag.KindConflict, "key %s was already revoked", id))
		return
	}
	a.h.audit(r.Context(), p, "key.revoke", id, "")
	w.WriteHeader(http.StatusNoContent)
}

func (a *admin) listAudit(w http.ResponseWriter, r *http.Request) {
	p, ok := a.tenantAdmin(w, r)
	if !ok {
		return
	}
	list, err := a.store.ListAudit(r.Context(), p.Tenant, 500)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"entries": list})
}

// ownedKB resolves {kb} and requires the owner role.
func (a *admin) ownedKB(w http.ResponseWriter, r *http.Request) (rag.Principal, rag.KnowledgeBase, bool) {
	l := &library{lib: a.lib, h: a.h}
	return l.kbAccess(w, r, rag.KBOwner)
}

func (a *admin) listMembers(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := a.ownedKB(w, r)
	if !ok {
		return
	}
	list, err := a.store.ListMembers(r.Context(), p.Tenant, kb.ID)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"members": list})
}

// setMember grants a role: body {"user": email or user id, "role": "reader|editor|owner"}.
func (a *admin) setMember(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := a.ownedKB(w, r)
	if !ok {
		return
	}
	var in struct {
		User string `json:"user"`
		Role string `json:"role"`
	}
	if err := decodeBody(w, r, &in, `{"user": "email or id", "role": "reader|editor|owner"}`); err != nil {
		a.fail(w, r, err)
		return
	}
	role, okRole := rag.ParseKBRole(in.Role)
	if !okRole {
		a.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "role must be reader, editor or owner"))
		return
	}
	u, err := a.user(r.Context(), p.Tenant, in.User)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.store.SetMember(r.Context(), p.Tenant, kb.ID, u.ID, role); err != nil {
		a.fail(w, r, err)
		return
	}
	a.h.audit(r.Context(), p, "kb.grant", kb.ID, u.ID+" "+role.String())
	m, err := a.store.GetMember(r.Context(), p.Tenant, kb.ID, u.ID)
	if err != nil { // the grant happened; answer with what is known rather than fail it
		m = rag.Member{KBID: kb.ID, UserID: u.ID, Email: u.Email, Role: role.String()}
	}
	WriteJSON(w, http.StatusOK, m)
}

func (a *admin) removeMember(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := a.ownedKB(w, r)
	if !ok {
		return
	}
	u, err := a.user(r.Context(), p.Tenant, r.PathValue("user"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if err := a.store.RemoveMember(r.Context(), p.Tenant, kb.ID, u.ID); err != nil {
		a.fail(w, r, notFoundAs(err, "%s has no role on this knowledge base", u.Email))
		return
	}
	a.h.audit(r.Context(), p, "kb.revoke", kb.ID, u.ID)
	w.WriteHeader(http.StatusNoContent)
}

// user finds a user of the tenant by email or id.
func (a *admin) user(ctx context.Context, tenant, key string) (rag.User, error) {
	var u rag.User
	var err error
	if strings.Contains(key, "@") {
		u, err = a.store.GetUserByEmail(ctx, tenant, key)
	} else {
		u, err = a.store.GetUser(ctx, tenant, key)
	}
	return u, notFoundAs(err, "no user %q", key)
}

// notFoundAs rewrites NotFound and Invalid (a malformed id names nothing) as a NotFound with this message.
func notFoundAs(err error, format string, args ...any) error {
	if rag.Is(err, rag.KindNotFound) || rag.Is(err, rag.KindInvalid) {
		return rag.Errorf("httpapi", rag.KindNotFound, format, args...)
	}
	return err
}
