package sqldb

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// Document metadata (migration 0012, issue #23).

// SetDocumentMetadata replaces a document's metadata (normalised first: Invalid naming every bad key
// or value); an empty map removes it.
func (s *DB) SetDocumentMetadata(ctx context.Context, tenant, kbID, docID string, m rag.Metadata) error {
	const op = "sqldb.SetDocumentMetadata"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID, "document id", docID); err != nil {
		return err
	}
	m, err := m.Normalize()
	if err != nil {
		return err
	}
	b, err := json.Marshal(m)
	if err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	var gen int64
	err = s.inTx(ctx, op, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM document_metadata WHERE tenant_id = ? AND document_id = ?`, tenant, docID); err != nil {
			return err
		}
		if len(m) > 0 {
			if _, err := tx.ExecContext(ctx, `INSERT INTO document_metadata (tenant_id, document_id, kb_id, metadata, updated_at) VALUES (?, ?, ?, ?, ?)`,
				tenant, docID, kbID, string(b), ms(s.now())); err != nil {
				return err
			}
		}
		gen, err = s.bumpMetaGeneration(ctx, tx, tenant)
		return err
	})
	if err != nil {
		return err
	}
	s.applyMeta(tenant, gen, func(e *tenantMeta) {
		if r, ok := e.get(docID); ok { // metadata of a document not (yet) listed is read with it
			r2 := *r
			r2.meta = e.keys.Prepare(m)
			e.put(r2)
		}
	})
	return nil
}

// GetDocumentMetadata returns a document's metadata; empty (not an error) when it has none.
func (s *DB) GetDocumentMetadata(ctx context.Context, tenant, docID string) (rag.Metadata, error) {
	const op = "sqldb.GetDocumentMetadata"
	if err := validIDs(op, "tenant", tenant, "document id", docID); err != nil {
		return nil, err
	}
	var raw string
	err := s.db.QueryRowContext(ctx, `SELECT metadata FROM document_metadata WHERE tenant_id = ? AND document_id = ?`, tenant, docID).Scan(&raw)
	if rag.Is(s.classify(op, err), rag.KindNotFound) {
		return rag.Metadata{}, nil
	}
	if err != nil {
		return nil, s.classify(op, err)
	}
	return decodeMetadata(raw), nil
}

// decodeMetadata reads a stored row; a row that no longer decodes counts as empty (it was validated
// when written).
func decodeMetadata(raw string) rag.Metadata {
	if raw == "" {
		return rag.Metadata{}
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var m rag.Metadata
	if dec.Decode(&m) != nil {
		return rag.Metadata{}
	}
	n, err := m.Normalize()
	if err != nil {
		return rag.Metadata{}
	}
	return n
}

// MatchDocuments returns the ids of the live documents (not being deleted) of the tenant's knowledge
// bases kbIDs whose metadata passes f, in id order; a document without metadata is judged on empty
// metadata (so {"not":...} and {"exists":false} can match it). Empty when none passes. kbIDs must not
// be empty: the caller has already resolved which knowledge bases the principal may read. The filter
// is judged by the in-memory metadata index (one SQL read of the tenant's generation per call), or by
// a scan of the rows where the index is off or the tenant too big for it.
func (s *DB) MatchDocuments(ctx context.Context, tenant string, kbIDs []string, f *rag.MetaFilter) ([]string, error) {
	const op = "sqldb.MatchDocuments"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	if len(kbIDs) == 0 {
		return nil, rag.Errorf(op, rag.KindInvalid, "no knowledge bases to filter")
	}
	if err := rag.ValidateIDs("kb id", kbIDs); err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	ids, ok, err := s.matchIndexed(ctx, tenant, kbIDs, f)
	if err != nil || ok {
		return ids, s.classify(op, err)
	}
	return s.matchScan(ctx, tenant, kbIDs, f)
}

// matchScan is MatchDocuments by a scan that decodes every document's metadata.
func (s *DB) matchScan(ctx context.Context, tenant string, kbIDs []string, f *rag.MetaFilter) ([]string, error) {
	const op = "sqldb.MatchDocuments"
	args := []any{tenant}
	for _, id := range kbIDs {
		args = append(args, id)
	}
	args = append(args, rag.StatusDeleted)
	rows, err := s.db.QueryContext(ctx, `SELECT d.id, COALESCE(m.metadata, '') FROM documents d
		LEFT JOIN document_metadata m ON m.tenant_id = d.tenant_id AND m.document_id = d.id
		WHERE d.tenant_id = ? AND d.kb_id IN (?`+strings.Repeat(", ?", len(kbIDs)-1)+`) AND d.status <> ? ORDER BY d.id`, args...)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id, raw string
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, s.classify(op, err)
		}
		if f.Match(decodeMetadata(raw)) {
			out = append(out, id)
		}
	}
	return out, s.classify(op, rows.Err())
}
