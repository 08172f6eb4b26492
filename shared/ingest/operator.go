package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Operator channels (`docmind ingest --kb NAME`, the drop folder <data>/inbox/<kb>/, the S3 inbox
// inbox/<kb>/) name a knowledge base instead of proving a right to it, and used to create it or add to
// it whoever had created it. A member who created "handbook" through the API first then owned what an
// operator later dropped into inbox/handbook/: could read it, grant it to others and delete it (security
// review, "a member who creates a knowledge-base name first owns what an operator later ingests").
//
// The rule: an operator channel adds only to a knowledge base that no member owns. Ownership is what
// kb_members records, so no new column is needed and knowledge bases created before this rule are
// judged by the same facts: a knowledge base created by an operator channel, `docmind kb create`, the
// demo or the local single-user server has no owner row; one created through the API by a tenant admin
// has that admin as owner; one created by a member has that member as owner (written with the row in one
// transaction, sqldb.CreateKBOwnedBy, so it is never seen without its owner). Owners who are tenant
// admins are accepted (an admin owns every knowledge base anyway); an owner who is a member, or whose
// user row is gone, refuses the channel (Permission, with a *MemberOwnedError naming the owners).
// Readers and editors do not: granting them is an owner's or admin's deliberate act, and they cannot
// grant or delete.
//
// To proceed, the operator picks another name, or makes the knowledge base the operator's by demoting
// or revoking its member owners (`docmind kb grant NAME EMAIL --role editor`, `docmind kb revoke NAME
// EMAIL`), which is durable and also unblocks the drop folders; `docmind ingest --adopt` adds to it once,
// as it is. Every refusal is reported by the channel (logged, or printed by the CLI) and written to the
// audit log (action ingest.refused).

// KBMembers reads a knowledge base's members and whether a user is a tenant admin (sqldb.DB).
type KBMembers interface {
	ListMembers(ctx context.Context, tenant, kbID string) ([]rag.Member, error)
	GetUser(ctx context.Context, tenant, id string) (rag.User, error)
}

// Auditor appends to the audit log (sqldb.DB).
type Auditor interface {
	AppendAudit(ctx context.Context, e *rag.AuditEntry) error
}

// Both relational adapters (SQLite and MySQL) are a sqldb.DB: the rule is checked wherever ingestion runs.
var (
	_ KBMembers = (*sqldb.DB)(nil)
	_ Auditor   = (*sqldb.DB)(nil)
)

// MemberOwnedError is an operator channel's refusal: members who are not tenant admins own the
// knowledge base it named.
type MemberOwnedError struct {
	KB     rag.KnowledgeBase
	Owners []string // the member owners' emails (user ids when a user row is gone), in ListMembers order
}

func (e *MemberOwnedError) Error() string {
	return fmt.Sprintf("knowledge base %q (%s) is owned by %s, not by the operator: operator ingestion does not add to a "+
		"knowledge base a member owns (its owners could read, share and delete what is added); use another name, "+
		"or make it the operator's by demoting or revoking its member owners (docmind kb grant %s EMAIL --role editor, "+
		"or docmind kb revoke %s EMAIL)", e.KB.Name, e.KB.ID, strings.Join(e.Owners, ", "), e.KB.Name, e.KB.Name)
}

// AsMemberOwned returns the refusal inside err, or nil.
func AsMemberOwned(err error) *MemberOwnedError {
	var mo *MemberOwnedError
	if errors.As(err, &mo) {
		return mo
	}
	return nil
}

// OperatorKB returns the tenant's knowledge base named name for an operator channel, creating it when
// missing. Permission, wrapping a *MemberOwnedError, when members own it (see the rule above); the
// refusal is written to the audit log with channel ("cli", "inbox", "s3") as the actor's name.
func (s *Service) OperatorKB(ctx context.Context, tenant, name, channel string) (rag.KnowledgeBase, error) {
	kb, err := s.KB(ctx, tenant, name, true)
	if err != nil {
		return kb, err
	}
	owners, err := s.MemberOwners(ctx, kb)
	if err != nil {
		return kb, err
	}
	if len(owners) == 0 {
		return kb, nil
	}
	refusal := &MemberOwnedError{KB: kb, Owners: owners}
	if a, ok := s.Runner.Stages.Records.(Auditor); ok {
		// best effort: the refusal stands, and the channel logs it, even when the audit log cannot be written
		_ = a.AppendAudit(context.WithoutCancel(ctx), &rag.AuditEntry{Tenant: tenant, Actor: "operator:" + channel,
			Action: "ingest.refused", Target: kb.ID, Detail: "owned by " + strings.Join(owners, ", ")})
	}
	return rag.KnowledgeBase{}, rag.E("ingest.OperatorKB", rag.KindPermission, refusal)
}

// MemberOwners returns who owns kb without being a tenant admin (emails, or user ids of users that are
// gone); empty when no member owns it. A store that keeps no members (no identity tables) has none.
func (s *Service) MemberOwners(ctx context.Context, kb rag.KnowledgeBase) ([]string, error) {
	m, ok := s.Runner.Stages.Records.(KBMembers)
	if !ok {
		return nil, nil
	}
	members, err := m.ListMembers(ctx, kb.Tenant, kb.ID)
	if err != nil {
		return nil, fmt.Errorf("owners of %s: %w", kb.Name, err)
	}
	var out []string
	for _, mem := range members {
		if mem.Role != rag.KBOwner.String() {
			continue
		}
		u, err := m.GetUser(ctx, kb.Tenant, mem.UserID)
		if err != nil && !rag.Is(err, rag.KindNotFound) {
			return nil, fmt.Errorf("owners of %s: %w", kb.Name, err)
		}
		if err == nil && u.Role == rag.RoleAdmin {
			continue
		}
		name := mem.Email
		if name == "" {
			name = mem.UserID
		}
		out = append(out, name)
	}
	return out, nil
}

// sourceKB is the knowledge base a source goes into: by id when the caller resolved it (an upload,
// checked against the uploader's role on that id; a delete and re-create under the same name meanwhile
// makes it NotFound, never the new one), otherwise by name as an operator channel.
func (s *Service) sourceKB(ctx context.Context, tenant string, src Source) (rag.KnowledgeBase, error) {
	if src.KBID != "" {
		return s.Runner.Stages.Records.GetKB(ctx, tenant, src.KBID)
	}
	return s.OperatorKB(ctx, tenant, src.KBName, "ingest")
}
