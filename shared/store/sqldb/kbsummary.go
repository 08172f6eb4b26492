package sqldb

import (
	"context"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

// MaxKBDescription is the longest knowledge base description, in characters: a line or two that says
// what the knowledge base holds, shown beside its name.
const MaxKBDescription = 500

// ValidateKBDescription accepts an empty description or up to MaxKBDescription characters of UTF-8
// without control characters (tabs and line breaks included: the page shows it on one line).
func ValidateKBDescription(d string) error {
	const op = "sqldb.ValidateKBDescription"
	if !utf8.ValidString(d) {
		return rag.Errorf(op, rag.KindInvalid, "description must be UTF-8 text")
	}
	if n := utf8.RuneCountInString(d); n > MaxKBDescription {
		return rag.Errorf(op, rag.KindInvalid, "description is %d characters long; the limit is %d", n, MaxKBDescription)
	}
	for _, r := range d {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return rag.Errorf(op, rag.KindInvalid, "description has a control character (a line break or tab included): write it on one line")
		}
	}
	return nil
}

// CountDocumentsByKB returns how many documents each of the tenant's knowledge bases holds (by kb id;
// absent: none), deleted ones not counted: what each knowledge base's document list shows. One query for
// the whole list, instead of listing every knowledge base's documents to count them.
func (s *DB) CountDocumentsByKB(ctx context.Context, tenant string) (map[string]int, error) {
	const op = "sqldb.CountDocumentsByKB"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT kb_id, COUNT(*) FROM documents WHERE tenant_id = ? AND status <> ? GROUP BY kb_id`,
		tenant, rag.StatusDeleted)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var kb string
		var n int
		if err := rows.Scan(&kb, &n); err != nil {
			return nil, s.classify(op, err)
		}
		out[kb] = n
	}
	return out, s.classify(op, rows.Err())
}
