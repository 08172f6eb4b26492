package milvuslite

import (
	"context"
	"errors"
	"slices"

	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus-proto/go-api/v2/schemapb"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus/milvusexpr"
)

// The writes exist for long-term memory: the query function's chat remembers facts about the user
// (memory.Store upserts, deletes and flushes its own collection), so a search-only adapter would have
// brought the official client back into the binary.

// upsertBatch is the rows per Upsert call: 500 x 1024 x 4 B = 2 MiB, far under gRPC's limit.
const upsertBatch = 500

// Upsert implements store.VectorIndex with the request the client's column-based upsert sends (one
// column per field, the collection's update timestamp); a batch is validated whole before anything is
// sent. A schema-mismatch answer (the collection changed since Open) re-reads the collection once and
// retries, as the client does.
func (ix *Index) Upsert(ctx context.Context, recs []rag.VectorRecord) error {
	const op = "milvuslite.Upsert"
	if err := milvusexpr.CheckUpsert(ctx, op, ix.o.Dim, recs); err != nil {
		return err
	}
	if err := ix.ready(ctx, op); err != nil {
		return err
	}
	for start := 0; start < len(recs); start += upsertBatch {
		batch := recs[start:min(start+upsertBatch, len(recs))]
		err := ix.upsert(ctx, batch)
		var se *StatusError
		if errors.As(err, &se) && se.Code == codeSchemaMismatch {
			if err := ix.describe(ctx); err != nil {
				return err
			}
			err = ix.upsert(ctx, batch)
		}
		if err != nil {
			return ix.classify(op, err)
		}
	}
	return nil
}

func (ix *Index) upsert(ctx context.Context, batch []rag.VectorRecord) error {
	ix.mu.Lock()
	ts := ix.schemaTS
	ix.mu.Unlock()
	cctx, cancel := ix.call(ctx)
	defer cancel()
	resp, err := ix.svc.Upsert(cctx, &milvuspb.UpsertRequest{CollectionName: ix.o.Collection, FieldsData: columns(batch, ix.o.Dim),
		NumRows: uint32(len(batch)), SchemaTimestamp: ts})
	return check(resp, err)
}

// columns is the batch as column-based field data, the shapes of the client's ColumnVarChar,
// ColumnVarCharArray and ColumnFloatVector.
func columns(batch []rag.VectorRecord, dim int) []*schemapb.FieldData {
	n := len(batch)
	ids, tenants, kbs, docs, chunks := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	tags := make([]*schemapb.ScalarField, n)
	vecs := make([]float32, 0, n*dim)
	for i, r := range batch {
		ids[i], tenants[i], kbs[i], docs[i], chunks[i] = r.ID, r.Tenant, r.KBID, r.DocumentID, r.ChunkID
		t := r.Tags
		if t == nil {
			t = []string{}
		}
		tags[i] = &schemapb.ScalarField{Data: &schemapb.ScalarField_StringData{StringData: &schemapb.StringArray{Data: slices.Clone(t)}}}
		vecs = append(vecs, r.Vector...)
	}
	varchar := func(name string, vals []string) *schemapb.FieldData {
		return &schemapb.FieldData{Type: schemapb.DataType_VarChar, FieldName: name,
			Field: &schemapb.FieldData_Scalars{Scalars: &schemapb.ScalarField{Data: &schemapb.ScalarField_StringData{StringData: &schemapb.StringArray{Data: vals}}}}}
	}
	return []*schemapb.FieldData{
		varchar(milvusexpr.FieldID, ids), varchar(milvusexpr.FieldTenant, tenants), varchar(milvusexpr.FieldKB, kbs),
		varchar(milvusexpr.FieldDoc, docs), varchar(milvusexpr.FieldChunk, chunks),
		{Type: schemapb.DataType_Array, FieldName: milvusexpr.FieldTags, Field: &schemapb.FieldData_Scalars{Scalars: &schemapb.ScalarField{
			Data: &schemapb.ScalarField_ArrayData{ArrayData: &schemapb.ArrayArray{Data: tags, ElementType: schemapb.DataType_VarChar}}}}},
		{Type: schemapb.DataType_FloatVector, FieldName: milvusexpr.FieldVector, Field: &schemapb.FieldData_Vectors{Vectors: &schemapb.VectorField{
			Dim: int64(dim), Data: &schemapb.VectorField_FloatVector{FloatVector: &schemapb.FloatArray{Data: vecs}}}}},
	}
}

// Delete implements store.VectorIndex.
func (ix *Index) Delete(ctx context.Context, tenant string, ids []string) error {
	const op = "milvuslite.Delete"
	exprs, err := milvusexpr.DeleteExprs(tenant, ids)
	if err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	for _, expr := range exprs {
		if err := ix.delete(ctx, op, expr); err != nil {
			return err
		}
	}
	return nil
}

// DeleteDocument implements store.VectorIndex.
func (ix *Index) DeleteDocument(ctx context.Context, tenant, kbID, documentID string) error {
	const op = "milvuslite.DeleteDocument"
	expr, err := milvusexpr.DocumentExpr(tenant, kbID, documentID)
	if err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	return ix.delete(ctx, op, expr)
}

func (ix *Index) delete(ctx context.Context, op, expr string) error {
	if err := ctx.Err(); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	if err := ix.ready(ctx, op); err != nil {
		return err
	}
	cctx, cancel := ix.call(ctx)
	defer cancel()
	resp, err := ix.svc.Delete(cctx, &milvuspb.DeleteRequest{CollectionName: ix.o.Collection, Expr: expr})
	return ix.classify(op, check(resp, err))
}

// Flush implements store.VectorIndex without a call to Milvus (as the full adapter). Milvus acknowledges an upsert or a
// delete only once it is in its write-ahead log (the message storage), so an acknowledged write is
// already durable, and a Count at Strong consistency already sees it. Milvus's own flush only seals
// growing segments, which it does by itself, and it is rate-limited per collection (by default 0.1 per
// second, quotaAndLimits.flushRate.collection.max): a flush per ingested document or per chat memory
// came back rate-limited (Unavailable) past one write every ten seconds, and an unlimited one could
// block for several call timeouts while segments sealed.
func (ix *Index) Flush(ctx context.Context) error {
	const op = "milvuslite.Flush"
	if err := ctx.Err(); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	return ix.ready(ctx, op)
}
