package sqldb

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// Document metadata (migration 0012, issue #23).

// SetDocumentMetadata replaces what a document's sources say about it (normalised first: Invalid
// naming every bad key or value); an empty map removes it. Editors' edits (EditDocumentMetadata) stay
// laid over it: a key an editor set keeps the editor's value, a key an editor removed stays removed.
func (s *DB) SetDocumentMetadata(ctx context.Context, tenant, kbID, docID string, m rag.Metadata) error {
	bad, err := s.setMetadata(ctx, "sqldb.SetDocumentMetadata", tenant, []DocumentMetadata{{KBID: kbID, DocumentID: docID, Metadata: m}})
	if bad[0] != nil {
		return bad[0]
	}
	return err
}

// DocumentMetadata is one document's metadata as its sources give it (SetDocumentsMetadata).
type DocumentMetadata struct {
	KBID, DocumentID string
	Metadata         rag.Metadata
}

// SetDocumentsMetadata is SetDocumentMetadata for many documents of one tenant, in one transaction
// that moves the tenant's metadata generation once: ingestion writes a batch's metadata this way (one
// transaction a document was a tenth of CPU-only ingestion). A document whose metadata is invalid is
// left out and named in the error; the others are written.
func (s *DB) SetDocumentsMetadata(ctx context.Context, tenant string, items []DocumentMetadata) error {
	bad, err := s.setMetadata(ctx, "sqldb.SetDocumentsMetadata", tenant, items)
	for i, e := range bad {
		if e != nil {
			bad[i] = fmt.Errorf("document %s: %w", items[i].DocumentID, e)
		}
	}
	return errors.Join(append(bad, err)...)
}

// setMetadata writes items' metadata in one transaction. bad[i] is why item i was left out (invalid
// ids or metadata, or metadata that the editors' edits make invalid); err is the transaction's or
// the mirror's.
func (s *DB) setMetadata(ctx context.Context, op, tenant string, items []DocumentMetadata) (bad []error, err error) {
	bad = make([]error, len(items))
	ms := make([]rag.Metadata, len(items))
	for i, it := range items {
		if bad[i] = validIDs(op, "tenant", tenant, "kb id", it.KBID, "document id", it.DocumentID); bad[i] == nil {
			ms[i], bad[i] = it.Metadata.Normalize()
		}
	}
	if !slices.Contains(bad, nil) { // nothing to write: no transaction (SQLite's takes the write lock)
		return bad, nil
	}
	var gen int64
	written := 0
	err = s.inTx(ctx, op, func(tx *sql.Tx) error {
		for i, it := range items {
			if bad[i] != nil {
				continue
			}
			edits, err := readEdits(ctx, tx, tenant, it.DocumentID)
			if err != nil {
				return err
			}
			if ms[i], bad[i] = applyEdits(ms[i], edits); bad[i] != nil {
				continue
			}
			if err := s.writeMetadataTx(ctx, tx, tenant, it.KBID, it.DocumentID, ms[i]); err != nil {
				return err
			}
			written++
		}
		if written == 0 {
			return nil
		}
		gen, err = s.bumpMetaGeneration(ctx, tx, tenant)
		return err
	})
	if err != nil || written == 0 {
		return bad, err
	}
	s.applyMeta(tenant, gen, func(e *tenantMeta) {
		for i, it := range items {
			if bad[i] == nil {
				setMeta(it.DocumentID, ms[i])(e)
			}
		}
	})
	var mirrored []error
	for i, it := range items {
		if bad[i] != nil {
			continue
		}
		if err := s.mirrorMeta(ctx, op, tenant, it.KBID, it.DocumentID, ms[i], gen); err != nil {
			mirrored = append(mirrored, err)
		}
	}
	if len(mirrored) == 1 {
		return bad, mirrored[0] // the *rag.Error itself, as the one-document write always returned it
	}
	return bad, errors.Join(mirrored...)
}

// MetadataMirror keeps a copy of documents' metadata somewhere else (the Milvus rows' metadata field,
// milvus.Index.SetDocumentMeta): called after each committed metadata write with the document's
// metadata as written (sources and edits together) and the tenant's metadata generation of the write.
type MetadataMirror func(ctx context.Context, tenant, kbID, docID string, m rag.Metadata, gen int64) error

// SetMetadataMirror makes every later metadata write through this DB (SetDocumentMetadata,
// EditDocumentMetadata) also call mirror. Set it once, before the DB is shared.
func (s *DB) SetMetadataMirror(mirror MetadataMirror) { s.mirror = mirror }

// mirrorMeta calls the mirror, if any; its failure is the write's error, kind kept, saying that the
// metadata itself was saved (a retry of the write mirrors again).
func (s *DB) mirrorMeta(ctx context.Context, op, tenant, kbID, docID string, m rag.Metadata, gen int64) error {
	if s.mirror == nil {
		return nil
	}
	if err := s.mirror(ctx, tenant, kbID, docID, m, gen); err != nil {
		return rag.E(op, rag.KindOf(err), fmt.Errorf("metadata saved, but its copy in the vector index was not updated: %w", err))
	}
	return nil
}

// setMeta replaces a document's metadata in the metadata index.
func setMeta(docID string, m rag.Metadata) metaChange {
	return func(e *tenantMeta) {
		if r, ok := e.get(docID); ok { // metadata of a document not (yet) listed is read with it
			r2 := *r
			r2.meta = e.keys.Prepare(m)
			e.put(r2)
		}
	}
}

// writeMetadataTx replaces the document_metadata row (none for empty metadata).
func (s *DB) writeMetadataTx(ctx context.Context, tx *sql.Tx, tenant, kbID, docID string, m rag.Metadata) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM document_metadata WHERE tenant_id = ? AND document_id = ?`, tenant, docID); err != nil {
		return err
	}
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return rag.E("sqldb", rag.KindInvalid, err)
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO document_metadata (tenant_id, document_id, kb_id, metadata, updated_at) VALUES (?, ?, ?, ?, ?)`,
		tenant, docID, kbID, string(b), ms(s.now()))
	return err
}

// metaEdits is an editor's changes: a key's value, or nil for a key removed.
type metaEdits map[string]any

// readEdits reads a document's editor edits (empty when none).
func readEdits(ctx context.Context, tx *sql.Tx, tenant, docID string) (metaEdits, error) {
	var raw string
	err := tx.QueryRowContext(ctx, `SELECT edits FROM document_metadata_edits WHERE tenant_id = ? AND document_id = ?`, tenant, docID).Scan(&raw)
	if err == sql.ErrNoRows {
		return metaEdits{}, nil
	}
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var stored map[string]any
	if dec.Decode(&stored) != nil {
		return metaEdits{}, nil // validated when written; a row that no longer decodes edits nothing
	}
	edits := metaEdits{}
	for k, v := range stored {
		if v == nil {
			edits[k] = nil
			continue
		}
		if n, err := (rag.Metadata{k: v}).Normalize(); err == nil && len(n) == 1 {
			edits[k] = n[k]
		}
	}
	return edits, nil
}

// applyEdits lays edits over m (normalised again: the key limit holds for the result).
func applyEdits(m rag.Metadata, edits metaEdits) (rag.Metadata, error) {
	if len(edits) == 0 {
		return m, nil
	}
	out := make(rag.Metadata, len(m)+len(edits))
	for k, v := range m {
		out[k] = v
	}
	for k, v := range edits {
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out.Normalize()
}

// EditDocumentMetadata records an editor's change to a document's metadata: the keys of set take
// their values, the keys of remove are removed, and both stay so across every later write of the
// document's sources (SetDocumentMetadata). It returns the document's metadata after the change.
// Invalid, naming every bad key or value, for anything Metadata.Normalize refuses, a key in both
// set and remove, or a result over the key limit; nothing is changed then.
func (s *DB) EditDocumentMetadata(ctx context.Context, tenant, kbID, docID string, set rag.Metadata, remove []string) (rag.Metadata, error) {
	const op = "sqldb.EditDocumentMetadata"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID, "document id", docID); err != nil {
		return nil, err
	}
	set, err := set.Normalize()
	if err != nil {
		return nil, err
	}
	change := metaEdits{}
	for k, v := range set {
		change[k] = v
	}
	var probs []string
	for _, k := range remove {
		switch {
		case !rag.ValidMetaKey(k):
			probs = append(probs, fmt.Sprintf("key %q must be 1-64 characters of A-Z a-z 0-9 _ . -", truncateID(k)))
		case set[k] != nil:
			probs = append(probs, fmt.Sprintf("%s is both set and removed", k))
		default:
			change[k] = nil
		}
	}
	if len(probs) > 0 {
		return nil, rag.Errorf(op, rag.KindInvalid, "metadata: %s", strings.Join(probs, "; "))
	}
	var gen int64
	var out rag.Metadata
	err = s.inTx(ctx, op, func(tx *sql.Tx) error {
		edits, err := readEdits(ctx, tx, tenant, docID)
		if err != nil {
			return err
		}
		for k, v := range change {
			edits[k] = v
		}
		if len(edits) > 2*rag.MaxMetaKeys {
			return rag.Errorf(op, rag.KindInvalid, "metadata: more than %d edited keys", 2*rag.MaxMetaKeys)
		}
		var raw string
		err = tx.QueryRowContext(ctx, `SELECT metadata FROM document_metadata WHERE tenant_id = ? AND document_id = ?`, tenant, docID).Scan(&raw)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if out, err = applyEdits(decodeMetadata(raw), change); err != nil {
			return rag.E(op, rag.KindInvalid, err)
		}
		b, err := json.Marshal(edits)
		if err != nil {
			return rag.E(op, rag.KindInvalid, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM document_metadata_edits WHERE tenant_id = ? AND document_id = ?`, tenant, docID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO document_metadata_edits (tenant_id, document_id, kb_id, edits, updated_at) VALUES (?, ?, ?, ?, ?)`,
			tenant, docID, kbID, string(b), ms(s.now())); err != nil {
			return err
		}
		if err := s.writeMetadataTx(ctx, tx, tenant, kbID, docID, out); err != nil {
			return err
		}
		gen, err = s.bumpMetaGeneration(ctx, tx, tenant)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.applyMeta(tenant, gen, setMeta(docID, out))
	return out, s.mirrorMeta(ctx, op, tenant, kbID, docID, out, gen)
}

func truncateID(s string) string {
	if len(s) > 80 {
		return s[:80]
	}
	return s
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
// a scan of the rows where the index is off or the tenant too big for it. The index answers the same
// filter over the same knowledge bases with the same slice until the tenant's metadata changes: the
// result is shared and must not be modified (callers narrowing it build a new slice).
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

// MirrorAllMetadata calls the mirror (SetMetadataMirror) for every document of the tenant that is not
// being deleted, with its metadata as stored (empty when it has none) at the current generation: the
// backfill after a deploy gave the vector index its metadata field (`docmind metadata mirror`). A
// write racing it mirrors a newer generation, which the mirror keeps. It returns how many documents
// were mirrored; it stops at the first failure (running it again redoes only what is not in step).
func (s *DB) MirrorAllMetadata(ctx context.Context, tenant string) (int, error) {
	const op = "sqldb.MirrorAllMetadata"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return 0, err
	}
	if s.mirror == nil {
		return 0, rag.Errorf(op, rag.KindInvalid, "no metadata mirror is set (the vector index keeps no metadata)")
	}
	gen, err := metaGeneration(ctx, s.db, tenant)
	if err != nil {
		return 0, s.classify(op, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT d.id, d.kb_id, COALESCE(m.metadata, '') FROM documents d
		LEFT JOIN document_metadata m ON m.tenant_id = d.tenant_id AND m.document_id = d.id
		WHERE d.tenant_id = ? AND d.status <> ? ORDER BY d.id`, tenant, rag.StatusDeleted)
	if err != nil {
		return 0, s.classify(op, err)
	}
	type doc struct {
		id, kb string
		m      rag.Metadata
	}
	var docs []doc
	for rows.Next() {
		var d doc
		var raw string
		if err := rows.Scan(&d.id, &d.kb, &raw); err != nil {
			rows.Close()
			return 0, s.classify(op, err)
		}
		d.m = decodeMetadata(raw)
		docs = append(docs, d)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, s.classify(op, err)
	}
	for i, d := range docs {
		if err := s.mirror(ctx, tenant, d.kb, d.id, d.m, gen); err != nil {
			return i, rag.E(op, rag.KindOf(err), fmt.Errorf("document %s: %w", d.id, err))
		}
	}
	return len(docs), nil
}
