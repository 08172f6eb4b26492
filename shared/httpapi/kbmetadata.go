package httpapi

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/docmind/docmind/shared/rag"
)

// metadataDescriber describes a knowledge base's metadata keys and values, less the documents a
// caller may not read (sqldb.DB; nothing excepted: the kept description every reader shares).
type metadataDescriber interface {
	MetadataFacetsExcept(ctx context.Context, tenant string, kbIDs []string, top int, except []string) ([]rag.MetaFacet, error)
}

// Caps of GET /api/kbs/{kb}/metadata: the keys with most documents, and the most common values of
// each (top=N asks for fewer or more, up to maxFacetValues).
const (
	maxFacetKeys     = 100
	defaultFacetTop  = 10
	maxFacetValues   = 50
	maxFacetValueLen = 200
)

// kbMetadata answers GET /api/kbs/{kb}/metadata for readers of the knowledge base: its documents'
// metadata keys with their types, document counts and most common values, for the page's filter
// suggestions. Values come from documents and connectors (untrusted text): JSON-escaped here, set as
// text by the page; a value longer than maxFacetValueLen runes is left out (a suggestion is clicked
// whole, and a value that long is no category). Only the documents the caller may read are described
// (their access lists, shared/access): a value held only by a page the caller may not read is neither
// suggested nor counted; an admin, who reads everything, sees every document's.
func (l *library) kbMetadata(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := l.kbAccess(w, r, rag.KBReader)
	if !ok {
		return
	}
	tenant := p.Tenant
	d, ok := l.lib.(metadataDescriber)
	if !ok {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "metadata is not kept here"))
		return
	}
	top := defaultFacetTop
	if s := r.URL.Query().Get("top"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxFacetValues {
			l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "top must be a whole number from 1 to %d", maxFacetValues))
			return
		}
		top = n
	}
	denied, err := l.denied(r.Context(), p, []string{kb.ID})
	if err != nil {
		l.fail(w, r, err)
		return
	}
	facets, err := d.MetadataFacetsExcept(r.Context(), tenant, []string{kb.ID}, top, slices.Sorted(maps.Keys(denied)))
	if err != nil {
		l.fail(w, r, err)
		return
	}
	truncated := len(facets) > maxFacetKeys
	if truncated {
		facets = facets[:maxFacetKeys]
	}
	for i := range facets {
		vs := facets[i].Values[:0]
		for _, v := range facets[i].Values {
			if s, ok := v.Value.(string); !ok || len([]rune(s)) <= maxFacetValueLen {
				vs = append(vs, v)
			}
		}
		facets[i].Values = vs
	}
	WriteJSON(w, http.StatusOK, map[string]any{"kb": kb.ID, "keys": facets, "truncated": truncated})
}
