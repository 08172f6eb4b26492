package sqldb

import (
	"context"
	"database/sql"

	"github.com/docmind/docmind/shared/store"
)

// ListChunkOrphans returns, per document id, the tenant's chunk rows whose document row does not exist,
// sorted by document id; empty when there are none. One statement, so a document deleted with its
// chunks in one transaction is never seen half-way.
func (s *DB) ListChunkOrphans(ctx context.Context, tenant string) ([]store.ChunkOrphans, error) {
	const op = "sqldb.ListChunkOrphans"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT c.document_id, MIN(c.kb_id), COUNT(*) FROM chunks c
		LEFT JOIN documents d ON d.tenant_id = c.tenant_id AND d.id = c.document_id
		WHERE c.tenant_id = ? AND d.id IS NULL GROUP BY c.document_id ORDER BY c.document_id`, tenant)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []store.ChunkOrphans{}
	for rows.Next() {
		var o store.ChunkOrphans
		if err := rows.Scan(&o.DocumentID, &o.KBID, &o.Rows); err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, o)
	}
	return out, s.classify(op, rows.Err())
}

// DeleteChunkOrphans deletes the tenant's chunk rows of docID when no document row of that id exists
// and returns how many went; a live document's rows are never removed (0). Check and delete share one
// transaction; a document id is never reused, so a row that is gone does not come back meanwhile.
func (s *DB) DeleteChunkOrphans(ctx context.Context, tenant, docID string) (int, error) {
	const op = "sqldb.DeleteChunkOrphans"
	if err := validIDs(op, "tenant", tenant, "document id", docID); err != nil {
		return 0, err
	}
	var n int64
	err := s.inTx(ctx, op, func(tx *sql.Tx) error {
		var live int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM documents WHERE tenant_id = ? AND id = ?`+s.shareLock(), tenant, docID).Scan(&live); err != nil {
			return err
		}
		if live > 0 {
			return nil
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE tenant_id = ? AND document_id = ?`, tenant, docID)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
