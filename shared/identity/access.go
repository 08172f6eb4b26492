package identity

import (
	"context"

	"github.com/docmind/docmind/shared/rag"
)

// MemberStore reads knowledge-base roles (sqldb.DB).
type MemberStore interface {
	MemberRoles(ctx context.Context, tenant, userID string) (map[string]rag.KBRole, error)
}

// Roles is what one principal may do with each knowledge base of its tenant.
type Roles struct {
	all   bool // a tenant admin (or the local user) owns every knowledge base
	roles map[string]rag.KBRole
}

// RolesOf loads the principal's roles. An admin needs no lookup.
func RolesOf(ctx context.Context, m MemberStore, p rag.Principal) (Roles, error) {
	if p.IsAdmin() {
		return Roles{all: true}, nil
	}
	roles, err := m.MemberRoles(ctx, p.Tenant, p.UserID)
	if err != nil {
		return Roles{}, err
	}
	return Roles{roles: roles}, nil
}

// All reports that every knowledge base of the tenant is owned (an admin).
func (r Roles) All() bool { return r.all }

// Of returns the role on one knowledge base of the principal's tenant (KBNone when none).
func (r Roles) Of(kbID string) rag.KBRole {
	if r.all {
		return rag.KBOwner
	}
	return r.roles[kbID]
}

// Readable keeps the knowledge bases the principal may read, in their order.
func (r Roles) Readable(kbs []rag.KnowledgeBase) []rag.KnowledgeBase {
	out := make([]rag.KnowledgeBase, 0, len(kbs))
	for _, kb := range kbs {
		if r.Of(kb.ID) >= rag.KBReader {
			out = append(out, kb)
		}
	}
	return out
}
