package identity

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/rag"
)

// fakeStore is the relational store in memory: users by id, keys by hash.
type fakeStore struct {
	users   map[string]rag.User
	keys    map[string]rag.APIKey
	touched int
	down    bool
	audit   []rag.AuditEntry
}

func (f *fakeStore) AppendAudit(_ context.Context, e *rag.AuditEntry) error {
	f.audit = append(f.audit, *e)
	return nil
}

func newFakeStore() *fakeStore {
	return &fakeStore{users: map[string]rag.User{}, keys: map[string]rag.APIKey{}}
}

func (f *fakeStore) LookupAPIKey(_ context.Context, hash string) (rag.APIKey, rag.User, error) {
	if f.down {
		return rag.APIKey{}, rag.User{}, rag.E("fake", rag.KindUnavailable, nil)
	}
	k, ok := f.keys[hash]
	if !ok || !k.RevokedAt.IsZero() {
		return rag.APIKey{}, rag.User{}, rag.E("fake", rag.KindNotFound, nil)
	}
	return k, f.users[k.UserID], nil
}

func (f *fakeStore) TouchAPIKey(context.Context, string, string) error { f.touched++; return nil }

func (f *fakeStore) find(match func(rag.User) bool) (rag.User, error) {
	for _, u := range f.users {
		if match(u) {
			return u, nil
		}
	}
	return rag.User{}, rag.E("fake", rag.KindNotFound, nil)
}

func (f *fakeStore) GetUserBySubject(_ context.Context, tenant, subject string) (rag.User, error) {
	return f.find(func(u rag.User) bool { return u.Tenant == tenant && u.Subject == subject })
}

func (f *fakeStore) GetUserByEmail(_ context.Context, tenant, email string) (rag.User, error) {
	return f.find(func(u rag.User) bool { return u.Tenant == tenant && u.Email == strings.ToLower(email) })
}

func (f *fakeStore) SetUserSubject(_ context.Context, tenant, id, subject string) error {
	u, ok := f.users[id]
	if !ok || u.Tenant != tenant {
		return rag.E("fake", rag.KindNotFound, nil)
	}
	u.Subject = subject
	f.users[id] = u
	return nil
}

func (f *fakeStore) CreateUser(_ context.Context, u *rag.User) error {
	if _, err := f.GetUserByEmail(context.Background(), u.Tenant, u.Email); err == nil {
		return rag.E("fake", rag.KindConflict, nil)
	}
	u.ID = rag.NewID("usr")
	f.users[u.ID] = *u
	return nil
}

func (f *fakeStore) SetUserRole(_ context.Context, tenant, id, role string) error {
	u, ok := f.users[id]
	if !ok || u.Tenant != tenant {
		return rag.E("fake", rag.KindNotFound, nil)
	}
	u.Role = role
	f.users[id] = u
	return nil
}

// fakeVerifier accepts tokens by name.
type fakeVerifier map[string]auth.Claims

func (v fakeVerifier) Verify(_ context.Context, token string) (auth.Claims, error) {
	c, ok := v[token]
	if !ok {
		return auth.Claims{}, rag.E("auth.Verify", rag.KindPermission, errors.New("bad signature"))
	}
	return c, nil
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]string{"": "none", "none": "none", "keys": "keys", "jwt": "jwt", "keys,jwt": "keys,jwt", "jwt, keys": "keys,jwt"} {
		m, err := ParseMode(in)
		if err != nil || m.String() != want {
			t.Errorf("ParseMode(%q) = %v, %v; want %s", in, m, err, want)
		}
	}
	for _, bad := range []string{"key", "oauth", "keys,", "none,keys"} {
		if _, err := ParseMode(bad); err == nil {
			t.Errorf("ParseMode(%q) accepted", bad)
		}
	}
}

func TestAuthenticateKeys(t *testing.T) {
	st := newFakeStore()
	st.users["usr_a"] = rag.User{ID: "usr_a", Tenant: "t1", Email: "a@x.io", Role: rag.RoleAdmin}
	key, _, hash, err := auth.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	st.keys[hash] = rag.APIKey{ID: "key_1", Tenant: "t1", UserID: "usr_a", Hash: hash}
	a := &Authenticator{Mode: Mode{Keys: true}, Store: st}
	p, err := a.Authenticate(t.Context(), "bearer "+key)
	if err != nil || p.Tenant != "t1" || p.UserID != "usr_a" || !p.IsAdmin() || p.Method != "key" || p.KeyID != "key_1" || st.touched != 1 {
		t.Fatalf("a valid key = %+v, %v (touched %d)", p, err, st.touched)
	}
	if _, err := a.Authenticate(t.Context(), "Bearer "+key); err != nil || st.touched != 1 {
		t.Fatalf("a second use within the minute: %v, touched %d times; want 1 (last_used_at is kept to the minute)", err, st.touched)
	}
	for name, h := range map[string]string{"no header": "", "basic": "Basic abc", "empty bearer": "Bearer ", "unknown key": "Bearer dm_" + strings.Repeat("x", 43),
		"a JWT in keys mode": "Bearer eyJhbGciOi.x.y"} {
		if _, err := a.Authenticate(t.Context(), h); !rag.Is(err, rag.KindUnauthenticated) {
			t.Errorf("%s: %v; want Unauthenticated", name, err)
		}
	}
	st.down = true
	if _, err := a.Authenticate(t.Context(), "Bearer "+key); !rag.Is(err, rag.KindUnavailable) {
		t.Errorf("store down: %v; want Unavailable (503, not 401)", err)
	}
}

func TestAuthenticateNoneIgnoresCredentials(t *testing.T) {
	a := &Authenticator{Local: Local("acme")}
	p, err := a.Authenticate(t.Context(), "Bearer whatever")
	if err != nil || p.Tenant != "acme" || p.UserID != "local" || !p.IsAdmin() || p.Method != "none" {
		t.Fatalf("mode none = %+v, %v", p, err)
	}
}

func TestJWTProvisioning(t *testing.T) {
	st := newFakeStore()
	// an admin created before her first sign-in, by email
	st.users["usr_ann"] = rag.User{ID: "usr_ann", Tenant: "t1", Email: "ann@x.io", Role: rag.RoleAdmin}
	v := fakeVerifier{
		"ann":       {Tenant: "t1", Subject: "sub-ann", Email: "ann@x.io", EmailVerified: true, Groups: []string{"docmind-admins"}},
		"ann-again": {Tenant: "t1", Subject: "sub-ann", Email: "ann@x.io", EmailVerified: true, Groups: []string{"docmind-admins"}},
		"ann-left":  {Tenant: "t1", Subject: "sub-ann", Email: "ann@x.io", EmailVerified: true}, // removed from the group
		"squatter":  {Tenant: "t1", Subject: "sub-eve", Email: "ann@x.io"},                      // unverified
		"other-sub": {Tenant: "t1", Subject: "sub-zed", Email: "ann@x.io", EmailVerified: true},
		"new":       {Tenant: "t1", Subject: "sub-new", Email: "new@x.io", EmailVerified: true},
		"bad-tenat": {Tenant: "t1' OR 1=1", Subject: "s", Email: "x@x.io", EmailVerified: true},
		"grouped":   {Tenant: "t1", Subject: "sub-g", Groups: []string{"docmind-admins"}},
	}
	a := &Authenticator{Mode: Mode{JWT: true}, Store: st, JWT: v, AdminGroup: "docmind-admins"}
	signIn := func(tok string) (rag.Principal, error) { return a.Authenticate(t.Context(), "Bearer "+tok) }

	p, err := signIn("ann")
	if err != nil || p.UserID != "usr_ann" || !p.IsAdmin() || p.Method != "jwt" || st.users["usr_ann"].Subject != "sub-ann" {
		t.Fatalf("verified email links to the pre-created user: %+v, %v", p, err)
	}
	if p, err := signIn("ann-again"); err != nil || p.UserID != "usr_ann" {
		t.Fatalf("second sign-in by subject: %+v, %v", p, err)
	}
	// removed from the admin group: a member from her next sign-in, and in SQL, so her keys follow
	if p, err := signIn("ann-left"); err != nil || p.UserID != "usr_ann" || p.IsAdmin() || st.users["usr_ann"].Role != rag.RoleMember {
		t.Fatalf("a sign-in without the admin group: %+v, %v, SQL role %q; want member in both", p, err, st.users["usr_ann"].Role)
	}
	if p, err := signIn("ann-again"); err != nil || !p.IsAdmin() || st.users["usr_ann"].Role != rag.RoleAdmin {
		t.Fatalf("back in the group: %+v, %v, SQL role %q; want admin in both", p, err, st.users["usr_ann"].Role)
	}
	// each change the groups made is in the audit log, not only in a log line: out, then back in
	var changes []string
	for _, e := range st.audit {
		if e.Action == "user.set_role" && e.Target == "usr_ann" {
			changes = append(changes, e.Detail)
		}
	}
	if want := []string{"ann@x.io admin -> member (token groups)", "ann@x.io member -> admin (token groups)"}; !slices.Equal(changes, want) {
		t.Fatalf("audited role changes %q, want %q", changes, want)
	}
	p, err = signIn("squatter")
	if err != nil || p.UserID == "usr_ann" || p.IsAdmin() || strings.Contains(p.Email, "ann@") {
		t.Fatalf("an unverified email must not become ann: %+v, %v", p, err)
	}
	if _, err := signIn("other-sub"); !rag.Is(err, rag.KindUnauthenticated) {
		t.Fatalf("another subject with ann's verified email: %v; want Unauthenticated", err)
	}
	if p, err := signIn("new"); err != nil || p.Email != "new@x.io" || p.IsAdmin() {
		t.Fatalf("a new user is provisioned as a member: %+v, %v", p, err)
	}
	if _, err := signIn("bad-tenat"); !rag.Is(err, rag.KindUnauthenticated) {
		t.Fatalf("a tenant claim that is not an id: %v; want Unauthenticated", err)
	}
	if p, err := signIn("grouped"); err != nil || !p.IsAdmin() {
		t.Fatalf("the admin group makes an admin: %+v, %v", p, err)
	}
	if _, err := signIn("forged"); !rag.Is(err, rag.KindUnauthenticated) {
		t.Fatalf("a token the verifier refuses: %v; want Unauthenticated", err)
	}
}

func TestRoles(t *testing.T) {
	kbs := []rag.KnowledgeBase{{ID: "kb_a"}, {ID: "kb_b"}, {ID: "kb_c"}}
	admin, err := RolesOf(t.Context(), nil, rag.Principal{Role: rag.RoleAdmin})
	if err != nil || !admin.All() || admin.Of("kb_x") != rag.KBOwner || len(admin.Readable(kbs)) != 3 {
		t.Fatalf("admin roles: %+v, %v", admin, err)
	}
	m := memberStore{"kb_a": rag.KBReader, "kb_c": rag.KBEditor}
	r, err := RolesOf(t.Context(), m, rag.Principal{Tenant: "t1", UserID: "usr_1", Role: rag.RoleMember})
	if err != nil || r.All() || r.Of("kb_b") != rag.KBNone || r.Of("kb_c") != rag.KBEditor {
		t.Fatalf("member roles: %+v, %v", r, err)
	}
	if got := r.Readable(kbs); len(got) != 2 || got[0].ID != "kb_a" || got[1].ID != "kb_c" {
		t.Fatalf("Readable = %+v; want kb_a, kb_c in order", got)
	}
}

type memberStore map[string]rag.KBRole

func (m memberStore) MemberRoles(context.Context, string, string) (map[string]rag.KBRole, error) {
	return m, nil
}

// With AdminGroup set the identity provider is the only source of the admin role: a key of a user who
// signs in by token is a member's key even while SQL still says admin (removed from the group, she may
// never sign in by token again to have SQL updated). A user without a subject (created for keys by the
// CLI) keeps SQL's role; without AdminGroup, SQL decides for everyone.
func TestKeysOfTokenUsersNeverCarryAdmin(t *testing.T) {
	st := newFakeStore()
	st.users["usr_tok"] = rag.User{ID: "usr_tok", Tenant: "t1", Email: "tok@x.io", Role: rag.RoleAdmin, Subject: "sub-tok"}
	st.users["usr_ops"] = rag.User{ID: "usr_ops", Tenant: "t1", Email: "ops@x.io", Role: rag.RoleAdmin}
	keys := map[string]string{}
	for _, id := range []string{"usr_tok", "usr_ops"} {
		key, _, hash, err := auth.NewAPIKey()
		if err != nil {
			t.Fatal(err)
		}
		st.keys[hash] = rag.APIKey{ID: "key_" + id, Tenant: "t1", UserID: id, Hash: hash}
		keys[id] = key
	}
	for _, c := range []struct {
		group, user string
		admin       bool
	}{
		{"docmind-admins", "usr_tok", false},
		{"docmind-admins", "usr_ops", true},
		{"", "usr_tok", true},
	} {
		a := &Authenticator{Mode: Mode{Keys: true, JWT: true}, Store: st, AdminGroup: c.group}
		p, err := a.Authenticate(t.Context(), "Bearer "+keys[c.user])
		if err != nil || p.UserID != c.user || p.IsAdmin() != c.admin {
			t.Errorf("AdminGroup %q, key of %s: %+v, %v; want admin %v", c.group, c.user, p, err, c.admin)
		}
	}
}

// A token's groups travel on the principal (per-document access lists name them); a key carries none.
func TestPrincipalCarriesTokenGroups(t *testing.T) {
	st := newFakeStore()
	v := fakeVerifier{"hr": {Tenant: "t1", Subject: "sub-hr", Email: "hr@x.io", EmailVerified: true, Groups: []string{"HR", "staff"}}}
	a := &Authenticator{Mode: Mode{JWT: true}, Store: st, JWT: v}
	p, err := a.Authenticate(t.Context(), "Bearer hr")
	if err != nil || !slices.Equal(p.Groups, []string{"HR", "staff"}) || p.Email != "hr@x.io" {
		t.Fatalf("principal %+v, %v; want the token's groups [HR staff]", p, err)
	}
}
