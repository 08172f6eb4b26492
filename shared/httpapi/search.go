package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
)

// Searcher runs the retrieval chain alone, the one the chat pipeline uses (answer.Pipeline.Retrieve).
type Searcher interface {
	Retrieve(ctx context.Context, q retrieve.Query) (*retrieve.Result, error)
}

// searchRequest is the body of POST /api/search.
type searchRequest struct {
	Query string `json:"query"`
	// KBs names the knowledge bases to search, by id or name; empty searches all of the caller's.
	KBs []string `json:"kbs,omitempty"`
	// Filter restricts the search to documents whose metadata passes it (rag.MetaFilter's JSON form).
	Filter json.RawMessage `json:"filter,omitempty"`
}

// maxSearchRunes bounds a retrieval test's query, like a question.
const maxSearchRunes = 2000

// search is the page's retrieval test: the query through the retrieval chain only (no model, nothing
// stored), answered with every stage's candidates and scores, the JSON that `docmind search --json`
// prints (retrieve.Result).
func (l *library) search(w http.ResponseWriter, r *http.Request) {
	p, ok := l.h.principal(w, r)
	if !ok {
		return
	}
	var in searchRequest
	if err := decodeBody(w, r, &in, `{"query": ..., "kbs": [...]}`); err != nil {
		l.fail(w, r, err)
		return
	}
	q, err := l.searchQuery(r.Context(), p, in)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	none, err := l.applyMetaFilter(r.Context(), p, in.Filter, &q)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	admitted, limitsDown := l.h.admit(w, r, p)
	if !admitted {
		return
	}
	if none {
		WriteJSON(w, http.StatusOK, emptyResult())
		return
	}
	res, err := l.h.d.Search.Retrieve(r.Context(), q)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	if limitsDown {
		res.Degraded = append(res.Degraded, "limits") // limits failed open: the result says so
	}
	WriteJSON(w, http.StatusOK, res)
}

// searchQuery checks the query and resolves every named knowledge base within tenant (NotFound for
// another tenant's).
func (l *library) searchQuery(ctx context.Context, p rag.Principal, in searchRequest) (retrieve.Query, error) {
	tenant := p.Tenant
	text := strings.TrimSpace(in.Query)
	switch {
	case text == "":
		return retrieve.Query{}, rag.Errorf("httpapi", rag.KindInvalid, "query is empty")
	case utf8.RuneCountInString(text) > maxSearchRunes:
		return retrieve.Query{}, rag.Errorf("httpapi", rag.KindInvalid, "query is longer than %d characters", maxSearchRunes)
	case len(in.KBs) > maxChatKBs:
		return retrieve.Query{}, rag.Errorf("httpapi", rag.KindInvalid, "at most %d knowledge bases per search", maxChatKBs)
	}
	q := retrieve.Query{Text: text, Filter: rag.Filter{Tenant: tenant}}
	roles, err := l.h.roles(ctx, p)
	if err != nil {
		return q, err
	}
	for _, key := range in.KBs {
		kb, err := l.resolveKB(ctx, tenant, key)
		if err == nil {
			err = requireKB(roles, kb, rag.KBReader)
		}
		if err != nil {
			return q, err
		}
		q.Filter.KBIDs = append(q.Filter.KBIDs, kb.ID)
	}
	// the same scoping as a question: none named is every knowledge base the caller may read
	req := answer.Request{Tenant: tenant, KBIDs: q.Filter.KBIDs}
	if err := l.restrictKBs(ctx, p, &req); err != nil {
		return q, err
	}
	q.Filter.KBIDs = req.KBIDs
	return q, nil
}
