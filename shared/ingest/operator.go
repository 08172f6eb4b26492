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
// The rule: an operator channel adds only to a knowledge base that no member created and no member
// owns. "Created" is knowledge_bases.created_by (migration 0009, written by sqldb.CreateKBOwnedBy when
// a member who is not a tenant admin creates one through the API): such a knowledge base is refused for
// as long as its creator is not a tenant admin, whatever the creator's role on it now. Judging by
// current ownership alone was not enough (second review): a creator demoted to editor still read and
// deleted what the operator dropped, and whoever the creator had granted while owner stayed. "Owns" is
// kb_members: an owner who is not a tenant admin, or whose user row is gone, refuses too; this is what
// judges knowledge bases created before 0009 (no creator recorded). Tenant admins, JWT group admins
// included, the local single user, the CLI and the operator channels record no creator and, through
// the API, no owner row either, so their knowledge bases are the operator's. Readers and editors
// granted on such a knowledge base do not refuse it: granting them is an owner's or admin's deliberate act.
//
// A refusal (Permission, with a *MemberOwnedError naming the creator, the member owners and every member
// with its role) is reported by the channel (logged, or printed by the CLI) and written to the audit log
// (action ingest.refused). Demoting or revoking a member does not lift it; the ways on are another name,
// or `docmind ingest --kb NAME --adopt` once the members have been reviewed and those who should not
// see the operator's documents revoked (`docmind kb revoke NAME EMAIL`).

// KBMembers reads a knowledge base's creator and members, and whether a user is a tenant admin (sqldb.DB).
type KBMembers interface {
	KBCreator(ctx context.Context, tenant, kbID string) (string, error)
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

// MemberRole is one member of a knowledge base, as a refusal names it.
type MemberRole struct {
	Name string // email, or user id when the user row is gone
	Role string // owner, editor or reader
}

// MemberOwnedError is an operator channel's refusal: a member who is not a tenant admin created the
// knowledge base it named, or owns it.
type MemberOwnedError struct {
	KB      rag.KnowledgeBase
	Creator string       // the member who created it (email, or user id when gone); "" when none is recorded
	Owners  []string     // its owners who are not tenant admins, in ListMembers order
	Members []MemberRole // every member with its role, in ListMembers order
}

// Why says who stands in the way: "created by EMAIL, a member" or "owned by EMAIL, ...".
func (e *MemberOwnedError) Why() string {
	if e.Creator != "" {
		return e.who() + ", a member"
	}
	return e.who()
}

func (e *MemberOwnedError) who() string {
	if e.Creator != "" {
		return "created by " + e.Creator
	}
	return "owned by " + strings.Join(e.Owners, ", ")
}

func (e *MemberOwnedError) Error() string {
	why := "is " + e.Why()
	if e.Creator != "" {
		why = "was " + e.Why()
	}
	return fmt.Sprintf("knowledge base %q (%s) %s, not by the operator: operator ingestion does not add to a "+
		"knowledge base a member created or owns (its members could read what is added, its owners share and delete it); "+
		"members: %s; use another name, or review the members, remove those who should not see the operator's documents "+
		"(docmind kb revoke %s EMAIL) and add to it with docmind ingest --kb %s --adopt",
		e.KB.Name, e.KB.ID, why, e.MemberList(), e.KB.Name, e.KB.Name)
}

// MemberList is every member with its role ("ben@example.com (owner), cy@example.com (reader)"), or
// "none".
func (e *MemberOwnedError) MemberList() string {
	if len(e.Members) == 0 {
		return "none"
	}
	parts := make([]string, len(e.Members))
	for i, m := range e.Members {
		parts[i] = m.Name + " (" + m.Role + ")"
	}
	return strings.Join(parts, ", ")
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
// missing. Permission, wrapping a *MemberOwnedError, when a member created or owns it (CheckOperator).
func (s *Service) OperatorKB(ctx context.Context, tenant, name, channel string) (rag.KnowledgeBase, error) {
	kb, err := s.KB(ctx, tenant, name, true)
	if err != nil {
		return kb, err
	}
	if err := s.CheckOperator(ctx, kb, channel); err != nil {
		return rag.KnowledgeBase{}, err
	}
	return kb, nil
}

// CheckOperator applies the rule above to kb for an operator channel: nil when the operator may add to
// it; Permission, wrapping a *MemberOwnedError, when a member created or owns it, written to the audit
// log with channel ("cli", "inbox", "s3", "restore") as the actor's name.
func (s *Service) CheckOperator(ctx context.Context, kb rag.KnowledgeBase, channel string) error {
	refusal, err := s.Refusal(ctx, kb)
	if err != nil || refusal == nil {
		return err
	}
	if a, ok := s.Runner.Stages.Records.(Auditor); ok {
		// best effort: the refusal stands, and the channel logs it, even when the audit log cannot be written
		_ = a.AppendAudit(context.WithoutCancel(ctx), &rag.AuditEntry{Tenant: kb.Tenant, Actor: "operator:" + channel,
			Action: "ingest.refused", Target: kb.ID, Detail: refusal.Detail()})
	}
	return rag.E("ingest.CheckOperator", rag.KindPermission, refusal)
}

// AuditOperator records an operator channel's change ("inbox", "s3", "reconcile") in the audit log when
// the relational store keeps one, as API and CLI deletions are: a document deleted by removing its file
// leaves a trace too. Best effort: the change has happened, a failed write is not its failure.
func (s *Service) AuditOperator(ctx context.Context, tenant, channel, action, target, detail string) {
	if a, ok := s.Runner.Stages.Records.(Auditor); ok {
		_ = a.AppendAudit(context.WithoutCancel(ctx), &rag.AuditEntry{Tenant: tenant, Actor: "operator:" + channel,
			Action: action, Target: target, Detail: detail})
	}
}

// Detail is the refusal as the audit log records it.
func (e *MemberOwnedError) Detail() string {
	return e.who() + "; members: " + e.MemberList()
}

// Refusal returns why an operator channel may not add to kb (see the rule above), or nil when it may.
// A store that keeps no members (no identity tables) refuses nothing.
func (s *Service) Refusal(ctx context.Context, kb rag.KnowledgeBase) (*MemberOwnedError, error) {
	m, ok := s.Runner.Stages.Records.(KBMembers)
	if !ok {
		return nil, nil
	}
	creator, err := s.memberCreator(ctx, m, kb)
	if err != nil {
		return nil, err
	}
	members, err := m.ListMembers(ctx, kb.Tenant, kb.ID)
	if err != nil {
		return nil, fmt.Errorf("members of %s: %w", kb.Name, err)
	}
	e := &MemberOwnedError{KB: kb, Creator: creator}
	for _, mem := range members {
		name := mem.Email
		if name == "" {
			name = mem.UserID
		}
		e.Members = append(e.Members, MemberRole{Name: name, Role: mem.Role})
		if mem.Role != rag.KBOwner.String() {
			continue
		}
		admin, err := isAdmin(ctx, m, kb.Tenant, mem.UserID)
		if err != nil {
			return nil, fmt.Errorf("owners of %s: %w", kb.Name, err)
		}
		if !admin {
			e.Owners = append(e.Owners, name)
		}
	}
	if e.Creator == "" && len(e.Owners) == 0 {
		return nil, nil
	}
	return e, nil
}

// memberCreator returns who created kb when that was a member who is not a tenant admin now (email, or
// user id when the user is gone); "" when no creator is recorded or the creator has become an admin.
func (s *Service) memberCreator(ctx context.Context, m KBMembers, kb rag.KnowledgeBase) (string, error) {
	id, err := m.KBCreator(ctx, kb.Tenant, kb.ID)
	if err != nil || id == "" {
		return "", err
	}
	u, err := m.GetUser(ctx, kb.Tenant, id)
	switch {
	case rag.Is(err, rag.KindNotFound):
		return id, nil
	case err != nil:
		return "", fmt.Errorf("creator of %s: %w", kb.Name, err)
	case u.Role == rag.RoleAdmin:
		return "", nil
	}
	return u.Email, nil
}

// isAdmin reports whether userID is a tenant admin in SQL; a user who is gone is not.
func isAdmin(ctx context.Context, m KBMembers, tenant, userID string) (bool, error) {
	u, err := m.GetUser(ctx, tenant, userID)
	if rag.Is(err, rag.KindNotFound) {
		return false, nil
	}
	return err == nil && u.Role == rag.RoleAdmin, err
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
