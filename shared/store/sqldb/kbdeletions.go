package sqldb

import (
	"context"
	"database/sql"

	"github.com/docmind/docmind/shared/rag"
)

// MarkKBDeleting records that the knowledge base is being deleted (migration 0007), before anything of it
// is removed; marking twice is harmless. The record outlives the knowledge base's row until
// UnmarkKBDeleting, so an interrupted delete can be found and finished. In the same transaction the row
// is renamed to rag.RetiredKBName: from then on ListKBs and GetKBByName do not see it and its name is
// free for a new knowledge base; the record keeps the name it had (the first mark's, when marked again).
func (s *DB) MarkKBDeleting(ctx context.Context, kb rag.KnowledgeBase) error {
	const op = "sqldb.MarkKBDeleting"
	if err := validIDs(op, "tenant", kb.Tenant, "kb id", kb.ID); err != nil {
		return err
	}
	return s.inTx(ctx, op, func(tx *sql.Tx) error {
		var recorded int
		err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM kb_deletions WHERE tenant_id = ? AND kb_id = ?`, kb.Tenant, kb.ID).Scan(&recorded)
		if err != nil {
			return s.classify(op, err)
		}
		if recorded == 0 && !kb.Retired() {
			if _, err := tx.ExecContext(ctx, `INSERT INTO kb_deletions (tenant_id, kb_id, name, requested_at) VALUES (?, ?, ?, ?)`,
				kb.Tenant, kb.ID, kb.Name, ms(s.now())); err != nil {
				return s.classify(op, err)
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE knowledge_bases SET name = ? WHERE tenant_id = ? AND id = ?`, rag.RetiredKBName(kb.ID), kb.Tenant, kb.ID)
		return s.classify(op, err)
	})
}

// UnmarkKBDeleting removes the record once the knowledge base is gone; a missing record is not an error.
func (s *DB) UnmarkKBDeleting(ctx context.Context, tenant, kbID string) error {
	const op = "sqldb.UnmarkKBDeleting"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM kb_deletions WHERE tenant_id = ? AND kb_id = ?`, tenant, kbID)
	return s.classify(op, err)
}

// ListKBDeletions returns the tenant's knowledge bases whose delete has not finished (ID, Name and, as
// CreatedAt, when the delete was requested), oldest first; empty when none.
func (s *DB) ListKBDeletions(ctx context.Context, tenant string) ([]rag.KnowledgeBase, error) {
	const op = "sqldb.ListKBDeletions"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT kb_id, name, requested_at FROM kb_deletions WHERE tenant_id = ? ORDER BY requested_at, kb_id`, tenant)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.KnowledgeBase{}
	for rows.Next() {
		kb := rag.KnowledgeBase{Tenant: tenant}
		var at int64
		if err := rows.Scan(&kb.ID, &kb.Name, &at); err != nil {
			return nil, s.classify(op, err)
		}
		kb.CreatedAt = fromMS(at)
		out = append(out, kb)
	}
	return out, s.classify(op, rows.Err())
}
