package ingest

import (
	"context"
	"strconv"
	"strings"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// MetadataWriter keeps documents' key/value metadata (sqldb.DB; docs/metadata-filters.md).
type MetadataWriter interface {
	SetDocumentMetadata(ctx context.Context, tenant, kbID, docID string, m rag.Metadata) error
}

var _ MetadataWriter = (*sqldb.DB)(nil)

// writeMeta records a document's front matter as its metadata when the relational store keeps
// metadata: numbers become numbers (so a range filter works on "year: 2025"), "tags" a list, keys a
// filter cannot name are left out. It replaces what an earlier version of the file set. Best effort:
// the document is indexed either way, and a failure is logged.
func (s *Stages) writeMeta(ctx context.Context, d Doc, fm map[string]string) {
	w, ok := s.Records.(MetadataWriter)
	if !ok {
		return
	}
	m := rag.Metadata{}
	for k, v := range fm {
		if !rag.ValidMetaKey(k) || v == "" {
			continue
		}
		switch {
		case k == "tags":
			var tags []string
			for _, t := range strings.Split(strings.Trim(v, "[]"), ",") {
				if t = strings.Trim(strings.TrimSpace(t), `"'`); t != "" {
					tags = append(tags, t)
				}
			}
			m[k] = tags
		default:
			// a number only when it reads back as written: "1.10" (a version) and "1e3" stay text
			if n, err := strconv.ParseFloat(v, 64); err == nil && strconv.FormatFloat(n, 'f', -1, 64) == v {
				m[k] = n
			} else {
				m[k] = v
			}
		}
	}
	if err := w.SetDocumentMetadata(ctx, d.Tenant, d.KBID, d.DocumentID, m); err != nil && s.Log != nil {
		s.Log.Warn("document metadata not written", "document", d.DocumentID, "err", err)
	}
}
