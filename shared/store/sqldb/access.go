package sqldb

import (
	"context"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// Per-document access lists (shared/access) read what they need and no more: every request of a member
// whose knowledge bases have an enforcing connector asks them, so neither hydrates whole rows (a web
// crawl's item state holds every page's links).

// ConnectorDocuments returns the ids of a knowledge base's documents not being deleted whose source URI
// starts with prefix (a connector's, connector/<name>/), by source URI.
func (s *DB) ConnectorDocuments(ctx context.Context, tenant, kbID, prefix string) (map[string]string, error) {
	const op = "sqldb.ConnectorDocuments"
	if err := validIDs(op, "tenant", tenant, "kb id", kbID); err != nil {
		return nil, err
	}
	// LIKE on the fixed "connector/" only: a connector's name may hold _ (a LIKE wildcard); the exact
	// prefix is checked here
	rows, err := s.db.QueryContext(ctx, `SELECT id, source_uri FROM documents WHERE tenant_id = ? AND kb_id = ? AND status <> ? AND source_uri LIKE 'connector/%'`,
		tenant, kbID, rag.StatusDeleted)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, uri string
		if err := rows.Scan(&id, &uri); err != nil {
			return nil, s.classify(op, err)
		}
		if strings.HasPrefix(uri, prefix) {
			out[uri] = id
		}
	}
	return out, s.classify(op, rows.Err())
}

// ConnectorRecords returns each item's record (connector_items.metadata) of a connector, by source URI.
func (s *DB) ConnectorRecords(ctx context.Context, tenant, connector string) (map[string]string, error) {
	const op = "sqldb.ConnectorRecords"
	if err := validConnector(op, tenant, connector); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT source_uri, metadata FROM connector_items WHERE tenant_id = ? AND connector = ?`, tenant, connector)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var uri, rec string
		if err := rows.Scan(&uri, &rec); err != nil {
			return nil, s.classify(op, err)
		}
		out[uri] = rec
	}
	return out, s.classify(op, rows.Err())
}
