package rag

import (
	"slices"
	"time"
)

// Principal is who a request acts for. It comes only from a verified credential (an API key found in the
// relational store, a JWT whose signature and claims were checked) or, in the local single-user mode, from
// the server's own configuration; never from a request body or query (SR-01).
type Principal struct {
	Tenant string `json:"tenant"`
	UserID string `json:"user"`
	Email  string `json:"email,omitempty"`
	// Role is the tenant-wide role: RoleAdmin (owner of every knowledge base of the tenant) or RoleMember.
	Role string `json:"role"`
	// Method is how the caller was identified: "none" (local mode), "key" or "jwt".
	Method string `json:"auth"`
	// KeyID is the API key used, for the audit log ("" for other methods).
	KeyID string `json:"key_id,omitempty"`
	// Groups are the verified token's groups (auth.Claims.Groups; none for a key or the local mode):
	// with Email they are whom per-document access lists name (shared/access).
	Groups []string `json:"groups,omitempty"`
}

// Equal reports the same principal, groups included (a Principal holds a slice: == does not compile).
func (p Principal) Equal(q Principal) bool {
	return p.Tenant == q.Tenant && p.UserID == q.UserID && p.Email == q.Email && p.Role == q.Role &&
		p.Method == q.Method && p.KeyID == q.KeyID && slices.Equal(p.Groups, q.Groups)
}

// Tenant-wide roles.
const (
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// IsAdmin reports a tenant administrator.
func (p Principal) IsAdmin() bool { return p.Role == RoleAdmin }

// Actor names the principal in the audit log: the user id, and the key id when a key was used.
func (p Principal) Actor() string {
	if p.KeyID != "" {
		return p.UserID + " (key " + p.KeyID + ")"
	}
	return p.UserID
}

// KBRole is a knowledge-base permission level; a higher level includes the lower ones.
type KBRole int

// Knowledge-base roles: a reader asks, searches and reads documents and chunks; an editor also uploads,
// re-processes and deletes documents; an owner also deletes the knowledge base and grants and revokes.
const (
	KBNone KBRole = iota
	KBReader
	KBEditor
	KBOwner
)

var kbRoleNames = [...]string{"", "reader", "editor", "owner"}

func (r KBRole) String() string {
	if r >= 0 && int(r) < len(kbRoleNames) {
		return kbRoleNames[r]
	}
	return ""
}

// ParseKBRole parses "reader", "editor" or "owner".
func ParseKBRole(s string) (KBRole, bool) {
	for i, n := range kbRoleNames {
		if i > 0 && n == s {
			return KBRole(i), true
		}
	}
	return KBNone, false
}

// User is a person (or service) of a tenant. Subject is the JWT `sub` that signed in as this user, when
// one has.
type User struct {
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Email     string    `json:"email"`
	Name      string    `json:"name,omitempty"`
	Role      string    `json:"role"`
	Subject   string    `json:"subject,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// APIKey is a stored API key: the key itself is shown once at creation and never stored, only its SHA-256
// (Hash, never serialised) and a short prefix for display.
type APIKey struct {
	ID         string    `json:"id"`
	Tenant     string    `json:"tenant"`
	UserID     string    `json:"user_id"`
	Hash       string    `json:"-"`
	Prefix     string    `json:"prefix"`
	Name       string    `json:"name,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	RevokedAt  time.Time `json:"revoked_at,omitzero"`
}

// Member is one user's role on one knowledge base.
type Member struct {
	KBID      string    `json:"kb_id"`
	UserID    string    `json:"user_id"`
	Email     string    `json:"email,omitempty"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// AuditEntry is one line of the audit log: who did what to which target, when.
type AuditEntry struct {
	ID          int64     `json:"id"`
	Tenant      string    `json:"tenant"`
	Actor       string    `json:"actor"`
	Action      string    `json:"action"`
	Target      string    `json:"target"`
	ContentHash string    `json:"content_hash,omitempty"`
	Detail      string    `json:"detail,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}
