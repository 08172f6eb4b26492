package milvuslite

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus-proto/go-api/v2/schemapb"
	"google.golang.org/protobuf/proto"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus/milvusexpr"
)

// searchOutput are the fields a hit carries besides its id.
var searchOutput = []string{milvusexpr.FieldKB, milvusexpr.FieldDoc, milvusexpr.FieldChunk}

// Search implements store.VectorIndex: at most k hits inside f, best first, ties by id ascending; an
// empty result is an empty slice. Invalid for a bad filter, k or query; Unavailable when Milvus is
// unreachable or slow beyond CallTimeout; NotFound when the collection was dropped.
func (ix *Index) Search(ctx context.Context, query []float32, k int, f rag.Filter) ([]rag.Hit, error) {
	const op = "milvuslite.Search"
	expr, err := milvusexpr.Expr(f)
	if err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	if k < 1 || k > milvusexpr.MaxTopK {
		return nil, rag.Errorf(op, rag.KindInvalid, "k must be within 1..%d, got %d", milvusexpr.MaxTopK, k)
	}
	if err := rag.ValidateVector(query, ix.o.Dim); err != nil {
		return nil, rag.E(op, rag.KindInvalid, fmt.Errorf("query: %w", err))
	}
	if err := ctx.Err(); err != nil {
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	if err := ix.ready(ctx, op); err != nil {
		return nil, err
	}
	req, err := searchRequest(ix.o.Collection, query, k, expr, searchLevel(ix.o))
	if err != nil {
		return nil, rag.E(op, rag.KindInternal, err)
	}
	cctx, cancel := ix.call(ctx)
	defer cancel()
	resp, err := ix.svc.Search(cctx, req)
	if err := check(resp, err); err != nil {
		return nil, ix.classify(op, err)
	}
	hits, err := parseHits(resp.GetResults())
	if err != nil {
		return nil, rag.E(op, rag.KindInternal, err)
	}
	return hits, nil
}

// searchRequest is the request the client's NewSearchOption(coll, k, vectors).WithANNSField(vector).
// WithFilter(expr).WithOutputFields(kb, doc, chunk).WithConsistencyLevel(level) builds: one float-vector
// placeholder tagged $0, the parameters below (metric_type empty: the index's metric), a boolean
// expression, no partitions (the knowledge base is the partition key, so Milvus prunes by the
// expression's kb_id clause).
func searchRequest(coll string, query []float32, k int, expr string, level commonpb.ConsistencyLevel) (*milvuspb.SearchRequest, error) {
	raw := make([]byte, 4*len(query))
	for i, v := range query {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	phg, err := proto.Marshal(&commonpb.PlaceholderGroup{Placeholders: []*commonpb.PlaceholderValue{
		{Tag: "$0", Type: commonpb.PlaceholderType_FloatVector, Values: [][]byte{raw}}}})
	if err != nil {
		return nil, err
	}
	return &milvuspb.SearchRequest{
		CollectionName: coll,
		Dsl:            expr,
		DslType:        commonpb.DslType_BoolExprV1,
		Nq:             1,
		SearchInput:    &milvuspb.SearchRequest_PlaceholderGroup{PlaceholderGroup: phg},
		SearchParams: pairs(
			"anns_field", milvusexpr.FieldVector,
			"topk", strconv.Itoa(k),
			"offset", "0",
			"metric_type", "",
			"round_decimal", "-1",
			"ignore_growing", "false",
			"params", "{}",
		),
		OutputFields:          searchOutput,
		ConsistencyLevel:      level,
		UseDefaultConsistency: false,
		ExprTemplateValues:    map[string]*schemapb.TemplateValue{},
	}, nil
}

func pairs(kv ...string) []*commonpb.KeyValuePair {
	out := make([]*commonpb.KeyValuePair, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, &commonpb.KeyValuePair{Key: kv[i], Value: kv[i+1]})
	}
	return out
}

// parseHits reads the first query's results as the client's handleSearchResult does: topks[0] rows from
// offset 0 of ids and scores, output fields by name; then orders them best first with ties by id, as
// the full adapter does (Milvus returns equal scores in segment order).
func parseHits(r *schemapb.SearchResultData) ([]rag.Hit, error) {
	hits := []rag.Hit{}
	if r.GetNumQueries() == 0 || len(r.GetTopks()) == 0 {
		return hits, nil
	}
	n := int(r.GetTopks()[0])
	ids, err := idStrings(r.GetIds(), n)
	if err != nil {
		return nil, err
	}
	if len(r.GetScores()) < n {
		return nil, fmt.Errorf("search returned %d scores for %d hits", len(r.GetScores()), n)
	}
	cols := map[string][]string{}
	for _, fd := range r.GetFieldsData() {
		cols[fd.GetFieldName()] = fd.GetScalars().GetStringData().GetData()
	}
	at := func(name string, i int) string {
		if c := cols[name]; i < len(c) {
			return c[i]
		}
		return ""
	}
	for i := 0; i < n; i++ {
		hits = append(hits, rag.Hit{ID: ids[i], KBID: at(milvusexpr.FieldKB, i), DocumentID: at(milvusexpr.FieldDoc, i),
			ChunkID: at(milvusexpr.FieldChunk, i), Score: r.GetScores()[i]})
	}
	slices.SortStableFunc(hits, func(a, b rag.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return hits, nil
}

// idStrings returns the first n primary keys as strings, whichever type the collection's key has.
func idStrings(ids *schemapb.IDs, n int) ([]string, error) {
	out := make([]string, 0, n)
	switch {
	case ids.GetStrId() != nil:
		data := ids.GetStrId().GetData()
		if len(data) < n {
			return nil, fmt.Errorf("search returned %d ids for %d hits", len(data), n)
		}
		out = append(out, data[:n]...)
	case ids.GetIntId() != nil:
		data := ids.GetIntId().GetData()
		if len(data) < n {
			return nil, fmt.Errorf("search returned %d ids for %d hits", len(data), n)
		}
		for _, v := range data[:n] {
			out = append(out, strconv.FormatInt(v, 10))
		}
	case n > 0:
		return nil, fmt.Errorf("search returned %d hits without ids", n)
	}
	return out, nil
}

// Count implements store.VectorIndex with a count(*) query at Strong consistency, the client's
// NewQueryOption(coll).WithFilter(expr).WithOutputFields("count(*)").WithConsistencyLevel(Strong).
func (ix *Index) Count(ctx context.Context, f rag.Filter) (int, error) {
	const op = "milvuslite.Count"
	expr, err := milvusexpr.Expr(f)
	if err != nil {
		return 0, rag.E(op, rag.KindInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, rag.E(op, rag.KindUnavailable, err)
	}
	if err := ix.ready(ctx, op); err != nil {
		return 0, err
	}
	cctx, cancel := ix.call(ctx)
	defer cancel()
	resp, err := ix.svc.Query(cctx, &milvuspb.QueryRequest{CollectionName: ix.o.Collection, Expr: expr,
		OutputFields: []string{"count(*)"}, QueryParams: []*commonpb.KeyValuePair{},
		ConsistencyLevel: commonpb.ConsistencyLevel_Strong, ExprTemplateValues: map[string]*schemapb.TemplateValue{}})
	if err := check(resp, err); err != nil {
		return 0, ix.classify(op, err)
	}
	for _, fd := range resp.GetFieldsData() {
		if fd.GetFieldName() == "count(*)" {
			if v := fd.GetScalars().GetLongData().GetData(); len(v) == 1 {
				return int(v[0]), nil
			}
		}
	}
	return 0, rag.Errorf(op, rag.KindInternal, "count(*) returned no value")
}
