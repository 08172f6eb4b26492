package httpapi

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
)

// DocumentMatcher resolves a metadata filter to the documents that pass it (sqldb.DB); the Library
// implements it where documents carry metadata.
type DocumentMatcher interface {
	MatchDocuments(ctx context.Context, tenant string, kbIDs []string, f *rag.MetaFilter) ([]string, error)
}

// MetadataReader reads a document's metadata (sqldb.DB).
type MetadataReader interface {
	GetDocumentMetadata(ctx context.Context, tenant, docID string) (rag.Metadata, error)
}

// applyMetaFilter narrows q to the documents of its knowledge bases whose metadata passes the
// request's "filter" (rag.MetaFilter's JSON form) and that the principal may read (their access
// lists, shared/access): the two are ANDed into the one document-id restriction the retrieval legs
// apply before ranking. none is true when no document passes: the caller answers with no results
// rather than an unrestricted search. Without a filter and with nothing denied, q is left as is.
// Invalid for a malformed filter.
func (l *library) applyMetaFilter(ctx context.Context, p rag.Principal, raw json.RawMessage, q *retrieve.Query) (none bool, err error) {
	none, _, err = l.metaRestrict(ctx, p, raw, q)
	return none, err
}

// metaRestrict is applyMetaFilter, returning also the documents of the scope p may not read (nil:
// none), which filter inference leaves out of the values it may infer.
func (l *library) metaRestrict(ctx context.Context, p rag.Principal, raw json.RawMessage, q *retrieve.Query) (none bool, denied map[string]bool, err error) {
	f, err := rag.ParseMetaFilter(raw)
	if err != nil {
		return false, nil, err
	}
	m, isMatcher := l.lib.(DocumentMatcher)
	if f != nil && !isMatcher {
		return false, nil, rag.Errorf("httpapi", rag.KindInvalid, "metadata filters are not available here")
	}
	if f == nil && !l.enforcesAccess(p) {
		return false, nil, nil
	}
	kbs := q.Filter.KBIDs
	if len(kbs) == 0 { // every knowledge base of the tenant the caller may read
		all, err := l.lib.ListKBs(ctx, p.Tenant)
		if err != nil {
			return false, nil, err
		}
		for _, kb := range all {
			kbs = append(kbs, kb.ID)
		}
		if len(kbs) == 0 {
			return f != nil, nil, nil
		}
	}
	denied, err = l.denied(ctx, p, kbs)
	if err != nil {
		return false, nil, err
	}
	if f == nil && len(denied) == 0 {
		return false, nil, nil // nothing restricted here: today's scope, and the cache key without a restriction
	}
	var ids []string
	if isMatcher {
		// MatchDocuments with no filter is every live document of the knowledge bases
		if ids, err = m.MatchDocuments(ctx, p.Tenant, kbs, f); err != nil {
			return false, nil, err
		}
	} else if ids, err = l.liveDocuments(ctx, p.Tenant, kbs); err != nil {
		return false, nil, err
	}
	// a new slice: MatchDocuments' answer is shared by every query of the same filter
	var keep []string
	for _, id := range ids {
		if denied[id] || len(q.Filter.DocumentIDs) > 0 && !slices.Contains(q.Filter.DocumentIDs, id) {
			continue // not readable by the caller, or not among the documents the caller picked
		}
		keep = append(keep, id)
	}
	// the user's filter travels beside its documents: an index keeping metadata on its rows (Milvus) may
	// search by it instead of a long id list, the ids (which also carry the access lists) staying the
	// authority
	q.Filter.DocumentIDs, q.Filter.Meta = keep, f
	return len(keep) == 0, denied, nil
}

// liveDocuments lists the ids of the knowledge bases' documents not being deleted, for a library
// without a metadata matcher.
func (l *library) liveDocuments(ctx context.Context, tenant string, kbs []string) ([]string, error) {
	var ids []string
	for _, kb := range kbs {
		docs, err := l.lib.ListDocuments(ctx, tenant, kb, "")
		if err != nil {
			return nil, err
		}
		for _, d := range withoutDeleted(docs) {
			ids = append(ids, d.ID)
		}
	}
	return ids, nil
}

// docMetadata is a document's metadata for GET /api/documents/{id}; empty where none is kept.
func (l *library) docMetadata(ctx context.Context, tenant, docID string) rag.Metadata {
	if r, ok := l.lib.(MetadataReader); ok {
		if m, err := r.GetDocumentMetadata(ctx, tenant, docID); err == nil {
			return m
		}
	}
	return rag.Metadata{}
}

// emptyResult is a search that no document can answer (a filter nothing passes).
func emptyResult() *retrieve.Result {
	return &retrieve.Result{Keyword: []rag.Hit{}, Vector: []rag.Hit{}, Fused: []rag.Hit{}, StageMS: map[string]int64{}}
}

// restrictByFilter limits a question to the documents whose metadata passes raw and that p may read
// (Request.Restrict), within the request's knowledge bases (already restricted to what the caller
// may read). NotFound, saying so, when no document passes: an empty restriction would mean the whole
// scope.
func (l *library) restrictByFilter(ctx context.Context, p rag.Principal, raw json.RawMessage, req *answer.Request) error {
	q := retrieve.Query{Filter: rag.Filter{Tenant: req.Tenant, KBIDs: req.KBIDs}}
	none, denied, err := l.metaRestrict(ctx, p, raw, &q)
	switch {
	case err != nil:
		return err
	case none && len(raw) > 0 && string(raw) != "null":
		return rag.Errorf("httpapi", rag.KindNotFound, "no document in the knowledge bases asked passes the filter")
	case none:
		return rag.Errorf("httpapi", rag.KindNotFound, "no document in the knowledge bases asked is one you may read")
	}
	// the filter travels beside its documents, to the vector leg (answer.Request.Filter)
	req.Restrict, req.Filter = q.Filter.DocumentIDs, q.Filter.Meta
	// Restrict leaves out what the caller may not read: filter inference then describes only Restrict
	req.AccessRestricted = len(denied) > 0
	if req.Filter != nil { // filter inference leaves the user's keys alone
		req.FilterKeys = req.Filter.Keys()
	}
	return nil
}
