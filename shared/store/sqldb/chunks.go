package sqldb

import (
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/rag"
)

const chunkColumns = `id, tenant_id, kb_id, document_id, parent_id, level, chunk_index, content, content_hash, vector_id,
	chapter, content_type, tags, page, token_count`

var validContentType = map[string]bool{
	rag.ContentProcedure: true, rag.ContentWarning: true, rag.ContentExample: true, rag.ContentDefinition: true,
	rag.ContentTable: true, rag.ContentCode: true, rag.ContentGeneral: true,
}

// scanChunk reads chunkColumns, then the row's further columns into more.
func scanChunk(row interface{ Scan(...any) error }, more ...any) (rag.Chunk, error) {
	var c rag.Chunk
	var tags string
	err := row.Scan(append([]any{&c.ID, &c.Tenant, &c.KBID, &c.DocumentID, &c.ParentID, &c.Level, &c.Index, &c.Content, &c.ContentHash,
		&c.VectorID, &c.Chapter, &c.ContentType, &tags, &c.Page, &c.TokenCount}, more...)...)
	switch {
	case err != nil || tags == "":
	case tags == "[]": // most chunks (what ApplyChunks writes for none): what Unmarshal gives, without its reflection
		c.Tags = []string{}
	default:
		err = json.Unmarshal([]byte(tags), &c.Tags)
	}
	return c, err
}

// maxChunkBytes is MEDIUMTEXT's limit with room to spare.
const maxChunkBytes = 8 << 20

func validateChunk(op, tenant, docID string, c *rag.Chunk) error {
	if err := validIDs(op, "chunk id", c.ID, "kb id", c.KBID); err != nil {
		return err
	}
	if c.Tenant != tenant || c.DocumentID != docID {
		return rag.Errorf(op, rag.KindInvalid, "chunk %s belongs to %s/%s, not %s/%s", c.ID, c.Tenant, c.DocumentID, tenant, docID)
	}
	if c.ParentID != "" {
		if err := validIDs(op, "parent id", c.ParentID); err != nil {
			return err
		}
	}
	if c.VectorID != "" {
		if err := validIDs(op, "vector id", c.VectorID); err != nil {
			return err
		}
	}
	if c.Level != rag.LevelParent && c.Level != rag.LevelChild {
		return rag.Errorf(op, rag.KindInvalid, "chunk %s: level %q", c.ID, c.Level)
	}
	if !validContentType[c.ContentType] {
		return rag.Errorf(op, rag.KindInvalid, "chunk %s: content type %q", c.ID, c.ContentType)
	}
	if len(c.Content) > maxChunkBytes || len(c.ContentHash) != 64 {
		return rag.Errorf(op, rag.KindInvalid, "chunk %s: content over %d bytes or content hash not 64 hex characters", c.ID, maxChunkBytes)
	}
	for _, t := range c.Tags {
		if err := rag.ValidateTag(t); err != nil {
			return rag.E(op, rag.KindInvalid, err)
		}
	}
	return nil
}

// ApplyChunks adds and removes chunks of one document in a single transaction: either every change lands
// or none does (a failed incremental update keeps the old chunks serving). Removing an id that does not
// exist is not an error; adding an id that exists is a Conflict.
func (s *DB) ApplyChunks(ctx context.Context, tenant, docID string, add []rag.Chunk, remove []string) error {
	const op = "sqldb.ApplyChunks"
	if err := validateApply(op, tenant, docID, add, remove); err != nil {
		return err
	}
	return s.inTx(ctx, op, func(tx *sql.Tx) error {
		stmt, err := s.prepareInsertChunk(ctx, tx)
		if err != nil {
			return err
		}
		defer stmt.Close()
		_, err = s.applyChunksTx(ctx, tx, stmt, op, tenant, docID, add, remove)
		return err
	})
}

// CommitDocuments applies several documents' chunk changes, writes their rows (the mutable fields, as
// UpdateDocument does) and bumps the version of every knowledge base they belong to once, all in one
// transaction: either every document of the batch lands or none does. It is how ingestion pays the cost
// of a commit once per batch instead of once per document. The same errors as ApplyChunks and
// UpdateDocument; NotFound when a document does not exist for tenant.
func (s *DB) CommitDocuments(ctx context.Context, tenant string, docs []rag.DocumentChunks) error {
	const op = "sqldb.CommitDocuments"
	for i := range docs {
		d := &docs[i]
		if d.Document.Tenant != tenant {
			return rag.Errorf(op, rag.KindInvalid, "document %s is not tenant %s's", d.Document.ID, tenant)
		}
		if err := validateDoc(op, &d.Document); err != nil {
			return err
		}
		if err := validateApply(op, tenant, d.Document.ID, d.Add, d.Remove); err != nil {
			return err
		}
	}
	now := ms(s.now())
	var deleted []string
	for i := range docs {
		if docs[i].Document.Status == rag.StatusDeleted {
			deleted = append(deleted, docs[i].Document.ID)
		}
	}
	var gen int64
	err := s.inTx(ctx, op, func(tx *sql.Tx) error {
		stmt, err := s.prepareInsertChunk(ctx, tx)
		if err != nil {
			return err
		}
		defer stmt.Close()
		kbs := map[string]bool{}
		for i := range docs {
			d := &docs[i].Document
			kb, err := s.applyChunksTx(ctx, tx, stmt, op, tenant, d.ID, docs[i].Add, docs[i].Remove)
			if err != nil {
				return err
			}
			kbs[kb] = true
			if _, err := tx.ExecContext(ctx, `UPDATE documents SET source_etag = ?, source_sequencer = ?, file_name = ?, file_type = ?,
		content_hash = ?, status = ?, error = ?, doc_version = ?, effective_date = ?, chunk_count = ?, stage_ms = ?, source_encoding = ?, ocr_note = ?, updated_at = ?
		WHERE tenant_id = ? AND id = ?`,
				d.SourceETag, d.SourceSequencer, d.FileName, d.FileType, d.ContentHash, d.Status, d.Error, d.DocVersion,
				d.EffectiveDate, d.ChunkCount, d.StageMillis, d.Encoding, d.OCRNote, now, d.Tenant, d.ID); err != nil {
				return err
			}
		}
		for _, kb := range slices.Sorted(maps.Keys(kbs)) { // sorted: two batches lock the rows in the same order
			if _, err := tx.ExecContext(ctx, `UPDATE knowledge_bases SET version = version + 1, updated_at = ? WHERE tenant_id = ? AND id = ?`,
				now, tenant, kb); err != nil {
				return err
			}
		}
		if len(deleted) > 0 { // documents leaving every filter's selection
			gen, err = s.bumpMetaGeneration(ctx, tx, tenant)
		}
		return err
	})
	if err != nil {
		return err
	}
	if len(deleted) > 0 {
		s.applyMeta(tenant, gen, markDeleted(deleted...))
	}
	for i := range docs {
		docs[i].Document.UpdatedAt = fromMS(now)
	}
	return nil
}

func validateApply(op, tenant, docID string, add []rag.Chunk, remove []string) error {
	if err := validIDs(op, "tenant", tenant, "document id", docID); err != nil {
		return err
	}
	for i := range add {
		if err := validateChunk(op, tenant, docID, &add[i]); err != nil {
			return err
		}
	}
	for _, id := range remove {
		if err := validIDs(op, "chunk id", id); err != nil {
			return err
		}
	}
	return nil
}

func (s *DB) prepareInsertChunk(ctx context.Context, tx *sql.Tx) (*sql.Stmt, error) {
	return tx.PrepareContext(ctx, `INSERT INTO chunks (`+chunkColumns+`, body_terms, title_terms, context_terms, body_len, title_len, context_len, search_terms) VALUES (`+placeholders(22)+`)`)
}

// applyChunksTx removes and adds one document's chunks inside tx and returns the document's knowledge
// base. NotFound when the document does not exist.
func (s *DB) applyChunksTx(ctx context.Context, tx *sql.Tx, stmt *sql.Stmt, op, tenant, docID string, add []rag.Chunk, remove []string) (string, error) {
	var kb string
	if err := tx.QueryRowContext(ctx, `SELECT kb_id FROM documents WHERE tenant_id = ? AND id = ?`, tenant, docID).Scan(&kb); err != nil {
		return "", s.classify(op, err)
	}
	for start := 0; start < len(remove); start += 500 {
		batch := remove[start:min(start+500, len(remove))]
		args := []any{tenant, docID}
		for _, id := range batch {
			args = append(args, id)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM chunks WHERE tenant_id = ? AND document_id = ? AND id IN (`+placeholders(len(batch))+`)`, args...); err != nil {
			return "", err
		}
	}
	// Only MySQL's keyword adapter reads the analysed terms; with SQLite the in-process BM25 index does
	// the keyword search, and analysing every child here too cost a fifth of CPU-only ingestion.
	terms := s.dialect.Name == "mysql"
	parents := map[string]string{}
	if terms {
		for _, c := range add {
			if c.Level == rag.LevelParent {
				parents[c.ID] = c.Content
			}
		}
	}
	for _, c := range add {
		if c.KBID != kb {
			return "", rag.Errorf(op, rag.KindInvalid, "chunk %s names kb %s, document is in %s", c.ID, c.KBID, kb)
		}
		tags := "[]"
		if len(c.Tags) > 0 {
			b, _ := json.Marshal(c.Tags)
			tags = string(b)
		}
		// children carry their analyzed terms for the MySQL keyword adapter
		var body, title, context, search, bl, tl, cl any
		if terms && c.Level == rag.LevelChild {
			f := bm25.Analyze(c.Content, parents[c.ParentID])
			body, title, context = strings.Join(f.Body, " "), strings.Join(f.Title, " "), strings.Join(f.Context, " ")
			bl, tl, cl = len(f.Body), len(f.Title), len(f.Context) // field lengths: the corpus statistics need them
			all := slices.Concat(f.Title, f.Body, f.Context)
			tokens := make([]string, len(all))
			for i, t := range all {
				tokens[i] = bm25.Token(t)
			}
			search = strings.Join(tokens, " ")
		}
		if _, err := stmt.ExecContext(ctx, c.ID, tenant, c.KBID, docID, c.ParentID, c.Level, c.Index, c.Content, c.ContentHash,
			c.VectorID, c.Chapter, c.ContentType, tags, c.Page, c.TokenCount, body, title, context, bl, tl, cl, search); err != nil {
			return "", err
		}
	}
	return kb, nil
}

// ListChunks returns a document's chunks ordered by chunk_index, then level, then id (empty when none).
func (s *DB) ListChunks(ctx context.Context, tenant, docID string) ([]rag.Chunk, error) {
	const op = "sqldb.ListChunks"
	if err := validIDs(op, "tenant", tenant, "document id", docID); err != nil {
		return nil, err
	}
	// on the writers' pool: ingestion asks it of every document it writes, and the look-ups' pool reads
	// through a memory map of the file that ingestion is growing
	rows, err := s.db.QueryContext(ctx, `SELECT `+chunkColumns+` FROM chunks WHERE tenant_id = ? AND document_id = ?
		ORDER BY chunk_index, level, id`, tenant, docID)
	return s.scanChunks(op, rows, err)
}

// GetChunks returns the tenant's chunks with these ids, in the order of ids; ids that do not exist (or
// belong to another tenant) are left out.
func (s *DB) GetChunks(ctx context.Context, tenant string, ids []string) ([]rag.Chunk, error) {
	const op = "sqldb.GetChunks"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	for _, id := range ids {
		if err := validIDs(op, "chunk id", id); err != nil {
			return nil, err
		}
	}
	byID := map[string]rag.Chunk{}
	for start := 0; start < len(ids); start += 500 {
		batch := ids[start:min(start+500, len(ids))]
		args := []any{tenant}
		for _, id := range batch {
			args = append(args, id)
		}
		// "+tenant_id" keeps SQLite's planner on the primary key (it would otherwise scan the tenant's
		// index: every row of a single-tenant database); MySQL reads it as the same comparison.
		cs, err := s.queryChunks(ctx, op, `SELECT `+chunkColumns+` FROM chunks WHERE id IN (`+placeholders(len(batch))+`) AND +tenant_id = ?`, append(args[1:], tenant)...)
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			byID[c.ID] = c
		}
	}
	out := make([]rag.Chunk, 0, len(byID))
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
			delete(byID, id) // a repeated id is returned once
		}
	}
	return out, nil
}

// CountChunks counts the tenant's chunks inside f (kb ids and document ids; tags are ignored) at one
// level ("" counts both levels).
func (s *DB) CountChunks(ctx context.Context, f rag.Filter, level string) (int, error) {
	const op = "sqldb.CountChunks"
	if err := f.Validate(); err != nil {
		return 0, rag.E(op, rag.KindInvalid, err)
	}
	q := `SELECT COUNT(*) FROM chunks WHERE tenant_id = ?`
	args := []any{f.Tenant}
	if len(f.KBIDs) > 0 {
		q += ` AND kb_id IN (` + placeholders(len(f.KBIDs)) + `)`
		for _, id := range f.KBIDs {
			args = append(args, id)
		}
	}
	if len(f.DocumentIDs) > 0 {
		q += ` AND document_id IN (` + placeholders(len(f.DocumentIDs)) + `)`
		for _, id := range f.DocumentIDs {
			args = append(args, id)
		}
	}
	if level != "" {
		if level != rag.LevelParent && level != rag.LevelChild {
			return 0, rag.Errorf(op, rag.KindInvalid, "level %q", level)
		}
		q += ` AND level = ?`
		args = append(args, level)
	}
	var n int
	err := s.db.QueryRowContext(ctx, q, args...).Scan(&n)
	return n, s.classify(op, err)
}

// queryChunks runs a hot chunk look-up (readQuery's pool and statements).
func (s *DB) queryChunks(ctx context.Context, op, q string, args ...any) ([]rag.Chunk, error) {
	rows, err := s.readQuery(ctx, q, args...)
	return s.scanChunks(op, rows, err)
}

// scanChunks reads a chunk query's rows (or returns its error).
func (s *DB) scanChunks(op string, rows *sql.Rows, err error) ([]rag.Chunk, error) {
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []rag.Chunk{}
	for rows.Next() {
		c, err := scanChunk(rows)
		if err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, c)
	}
	return out, s.classify(op, rows.Err())
}
