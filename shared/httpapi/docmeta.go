package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// MetadataEditor records editors' metadata edits (sqldb.DB): set keys and removed keys that stay over
// whatever the document's sources say.
type MetadataEditor interface {
	EditDocumentMetadata(ctx context.Context, tenant, kbID, docID string, set rag.Metadata, remove []string) (rag.Metadata, error)
}

// patchDocMetadata answers PATCH /api/documents/{id}/metadata: the body is a JSON merge patch of the
// document's metadata (RFC 7396: {"team": "legal", "draft": null} sets team and removes draft),
// validated with the metadata rules (400 naming every bad key or value). Editors only; audited with
// the keys changed; 200 with the document's metadata after the change. The edit stays over every
// later re-index or sync of the document (docs/metadata-filters.md).
func (l *library) patchDocMetadata(w http.ResponseWriter, r *http.Request) {
	p, d, ok := l.docAccess(w, r, rag.KBEditor)
	if !ok {
		return
	}
	ed, isEditor := l.lib.(MetadataEditor)
	if !isEditor {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "metadata cannot be edited here"))
		return
	}
	var patch map[string]json.RawMessage
	if err := decodeBody(w, r, &patch, `a JSON object of metadata keys, each a value to set or null to remove`); err != nil {
		l.fail(w, r, err)
		return
	}
	if len(patch) == 0 {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "the patch changes nothing: name a key to set or remove"))
		return
	}
	set, remove := rag.Metadata{}, []string{}
	for k, raw := range patch {
		if string(bytes.TrimSpace(raw)) == "null" {
			remove = append(remove, k)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "%s: not JSON", k))
			return
		}
		set[k] = v
	}
	m, err := ed.EditDocumentMetadata(r.Context(), p.Tenant, d.KBID, d.ID, set, remove)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	slices.Sort(remove)
	setKeys := make([]string, 0, len(set))
	for k := range set {
		setKeys = append(setKeys, k)
	}
	slices.Sort(setKeys)
	l.h.audit(r.Context(), p, "document.metadata", d.ID, "set ["+strings.Join(setKeys, ", ")+"] removed ["+strings.Join(remove, ", ")+"]")
	WriteJSON(w, http.StatusOK, map[string]rag.Metadata{"metadata": m})
}
