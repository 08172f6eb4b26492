package httpapi

import (
	"context"
	"strings"
)

// docCounter counts each knowledge base's documents in one query (sqldb.DB). A Library without it has
// its knowledge bases' documents listed to count them.
type docCounter interface {
	CountDocumentsByKB(ctx context.Context, tenant string) (map[string]int, error)
}

// countDocuments fills in each listed knowledge base's document count (deleted documents not counted,
// as the document list shows none) and its description, always present, "" when it has none: the page
// shows both beside each name.
func (l *library) countDocuments(ctx context.Context, tenant string, kbs []kbView) error {
	var counts map[string]int
	if c, ok := l.lib.(docCounter); ok {
		var err error
		if counts, err = c.CountDocumentsByKB(ctx, tenant); err != nil {
			return err
		}
	}
	for i := range kbs {
		kbs[i].Desc = kbs[i].KnowledgeBase.Description
		if counts != nil {
			kbs[i].Documents = counts[kbs[i].ID]
			continue
		}
		docs, err := l.lib.ListDocuments(ctx, tenant, kbs[i].ID, "")
		if err != nil {
			return err
		}
		kbs[i].Documents = len(withoutDeleted(docs))
	}
	return nil
}

// kbDescription is a new knowledge base's description as given, surrounding spaces removed; the store
// checks its length and characters (sqldb.ValidateKBDescription) and refuses it with a 400 saying why.
func kbDescription(d string) string { return strings.TrimSpace(d) }
