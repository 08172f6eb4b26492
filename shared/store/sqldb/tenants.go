package sqldb

import "context"

// ListDataTenants returns every tenant that owns a knowledge base or a document, sorted; empty when none.
// The consistency check walks them (a scheduled run has no tenant of its own).
func (s *DB) ListDataTenants(ctx context.Context) ([]string, error) {
	const op = "sqldb.ListDataTenants"
	rows, err := s.db.QueryContext(ctx, `SELECT tenant_id FROM knowledge_bases UNION SELECT tenant_id FROM documents ORDER BY 1`)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			return nil, s.classify(op, err)
		}
		out = append(out, t)
	}
	return out, s.classify(op, rows.Err())
}
