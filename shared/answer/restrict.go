package answer

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
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
