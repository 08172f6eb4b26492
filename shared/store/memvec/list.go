package memvec

import (
	"slices"
	"strings"

	"context"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

var _ store.VectorLister = (*Index)(nil)

// ListVectors implements store.VectorLister; the embedded index is always strongly consistent.
func (ix *Index) ListVectors(ctx context.Context, f rag.Filter) ([]store.VectorRef, error) {
	const op = "memvec.ListVectors"
	f.Tags = nil
	if err := validate(f); err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := []store.VectorRef{}
	m, ok, err := ix.matcher(f)
	if err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	if !ok {
		return out, nil
	}
	for i := range ix.rows {
		r := &ix.rows[i]
		if m.match(r) {
			out = append(out, store.VectorRef{ID: r.id, KBID: ix.names.name(r.kb), DocumentID: ix.names.name(r.doc), ChunkID: r.chunk})
		}
	}
	slices.SortFunc(out, func(a, b store.VectorRef) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
