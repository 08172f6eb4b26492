package answer

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// scopeDocs is the document restriction retrieval applies: the selected documents (SELECTED_DOC), or
// the documents a metadata filter lets through (Request.Restrict), or, with both, the selected ones
// that pass; when none of them passes, the filter's documents, so that nothing outside the filter is
// ever read.
func scopeDocs(req Request) []string {
	switch {
	case len(req.Restrict) == 0:
		return req.DocumentIDs
	case len(req.DocumentIDs) == 0:
		return req.Restrict
	}
	var both []string
	for _, id := range req.DocumentIDs {
		if slices.Contains(req.Restrict, id) {
			both = append(both, id)
		}
	}
	if len(both) == 0 {
		return req.Restrict
	}
	return both
}

// scopeMeta is the metadata filter the vector leg may search by instead of scopeDocs' ids: the
// request's, when the restriction is exactly its documents (with selected documents, the ids alone:
// they are few, and the filter would select far more than the search may keep).
func scopeMeta(req Request) *rag.MetaFilter {
	if req.Filter == nil || len(req.Restrict) == 0 || len(req.DocumentIDs) > 0 {
		return nil
	}
	return req.Filter
}

// andFilters is a and b (either may be nil: the other alone).
func andFilters(a, b *rag.MetaFilter) *rag.MetaFilter {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &rag.MetaFilter{And: []*rag.MetaFilter{a, b}}
}

// restrictKey is the restriction in the semantic cache's key: "" without one.
func restrictKey(req Request) string {
	if len(req.Restrict) == 0 {
		return ""
	}
	ids := slices.Clone(req.Restrict)
	slices.Sort(ids)
	h := sha256.Sum256([]byte(strings.Join(ids, ",")))
	return hex.EncodeToString(h[:8])
}

// parsed is the inferred filter as a filter (nil when it does not parse, which the inference never
// writes: the ids then stay the only restriction the legs get).
func (f *InferredFilter) parsed() *rag.MetaFilter {
	mf, err := rag.ParseMetaFilter(f.Filter)
	if err != nil {
		return nil
	}
	return mf
}
