package sqldb

import (
	"context"
	"database/sql"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

// MaxMemoryRunes bounds one memory's content.
const MaxMemoryRunes = 500

const memColumns = `id, tenant_id, user_id, kind, content, access_count, invalidated_at, superseded_by, created_at, updated_at`

func scanMemory(row interface{ Scan(...any) error }) (rag.Memory, error) {
	var m rag.Memory
	var inv, created, updated int64
	if err := row.Scan(&m.ID, &m.Tenant, &m.User, &m.Kind, &m.Content, &m.AccessCount, &inv, &m.SupersededBy, &created, &updated); err != nil {
		return m, err
	}
	if inv != 0 {
		m.InvalidatedAt = fromMS(inv)
	}
	m.CreatedAt, m.UpdatedAt = fromMS(created), fromMS(updated)
	return m, nil
}

// AddMemory stores a memory for the user and, in the same transaction, invalidates the active memories
// named in supersedes (they point to the new one). An empty ID is generated.
func (s *DB) AddMemory(ctx context.Context, m *rag.Memory, supersedes ...string) error {
	const op = "sqldb.AddMemory"
	if m.ID == "" {
		m.ID = rag.NewID("mem")
	}
	if err := validIDs(op, "tenant", m.Tenant, "user", m.User, "memory id", m.ID, "kind", m.Kind); err != nil {
		return err
	}
	if err := rag.ValidateIDs("memory id", supersedes); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	m.Content = strings.TrimSpace(m.Content)
	if m.Content == "" || !utf8.ValidString(m.Content) || utf8.RuneCountInString(m.Content) > MaxMemoryRunes {
		return rag.Errorf(op, rag.KindInvalid, "memory content must be 1 to %d characters of UTF-8", MaxMemoryRunes)
	}
	at := ms(s.now())
	m.AccessCount, m.InvalidatedAt, m.SupersededBy = 0, rag.Memory{}.InvalidatedAt, ""
	return s.inTx(ctx, op, func(tx *sql.Tx) error {
		// A user's memories get strictly increasing times, so "newest first" holds within a millisecond.
		var last sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT MAX(created_at) FROM memories WHERE tenant_id = ? AND user_id = ?`,
			m.Tenant, m.User).Scan(&last); err != nil {
			return err
		}
		if last.Valid && at <= last.Int64 {
			at = last.Int64 + 1
		}
		m.CreatedAt, m.UpdatedAt = fromMS(at), fromMS(at)
		if _, err := tx.ExecContext(ctx, `INSERT INTO memories (`+memColumns+`) VALUES (`+placeholders(10)+`)`,
			m.ID, m.Tenant, m.User, m.Kind, m.Content, 0, 0, "", at, at); err != nil {
			return err
		}
		for _, id := range supersedes {
			if _, err := tx.ExecContext(ctx, `UPDATE memories SET invalidated_at = ?, superseded_by = ?, updated_at = ?
				WHERE tenant_id = ? AND user_id = ? AND id = ? AND invalidated_at = 0`, at, m.ID, at, m.Tenant, m.User, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// ListMemories returns the user's active memories, newest first (at most 1,000).
func (s *DB) ListMemories(ctx context.Context, tenant, user string) ([]rag.Memory, error) {
	const op = "sqldb.ListMemories"
	if err := validIDs(op, "tenant", tenant, "user", user); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+memColumns+` FROM memories WHERE tenant_id = ? AND user_id = ? AND invalidated_at = 0
		ORDER BY created_at DESC, id DESC LIMIT 1000`, tenant, user)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.Memory{}
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, m)
	}
	return out, s.classify(op, rows.Err())
}

// InvalidateMemories soft-deletes the user's active memories with these ids and returns how many were
// active; ids of other users, or already invalid, are left alone.
func (s *DB) InvalidateMemories(ctx context.Context, tenant, user string, ids []string) (int, error) {
	const op = "sqldb.InvalidateMemories"
	if err := validIDs(op, "tenant", tenant, "user", user); err != nil {
		return 0, err
	}
	if err := rag.ValidateIDs("memory id", ids); err != nil {
		return 0, rag.E(op, rag.KindInvalid, err)
	}
	if len(ids) > 1000 {
		return 0, rag.Errorf(op, rag.KindInvalid, "at most 1000 ids per call")
	}
	if len(ids) == 0 {
		return 0, nil
	}
	at := ms(s.now())
	args := []any{at, at, tenant, user}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE memories SET invalidated_at = ?, updated_at = ? WHERE tenant_id = ? AND user_id = ?
		AND invalidated_at = 0 AND id IN (`+placeholders(len(ids))+`)`, args...)
	if err != nil {
		return 0, s.classify(op, err)
	}
	n, err := res.RowsAffected()
	return int(n), s.classify(op, err)
}

// TouchMemories adds one to the access counter of the user's active memories with these ids, atomically
// (access_count = access_count + 1, never a read-modify-write).
func (s *DB) TouchMemories(ctx context.Context, tenant, user string, ids []string) error {
	const op = "sqldb.TouchMemories"
	if err := validIDs(op, "tenant", tenant, "user", user); err != nil {
		return err
	}
	if err := rag.ValidateIDs("memory id", ids); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	if len(ids) > 1000 {
		return rag.Errorf(op, rag.KindInvalid, "at most 1000 ids per call")
	}
	if len(ids) == 0 {
		return nil
	}
	args := []any{tenant, user}
	for _, id := range ids {
		args = append(args, id)
	}
	_, err := s.db.ExecContext(ctx, `UPDATE memories SET access_count = access_count + 1 WHERE tenant_id = ? AND user_id = ?
		AND invalidated_at = 0 AND id IN (`+placeholders(len(ids))+`)`, args...)
	return s.classify(op, err)
}
