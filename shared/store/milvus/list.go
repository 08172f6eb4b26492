package milvus

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/milvus-io/milvus/client/v2/column"
	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

var _ store.VectorLister = (*Index)(nil)

// listPage is the rows per query while listing: one query returns at most 16,384 rows (offset + limit),
// so listing pages by primary key instead.
const listPage = 4096

// ListVectors implements store.VectorLister. It pages by primary key, as the client's QueryIterator
// does: each query adds `id > "<last id>"` and a limit, and Milvus returns a limited query's rows in
// primary-key order. Every page is read at Strong consistency, so a record written and flushed before
// the call is listed.
func (ix *Index) ListVectors(ctx context.Context, f rag.Filter) ([]store.VectorRef, error) {
	const op = "milvus.ListVectors"
	f.Tags = nil
	expr, err := Expr(f)
	if err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	if err := ix.ready(ctx, op); err != nil {
		return nil, err
	}
	out := []store.VectorRef{}
	last := ""
	for {
		if err := ctx.Err(); err != nil {
			return nil, rag.E(op, rag.KindUnavailable, err)
		}
		e := expr
		if last != "" {
			// last came back from the collection, where only ids that passed rag.ValidateID are written
			if err := rag.ValidateID("vector id", last); err != nil {
				return nil, rag.E(op, rag.KindInternal, err)
			}
			e = "(" + expr + ") and " + FieldID + " > " + quote(last)
		}
		page, err := ix.listPage(ctx, e)
		if err != nil {
			return nil, ix.classify(op, err)
		}
		out = append(out, page...)
		if len(page) < listPage {
			break
		}
		next := page[len(page)-1].ID
		if next <= last {
			return nil, rag.Errorf(op, rag.KindInternal, "listing did not advance past id %q", last)
		}
		last = next
	}
	slices.SortFunc(out, func(a, b store.VectorRef) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// listPage returns one page sorted by id.
func (ix *Index) listPage(ctx context.Context, expr string) ([]store.VectorRef, error) {
	cctx, cancel := ix.call(ctx)
	defer cancel()
	rs, err := ix.c.Query(cctx, milvusclient.NewQueryOption(ix.coll).WithFilter(expr).
		WithOutputFields(FieldID, FieldKB, FieldDoc, FieldChunk).WithLimit(listPage).WithConsistencyLevel(entity.ClStrong))
	if err != nil {
		return nil, err
	}
	get := func(col column.Column, i int) (string, error) {
		if col == nil {
			return "", fmt.Errorf("query returned no column")
		}
		return col.GetAsString(i)
	}
	idCol, kbCol, docCol, chunkCol := rs.GetColumn(FieldID), rs.GetColumn(FieldKB), rs.GetColumn(FieldDoc), rs.GetColumn(FieldChunk)
	page := make([]store.VectorRef, rs.ResultCount)
	for i := range page {
		var errs [4]error
		page[i].ID, errs[0] = get(idCol, i)
		page[i].KBID, errs[1] = get(kbCol, i)
		page[i].DocumentID, errs[2] = get(docCol, i)
		page[i].ChunkID, errs[3] = get(chunkCol, i)
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(page, func(a, b store.VectorRef) int { return strings.Compare(a.ID, b.ID) })
	return page, nil
}
