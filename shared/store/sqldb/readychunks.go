package sqldb

import (
	"context"
	"database/sql"
	"sync"

	"github.com/docmind/docmind/shared/rag"
)

// GetReadyChunks returns the place and text of the tenant's chunks with these ids whose document is
// ready, in the order of ids, each once, and the file name of each of their documents. It is the
// retrieval chain's look-up of its fused candidates: one query joining chunks to documents where
// GetChunks and GetDocuments took two (at 100k chunks the second was as dear as the first:
// docs/bench/million.md). A chunk whose document is missing or not ready is left out, as are ids that
// do not exist or belong to another tenant.
func (s *DB) GetReadyChunks(ctx context.Context, tenant string, ids []string) ([]rag.ChunkText, map[string]string, error) {
	const op = "sqldb.GetReadyChunks"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, nil, err
	}
	for _, id := range ids {
		if err := validIDs(op, "chunk id", id); err != nil {
			return nil, nil, err
		}
	}
	at := make(map[string]int32, len(ids)) // an id's first place in ids, where its row goes
	for i, id := range ids {
		if _, seen := at[id]; !seen {
			at[id] = int32(i)
		}
	}
	placed := make([]rag.ChunkText, len(ids))
	found := make([]bool, len(ids))
	names := map[string]string{}
	for start := 0; start < len(ids); start += 500 {
		batch := ids[start:min(start+500, len(ids))]
		args := make([]any, 0, len(batch)+2)
		for _, id := range batch {
			args = append(args, id)
		}
		// "+c.tenant_id" keeps SQLite's planner on the chunks' primary key, as in GetChunks, and CROSS JOIN
		// makes chunks the outer loop there (each document is then read by its primary key; MySQL reads
		// CROSS JOIN as an inner join and plans it itself)
		// only the columns evidence uses: decoding the other eight cost as much as finding the rows
		q := `SELECT c.id, c.kb_id, c.document_id, c.parent_id, c.chapter, c.page, c.content, d.file_name FROM chunks c CROSS JOIN documents d
			WHERE c.id IN (` + placeholders(len(batch)) + `) AND +c.tenant_id = ? AND d.id = c.document_id AND d.tenant_id = ? AND d.status = '` + rag.StatusReady + `'`
		rows, err := s.readQuery(ctx, q, append(args, tenant, tenant)...)
		if err != nil {
			return nil, nil, s.classify(op, err)
		}
		for rows.Next() {
			var name string
			var c rag.ChunkText
			if err := rows.Scan(&c.ID, &c.KBID, &c.DocumentID, &c.ParentID, &c.Chapter, &c.Page, &c.Content, &name); err != nil {
				rows.Close()
				return nil, nil, s.classify(op, err)
			}
			if i, ok := at[c.ID]; ok {
				placed[i], found[i] = c, true
			}
			names[c.DocumentID] = name
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, nil, s.classify(op, err)
		}
	}
	out := placed[:0] // compacted in place: a row moves only to a place at or before its own
	for i := range placed {
		if found[i] {
			out = append(out, placed[i])
		}
	}
	return out, names, nil
}

// maxReadStmts bounds the prepared read statements kept: one per distinct query text, and the texts
// differ by their number of placeholders (the retrieval chain asks for 60 and up to 8 ids a query).
const maxReadStmts = 64

// readStmts keeps prepared statements of the hot read queries (the retrieval chain's look-ups). SQLite
// parses and plans a statement every time it is prepared, a tenth of a look-up's cost at 100k chunks; a
// *sql.Stmt is prepared once per pooled connection and reused. Only SQLite keeps them (MySQL's prepared
// statements are a server resource per connection, and the driver's round trips are what count there).
type readStmts struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// readQuery runs a read query on ReadSQL's pool, through a cached prepared statement where the store
// keeps them, and directly otherwise (MySQL, or once maxReadStmts are kept).
func (s *DB) readQuery(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	if s.dialect.Name != "sqlite" {
		return s.ReadSQL().QueryContext(ctx, q, args...)
	}
	s.reads.mu.Lock()
	st, ok := s.reads.m[q]
	if !ok && len(s.reads.m) < maxReadStmts {
		var err error
		if st, err = s.ReadSQL().PrepareContext(ctx, q); err != nil {
			s.reads.mu.Unlock()
			return nil, err
		}
		if s.reads.m == nil {
			s.reads.m = map[string]*sql.Stmt{}
		}
		s.reads.m[q] = st
		ok = true
	}
	s.reads.mu.Unlock()
	if !ok {
		return s.ReadSQL().QueryContext(ctx, q, args...)
	}
	return st.QueryContext(ctx, args...)
}

// closeReads closes the kept statements (Close).
func (s *DB) closeReads() {
	s.reads.mu.Lock()
	defer s.reads.mu.Unlock()
	for _, st := range s.reads.m {
		st.Close()
	}
	s.reads.m = nil
}
