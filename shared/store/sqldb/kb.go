package sqldb

import (
	"context"
	"database/sql"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

const kbColumns = `id, tenant_id, name, description, version, created_at`

func scanKB(row interface{ Scan(...any) error }) (rag.KnowledgeBase, error) {
	var kb rag.KnowledgeBase
	var created int64
	err := row.Scan(&kb.ID, &kb.Tenant, &kb.Name, &kb.Description, &kb.Version, &created)
	kb.CreatedAt = fromMS(created)
	return kb, err
}

// ValidateKBName accepts 1-255 bytes of UTF-8 without control characters or slashes (a name is also a
// folder under the inbox).
func ValidateKBName(name string) error {
	if name == "" || len(name) > 255 || !utf8.ValidString(name) || strings.TrimSpace(name) != name {
		return rag.Errorf("sqldb.ValidateKBName", rag.KindInvalid, "knowledge base name must be 1-255 bytes of UTF-8 without surrounding spaces")
	}
	if name == "." || name == ".." || strings.ContainsAny(name, "/\\") {
		return rag.Errorf("sqldb.ValidateKBName", rag.KindInvalid, "knowledge base name %q must not contain / or \\ or be . or ..", name)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return rag.Errorf("sqldb.ValidateKBName", rag.KindInvalid, "knowledge base name has a control character")
		}
	}
	return nil
}

// CreateKB inserts a knowledge base. An empty ID is generated; CreatedAt and Version are set.
// Conflict when the tenant already has a knowledge base with that name.
func (s *DB) CreateKB(ctx context.Context, kb *rag.KnowledgeBase) error {
	const op = "sqldb.CreateKB"
	if err := s.prepareKB(op, kb, ""); err != nil {
		return err
	}
	return s.classify(op, insertKB(ctx, s.db, kb, ""))
}

// prepareKB gives kb an id when it has none, checks its ids and name, and sets CreatedAt and Version.
func (s *DB) prepareKB(op string, kb *rag.KnowledgeBase, creator string) error {
	if kb.ID == "" {
		kb.ID = rag.NewID("kb")
	}
	ids := []string{"tenant", kb.Tenant, "kb id", kb.ID}
	if creator != "" {
		ids = append(ids, "user id", creator)
	}
	if err := validIDs(op, ids...); err != nil {
		return err
	}
	if err := ValidateKBName(kb.Name); err != nil {
		return err
	}
	if err := ValidateKBDescription(kb.Description); err != nil {
		return err
	}
	kb.CreatedAt, kb.Version = fromMS(ms(s.now())), 0
	return nil
}

// insertKB is the one INSERT of a knowledge base ("" creator: none recorded).
func insertKB(ctx context.Context, x interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, kb *rag.KnowledgeBase, creator string) error {
	at := ms(kb.CreatedAt)
	_, err := x.ExecContext(ctx, `INSERT INTO knowledge_bases (id, tenant_id, name, description, version, created_by, created_at, updated_at)
		VALUES (?, ?, ?, ?, 0, ?, ?, ?)`, kb.ID, kb.Tenant, kb.Name, kb.Description, creator, at, at)
	return err
}

// CreateKBOwnedBy inserts a knowledge base created by owner, a member of its tenant who is not a tenant
// admin: owner is recorded as its creator (KBCreator) and made its owner, in one transaction, as CreateKB
// otherwise (Conflict for a name in use; NotFound for no such user, and then nothing is created). A
// tenant admin's knowledge base is a plain CreateKB: operator channels refuse a knowledge base a member
// created (ingest.OperatorKB), and an admin's must not look like one. One transaction because,
// created first and owned a moment later, a member's new knowledge base looked like an operator's in
// between and could take what an operator ingested under its name.
func (s *DB) CreateKBOwnedBy(ctx context.Context, kb *rag.KnowledgeBase, owner string) error {
	const op = "sqldb.CreateKBOwnedBy"
	if err := s.prepareKB(op, kb, owner); err != nil {
		return err
	}
	return s.inTx(ctx, op, func(tx *sql.Tx) error {
		var one int
		if err := tx.QueryRowContext(ctx, `SELECT 1 FROM users WHERE tenant_id = ? AND id = ?`, kb.Tenant, owner).Scan(&one); err != nil {
			return s.classify(op, err)
		}
		if err := insertKB(ctx, tx, kb, owner); err != nil {
			return s.classify(op, err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO kb_members (kb_id, user_id, tenant_id, role, created_at) VALUES (?, ?, ?, ?, ?)`,
			kb.ID, owner, kb.Tenant, rag.KBOwner.String(), ms(kb.CreatedAt))
		return err
	})
}

// KBCreator returns the member who created the tenant's knowledge base kbID (CreateKBOwnedBy), whatever
// their role now; "" when no member did (CreateKB: an admin, the CLI, an operator channel) or it was
// created before migration 0009. NotFound when there is no such knowledge base.
func (s *DB) KBCreator(ctx context.Context, tenant, kbID string) (string, error) {
	const op = "sqldb.KBCreator"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID); err != nil {
		return "", err
	}
	var by string
	err := s.db.QueryRowContext(ctx, `SELECT created_by FROM knowledge_bases WHERE tenant_id = ? AND id = ?`, tenant, kbID).Scan(&by)
	return by, s.classify(op, err)
}

// GetKB returns one knowledge base of the tenant; NotFound when it does not exist or belongs to another tenant.
func (s *DB) GetKB(ctx context.Context, tenant, id string) (rag.KnowledgeBase, error) {
	const op = "sqldb.GetKB"
	if err := validIDs(op, "tenant", tenant, "kb id", id); err != nil {
		return rag.KnowledgeBase{}, err
	}
	kb, err := scanKB(s.db.QueryRowContext(ctx, `SELECT `+kbColumns+` FROM knowledge_bases WHERE tenant_id = ? AND id = ?`, tenant, id))
	return kb, s.classify(op, err)
}

// GetKBByName returns the tenant's knowledge base with that exact name; NotFound when there is none.
func (s *DB) GetKBByName(ctx context.Context, tenant, name string) (rag.KnowledgeBase, error) {
	const op = "sqldb.GetKBByName"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return rag.KnowledgeBase{}, err
	}
	if err := ValidateKBName(name); err != nil {
		return rag.KnowledgeBase{}, err
	}
	kb, err := scanKB(s.db.QueryRowContext(ctx, `SELECT `+kbColumns+` FROM knowledge_bases WHERE tenant_id = ? AND name = ?`, tenant, name))
	return kb, s.classify(op, err)
}

// ListKBs returns the tenant's knowledge bases ordered by name (empty slice when none), without those
// whose delete has been recorded (rag.KnowledgeBase.Retired; ListKBDeletions lists them).
func (s *DB) ListKBs(ctx context.Context, tenant string) ([]rag.KnowledgeBase, error) {
	const op = "sqldb.ListKBs"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+kbColumns+` FROM knowledge_bases WHERE tenant_id = ? AND name NOT LIKE ? ORDER BY name, id`, tenant, rag.RetiredKBPrefix+"%")
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.KnowledgeBase{}
	for rows.Next() {
		kb, err := scanKB(rows)
		if err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, kb)
	}
	return out, s.classify(op, rows.Err())
}

// BumpKBVersion increments the knowledge base's version (any chunk change does this, invalidating the
// semantic cache) and returns the new value.
func (s *DB) BumpKBVersion(ctx context.Context, tenant, id string) (int64, error) {
	const op = "sqldb.BumpKBVersion"
	if err := validIDs(op, "tenant", tenant, "kb id", id); err != nil {
		return 0, err
	}
	var v int64
	err := s.inTx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE knowledge_bases SET version = version + 1, updated_at = ? WHERE tenant_id = ? AND id = ?`,
			ms(s.now()), tenant, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rag.E(op, rag.KindNotFound, nil)
		}
		return tx.QueryRowContext(ctx, `SELECT version FROM knowledge_bases WHERE tenant_id = ? AND id = ?`, tenant, id).Scan(&v)
	})
	return v, err
}

// DeleteKB removes a knowledge base with its documents and chunks in one transaction. NotFound when it
// does not exist for this tenant. Vectors and blobs are the caller's to remove (SQL is the record; the
// consistency check deletes orphans that a crash leaves behind).
func (s *DB) DeleteKB(ctx context.Context, tenant, id string) error {
	const op = "sqldb.DeleteKB"
	if err := validIDs(op, "tenant", tenant, "kb id", id); err != nil {
		return err
	}
	var gen int64
	err := s.inTx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM knowledge_bases WHERE tenant_id = ? AND id = ?`, tenant, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rag.E(op, rag.KindNotFound, nil)
		}
		for _, q := range []string{
			`DELETE FROM chunks WHERE tenant_id = ? AND kb_id = ?`,
			`DELETE FROM documents WHERE tenant_id = ? AND kb_id = ?`,
			`DELETE FROM kb_members WHERE tenant_id = ? AND kb_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, tenant, id); err != nil {
				return err
			}
		}
		gen, err = s.bumpMetaGeneration(ctx, tx, tenant)
		return err
	})
	if err == nil {
		s.applyMeta(tenant, gen, func(e *tenantMeta) {
			n, ok := e.kbs[id]
			for i := range e.rows {
				if ok && e.rows[i].kb == n && !e.rows[i].removed {
					e.remove(e.rows[i].id)
				}
			}
		})
	}
	return err
}
