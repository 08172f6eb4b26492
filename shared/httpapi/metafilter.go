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
// request's "filter" (rag.MetaFilter's JSON form). The retrieval legs then restrict by document id
// before ranking. none is true when no document passes: the caller answers with no results rather
// than an unrestricted search. Invalid for a malformed filter.
func (l *library) applyMetaFilter(ctx context.Context, tenant string, raw json.RawMessage, q *retrieve.Query) (none bool, err error) {
	f, err := rag.ParseMetaFilter(raw)
	if err != nil || f == nil {
		return false, err
	}
	m, ok := l.lib.(DocumentMatcher)
	if !ok {
		return false, rag.Errorf("httpapi", rag.KindInvalid, "metadata filters are not available here")
	}
	kbs := q.Filter.KBIDs
	if len(kbs) == 0 { // every knowledge base of the tenant the caller may read
		all, err := l.lib.ListKBs(ctx, tenant)
		if err != nil {
			return false, err
		}
		for _, kb := range all {
			kbs = append(kbs, kb.ID)
		}
		if len(kbs) == 0 {
			return true, nil
		}
	}
	ids, err := m.MatchDocuments(ctx, tenant, kbs, f)
	if err != nil {
		return false, err
	}
	if len(q.Filter.DocumentIDs) > 0 { // documents picked by the caller: both restrictions hold
		// a new slice: MatchDocuments' answer is shared by every query of the same filter
		var both []string
		for _, id := range ids {
			if slices.Contains(q.Filter.DocumentIDs, id) {
				both = append(both, id)
			}
		}
		ids = both
	}
	// the filter travels beside its documents: an index keeping metadata on its rows (Milvus) may
	// search by it instead of a long id list, the ids staying the authority
	q.Filter.DocumentIDs, q.Filter.Meta = ids, f
	return len(ids) == 0, nil
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

// restrictByFilter limits a question to the documents whose metadata passes raw (Request.Restrict),
// within the request's knowledge bases (already restricted to what the caller may read). NotFound,
// saying so, when no document passes: an empty restriction would mean the whole scope.
func (l *library) restrictByFilter(ctx context.Context, raw json.RawMessage, req *answer.Request) error {
	q := retrieve.Query{Filter: rag.Filter{Tenant: req.Tenant, KBIDs: req.KBIDs}}
	none, err := l.applyMetaFilter(ctx, req.Tenant, raw, &q)
	switch {
	case err != nil:
		return err
	case none:
		return rag.Errorf("httpapi", rag.KindNotFound, "no document in the knowledge bases asked passes the filter")
	}
	// the filter travels beside its documents, to the vector leg (answer.Request.Filter)
	req.Restrict, req.Filter = q.Filter.DocumentIDs, q.Filter.Meta
	if req.Filter != nil { // filter inference leaves the user's keys alone
		req.FilterKeys = req.Filter.Keys()
	}
	return nil
}
