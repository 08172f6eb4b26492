package sqldb

import (
	"context"
	"database/sql"
	"path"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

const docColumns = `id, tenant_id, kb_id, source_uri, source_etag, source_sequencer, file_name, file_type, content_hash,
	status, error, doc_version, effective_date, chunk_count, stage_ms, source_encoding, ocr_note, created_at, updated_at`

var validStatus = map[string]bool{rag.StatusPending: true, rag.StatusProcessing: true, rag.StatusReady: true, rag.StatusFailed: true, rag.StatusDeleted: true}

func scanDoc(row interface{ Scan(...any) error }) (rag.Document, error) {
	var d rag.Document
	var created, updated int64
	err := row.Scan(&d.ID, &d.Tenant, &d.KBID, &d.SourceURI, &d.SourceETag, &d.SourceSequencer, &d.FileName, &d.FileType,
		&d.ContentHash, &d.Status, &d.Error, &d.DocVersion, &d.EffectiveDate, &d.ChunkCount, &d.StageMillis, &d.Encoding, &d.OCRNote, &created, &updated)
	d.CreatedAt, d.UpdatedAt = fromMS(created), fromMS(updated)
	return d, err
}

func validateDoc(op string, d *rag.Document) error {
	if err := validIDs(op, "tenant", d.Tenant, "kb id", d.KBID, "document id", d.ID); err != nil {
		return err
	}
	if d.SourceURI == "" || len(d.SourceURI) > 2048 {
		return rag.Errorf(op, rag.KindInvalid, "source uri must be 1-2048 bytes")
	}
	if len(d.FileName) > 1024 || len(d.SourceETag) > 255 || len(d.SourceSequencer) > 64 || len(d.FileType) > 32 ||
		len(d.DocVersion) > 64 || len(d.EffectiveDate) > 32 || len(d.ContentHash) > 64 || len(d.StageMillis) > 1024 || len(d.Encoding) > 32 || len(d.OCRNote) > 512 {
		return rag.Errorf(op, rag.KindInvalid, "document metadata field too long")
	}
	if !validStatus[d.Status] {
		return rag.Errorf(op, rag.KindInvalid, "unknown document status %q", d.Status)
	}
	return nil
}

// CreateDocument inserts a document. Empty ID, Status and FileName are filled (generated id, pending,
// the base name of the source). Conflict when the knowledge base already has a document for that source;
// NotFound when the knowledge base does not exist for this tenant.
func (s *DB) CreateDocument(ctx context.Context, d *rag.Document) error {
	const op = "sqldb.CreateDocument"
	if d.ID == "" {
		d.ID = rag.NewID("doc")
	}
	if d.Status == "" {
		d.Status = rag.StatusPending
	}
	if d.FileName == "" {
		d.FileName = path.Base(strings.ReplaceAll(d.SourceURI, "\\", "/"))
	}
	if err := validateDoc(op, d); err != nil {
		return err
	}
	now := ms(s.now())
	d.CreatedAt, d.UpdatedAt = fromMS(now), fromMS(now)
	// One statement inserts the row only if the knowledge base exists, reading the knowledge_bases row with
	// a shared lock, so a concurrent DeleteKB either waits for this insert (and then deletes the row with
	// the rest) or has committed first (and nothing is inserted). A separate SELECT read a snapshot, and a
	// delete committing between the two left a document of a deleted knowledge base (an upload checked by
	// id racing a delete of that knowledge base). InnoDB's INSERT ... SELECT locks the row by itself only
	// under REPEATABLE READ; under READ COMMITTED (a DSN's transaction_isolation) it reads a snapshot, so
	// the lock is asked for (shareLock). SQLite writes one transaction at a time.
	// The metadata generation moves with the insert: a new document is one a filter can select.
	var gen int64
	err := s.inTx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO documents (id, tenant_id, kb_id, source_uri, source_hash, source_etag, source_sequencer,
		file_name, file_type, content_hash, status, error, doc_version, effective_date, chunk_count, stage_ms, source_encoding, ocr_note, created_at, updated_at)
		SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM knowledge_bases WHERE tenant_id = ? AND id = ?`+s.shareLock(),
			d.ID, d.Tenant, d.KBID, d.SourceURI, sourceHash(d.SourceURI), d.SourceETag, d.SourceSequencer,
			d.FileName, d.FileType, d.ContentHash, d.Status, d.Error, d.DocVersion, d.EffectiveDate, d.ChunkCount, d.StageMillis, d.Encoding, d.OCRNote, now, now,
			d.Tenant, d.KBID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return rag.E(op, rag.KindNotFound, nil)
		}
		gen, err = s.bumpMetaGeneration(ctx, tx, d.Tenant)
		return err
	})
	if err != nil {
		return err
	}
	s.applyMeta(d.Tenant, gen, func(e *tenantMeta) { e.put(metaRow{id: d.ID, kb: e.kb(d.KBID), live: d.Status != rag.StatusDeleted}) })
	return nil
}

// GetDocument returns one document of the tenant; NotFound when missing or owned by another tenant.
func (s *DB) GetDocument(ctx context.Context, tenant, id string) (rag.Document, error) {
	const op = "sqldb.GetDocument"
	if err := validIDs(op, "tenant", tenant, "document id", id); err != nil {
		return rag.Document{}, err
	}
	d, err := scanDoc(s.db.QueryRowContext(ctx, `SELECT `+docColumns+` FROM documents WHERE tenant_id = ? AND id = ?`, tenant, id))
	return d, s.classify(op, err)
}

// GetDocuments returns the tenant's documents with these ids, in the order of ids, each once; ids that
// do not exist (or belong to another tenant) are left out. The retrieval chain reads the documents of
// its candidates with it: one query instead of one per document (a tenth of a retrieval at 100k chunks).
func (s *DB) GetDocuments(ctx context.Context, tenant string, ids []string) ([]rag.Document, error) {
	const op = "sqldb.GetDocuments"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := validIDs(op, "document id", id); err != nil {
			return nil, err
		}
	}
	byID := map[string]rag.Document{}
	for start := 0; start < len(ids); start += 500 {
		batch := ids[start:min(start+500, len(ids))]
		args := make([]any, 0, len(batch)+1)
		for _, id := range batch {
			args = append(args, id)
		}
		// "+tenant_id" keeps SQLite's planner on the primary key, as in GetChunks
		rows, err := s.db.QueryContext(ctx, `SELECT `+docColumns+` FROM documents WHERE id IN (`+placeholders(len(batch))+`) AND +tenant_id = ?`, append(args, tenant)...)
		if err != nil {
			return nil, s.classify(op, err)
		}
		for rows.Next() {
			d, err := scanDoc(rows)
			if err != nil {
				rows.Close()
				return nil, s.classify(op, err)
			}
			byID[d.ID] = d
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, s.classify(op, err)
		}
	}
	out := make([]rag.Document, 0, len(byID))
	for _, id := range ids {
		if d, ok := byID[id]; ok {
			out = append(out, d)
			delete(byID, id)
		}
	}
	return out, nil
}

// GetDocumentBySource returns the knowledge base's document for a source uri; NotFound when there is none.
func (s *DB) GetDocumentBySource(ctx context.Context, tenant, kbID, sourceURI string) (rag.Document, error) {
	const op = "sqldb.GetDocumentBySource"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID); err != nil {
		return rag.Document{}, err
	}
	d, err := scanDoc(s.db.QueryRowContext(ctx, `SELECT `+docColumns+` FROM documents
		WHERE tenant_id = ? AND kb_id = ? AND source_hash = ? AND source_uri = ?`, tenant, kbID, sourceHash(sourceURI), sourceURI))
	return d, s.classify(op, err)
}

// ListDocuments returns the knowledge base's documents, oldest first (then by id); empty when none.
// An empty status lists every status.
func (s *DB) ListDocuments(ctx context.Context, tenant, kbID, status string) ([]rag.Document, error) {
	const op = "sqldb.ListDocuments"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID); err != nil {
		return nil, err
	}
	q := `SELECT ` + docColumns + ` FROM documents WHERE tenant_id = ? AND kb_id = ?`
	args := []any{tenant, kbID}
	if status != "" {
		if !validStatus[status] {
			return nil, rag.Errorf(op, rag.KindInvalid, "unknown document status %q", status)
		}
		q += ` AND status = ?`
		args = append(args, status)
	}
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.Document{}
	for rows.Next() {
		d, err := scanDoc(rows)
		if err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, d)
	}
	return out, s.classify(op, rows.Err())
}

// UpdateDocument writes the mutable fields of d (source etag and sequencer, file name and type, content
// hash, status, error, doc version, effective date, chunk count, stage timings, encoding) and sets UpdatedAt. NotFound when the
// document does not exist for d.Tenant.
func (s *DB) UpdateDocument(ctx context.Context, d *rag.Document) error {
	const op = "sqldb.UpdateDocument"
	if err := validateDoc(op, d); err != nil {
		return err
	}
	now := ms(s.now())
	const q = `UPDATE documents SET source_etag = ?, source_sequencer = ?, file_name = ?, file_type = ?,
		content_hash = ?, status = ?, error = ?, doc_version = ?, effective_date = ?, chunk_count = ?, stage_ms = ?, source_encoding = ?, ocr_note = ?, updated_at = ?
		WHERE tenant_id = ? AND id = ?`
	args := []any{d.SourceETag, d.SourceSequencer, d.FileName, d.FileType, d.ContentHash, d.Status, d.Error, d.DocVersion,
		d.EffectiveDate, d.ChunkCount, d.StageMillis, d.Encoding, d.OCRNote, now, d.Tenant, d.ID}
	if d.Status == rag.StatusDeleted { // leaves every filter's selection (deleted is final): the generation moves
		var gen int64
		err := s.inTx(ctx, op, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, q, args...)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return rag.E(op, rag.KindNotFound, nil)
			}
			gen, err = s.bumpMetaGeneration(ctx, tx, d.Tenant)
			return err
		})
		if err != nil {
			return err
		}
		s.applyMeta(d.Tenant, gen, markDeleted(d.ID))
		d.UpdatedAt = fromMS(now)
		return nil
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return s.classify(op, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return rag.E(op, rag.KindNotFound, nil)
	}
	d.UpdatedAt = fromMS(now)
	return nil
}

// markDeleted takes documents out of every filter's selection in the metadata index.
func markDeleted(ids ...string) metaChange {
	return func(e *tenantMeta) {
		for _, id := range ids {
			if r, ok := e.get(id); ok {
				r.live = false
			}
		}
	}
}

// DeleteDocument removes a document and its chunks in one transaction; NotFound when missing.
func (s *DB) DeleteDocument(ctx context.Context, tenant, id string) error {
	const op = "sqldb.DeleteDocument"
	if err := validIDs(op, "tenant", tenant, "document id", id); err != nil {
		return err
	}
	var gen int64
	err := s.inTx(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM documents WHERE tenant_id = ? AND id = ?`, tenant, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return rag.E(op, rag.KindNotFound, nil)
		}
		if _, err = tx.ExecContext(ctx, `DELETE FROM chunks WHERE tenant_id = ? AND document_id = ?`, tenant, id); err != nil {
			return err
		}
		gen, err = s.bumpMetaGeneration(ctx, tx, tenant)
		return err
	})
	if err == nil {
		s.applyMeta(tenant, gen, func(e *tenantMeta) { e.remove(id) })
	}
	return err
}

// shareLock is the clause that makes a SELECT a locking read of its rows in shared mode on MySQL: LOCK IN
// SHARE MODE, which MySQL 8, MariaDB and go-mysql-server all accept (FOR SHARE is MySQL 8 only).
// Empty on SQLite, which has no row locks and serialises writers.
func (s *DB) shareLock() string {
	if s.dialect.Name == "mysql" {
		return " LOCK IN SHARE MODE"
	}
	return ""
}
