package httpapi

import (
	"context"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/rag"
)

// Per-document access lists (shared/access): every read path asks denied for the documents of its
// knowledge bases the caller may not read, and removes them. The question and search paths do it in
// applyMetaFilter (the one restriction retrieval, both legs and the semantic cache key on), the
// document paths in docOf and listDocs.

// enforcesAccess reports whether access lists can narrow what p reads: not for a tenant admin (who
// reads everything; direct reads of restricted documents are audited) and not where the Library
// keeps no connectors.
func (l *library) enforcesAccess(p rag.Principal) bool {
	_, ok := l.lib.(access.Store)
	return ok && !p.IsAdmin()
}

// denied is the set of the documents of kbs that p may not read (nil: none).
func (l *library) denied(ctx context.Context, p rag.Principal, kbs []string) (map[string]bool, error) {
	st, ok := l.lib.(access.Store)
	if !ok {
		return nil, nil
	}
	return access.Guard{Store: st, Map: l.h.d.AccessMap}.Denied(ctx, p, kbs)
}

// checkReadable is NotFound for a document p may not read, like a missing one: a restricted page's
// existence is not disclosed either. An admin's read of a document that its list restricts is audited.
func (l *library) checkReadable(ctx context.Context, p rag.Principal, d rag.Document) error {
	if p.IsAdmin() {
		// whether a member with no identity but "anyone" would be refused: a restricted document
		if restricted, err := l.denied(ctx, rag.Principal{Tenant: p.Tenant, Role: rag.RoleMember}, []string{d.KBID}); err == nil && restricted[d.ID] {
			l.h.audit(ctx, p, "document.read_restricted", d.ID, d.FileName)
		}
		return nil
	}
	denied, err := l.denied(ctx, p, []string{d.KBID})
	if err != nil {
		return err
	}
	if denied[d.ID] {
		return rag.Errorf("httpapi", rag.KindNotFound, "no document %q", d.ID)
	}
	return nil
}

// readableDocs drops the documents p may not read from one knowledge base's list.
func (l *library) readableDocs(ctx context.Context, p rag.Principal, kbID string, docs []rag.Document) ([]rag.Document, error) {
	denied, err := l.denied(ctx, p, []string{kbID})
	if err != nil || len(denied) == 0 {
		return docs, err
	}
	out := docs[:0:0]
	for _, d := range docs {
		if !denied[d.ID] {
			out = append(out, d)
		}
	}
	return out, nil
}

// accessInfo is a document's access for GET /api/documents/{id}; nil for an upload, or where it
// cannot be read (the document itself was readable: its access list is detail, logged).
func (l *library) accessInfo(ctx context.Context, tenant string, d rag.Document) *access.Info {
	st, ok := l.lib.(access.Store)
	if !ok {
		return nil
	}
	info, err := access.Guard{Store: st}.Of(ctx, tenant, d)
	if err != nil {
		l.h.d.Logger.Warn("reading a document's access list failed", "document", d.ID, "err", err)
	}
	return info
}
