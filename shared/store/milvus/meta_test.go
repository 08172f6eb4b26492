package milvus

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/index"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/milvus/milvusexpr"
)

// metaFixture is a collection of docs documents of two chunks each, with random metadata, and the
// embedded index holding the same vectors as the reference.
type metaFixture struct {
	ix   *Index
	srv  *fakemilvus.Server
	ref  *memvec.Index
	recs []rag.VectorRecord
	meta map[string]rag.Metadata
	ids  []string
	r    *rand.Rand
}

const metaDim = 8

func randVec(r *rand.Rand) []float32 {
	v := make([]float32, metaDim)
	var s float64
	for d := range v {
		v[d] = float32(r.NormFloat64())
		s += float64(v[d] * v[d])
	}
	for d := range v {
		v[d] /= float32(math.Sqrt(s))
	}
	return v
}

func randDocMeta(r *rand.Rand) rag.Metadata {
	m := rag.Metadata{"source": []string{"web", "wiki", "confluence"}[r.IntN(3)], "year": float64(2018 + r.IntN(9))}
	if r.IntN(4) > 0 {
		m["author"] = []string{"ann", `o"hara`, "cy"}[r.IntN(3)]
	}
	if r.IntN(2) == 0 {
		m["labels"] = []string{[]string{"hr", "legal", "eng"}[r.IntN(3)]}
	}
	if r.IntN(3) > 0 {
		m["modified"] = fmt.Sprintf("%d-%02d-%02d", 2020+r.IntN(6), 1+r.IntN(12), 1+r.IntN(28))
	}
	n, _ := m.Normalize()
	return n
}

func newMetaFixture(t *testing.T, ix *Index, srv *fakemilvus.Server, docs int, mirror bool) *metaFixture {
	ctx := context.Background()
	fx := &metaFixture{ix: ix, srv: srv, ref: memvec.New(metaDim), meta: map[string]rag.Metadata{}, r: rand.New(rand.NewPCG(23, 11))}
	for i := range docs {
		doc := fmt.Sprintf("d%05d", i)
		fx.ids = append(fx.ids, doc)
		fx.meta[doc] = randDocMeta(fx.r)
		for j := range 2 {
			fx.recs = append(fx.recs, rag.VectorRecord{ID: fmt.Sprintf("v%s-%d", doc, j), Tenant: "t1", KBID: "kb", DocumentID: doc,
				ChunkID: fmt.Sprintf("c%s-%d", doc, j), Vector: randVec(fx.r)})
		}
	}
	if err := ix.Upsert(ctx, fx.recs); err != nil {
		t.Fatal(err)
	}
	if err := fx.ref.Upsert(ctx, fx.recs); err != nil {
		t.Fatal(err)
	}
	if mirror {
		for _, doc := range fx.ids {
			if err := ix.SetDocumentMeta(ctx, "t1", "kb", doc, fx.meta[doc], 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	return fx
}

// passing is the brute force: the documents whose metadata passes f.
func (fx *metaFixture) passing(f *rag.MetaFilter) []string {
	var out []string
	for _, id := range fx.ids {
		if f.Match(fx.meta[id]) {
			out = append(out, id)
		}
	}
	return out
}

// check searches under f with its passing documents and compares with the embedded index's exact
// top k under the same restriction.
func (fx *metaFixture) check(t *testing.T, ix *Index, f *rag.MetaFilter, query []float32) {
	t.Helper()
	ctx := context.Background()
	ids := fx.passing(f)
	flt := rag.Filter{Tenant: "t1", KBIDs: []string{"kb"}, DocumentIDs: ids, Meta: f}
	got, err := ix.Search(ctx, query, 10, flt)
	if err != nil {
		t.Fatal(err)
	}
	flt.Meta = nil
	want, err := fx.ref.Search(ctx, query, 10, flt)
	if err != nil {
		t.Fatal(err)
	}
	chunks := func(hs []rag.Hit) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.ChunkID)
		}
		return out
	}
	if !slices.Equal(chunks(got), chunks(want)) {
		t.Fatalf("filter %s (%d documents): hits %v; the embedded index under the same documents says %v", f.CacheKey(), len(ids), chunks(got), chunks(want))
	}
}

// TestMetaFilterSearch: with every document's metadata mirrored onto its rows, a filter is searched
// with one expression (no id list, no parts, however many documents pass), and the hits equal
// the embedded index's exact top k among the brute-force passing documents, over random filters; a
// row whose document was not mirrored yet, or a document outside the restriction, sends the search
// back to the id parts (still exact); a mirror of an older generation never overwrites a newer one.
func TestMetaFilterSearch(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	ix, err := Open(ctx, Options{Addr: srv.Addr(), Collection: "chunks", Dim: metaDim, StrongSearch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if !ix.hasMeta.Load() {
		t.Fatal("a new collection has no metadata field")
	}
	fx := newMetaFixture(t, ix, srv, 1300, true)
	long, filters := 0, 0
	for _, raw := range []string{
		`{"not":{"key":"author","eq":"ann"}}`,
		`{"not":{"key":"author","eq":"o\"hara"}}`,
		`{"or":[{"key":"year","gte":2020},{"key":"labels","in":["hr","legal"]}]}`,
		`{"or":[{"key":"modified","lt":"2025-01-01"},{"key":"modified","exists":false}]}`,
		`{"not":{"and":[{"key":"source","eq":"web"},{"key":"year","lt":2021}]}}`,
		`{"key":"source","in":["web","wiki"]}`,
		`{"key":"year","eq":2020}`, // few documents: the expression too
	} {
		filters++
		f, err := rag.ParseMetaFilter([]byte(raw))
		if err != nil {
			t.Fatal(raw, err)
		}
		if len(fx.passing(f)) > milvusexpr.MaxFilterIDs {
			long++
		}
		for range 3 {
			fx.check(t, ix, f, randVec(fx.r))
		}
	}
	answered, fellBack := ix.MetaSearches()
	if long < 3 || answered != int64(3*filters) || fellBack != 0 {
		t.Fatalf("%d filters (%d long): %d searches answered by the expression, %d fell back; want %d and 0", filters, long, answered, fellBack, 3*filters)
	}
	if dsl := srv.Request("Search").(*milvuspb.SearchRequest).GetDsl(); !strings.Contains(dsl, `meta["n"]["year"]`) && !strings.Contains(dsl, "doc_id in") {
		t.Fatalf("last search expression %s", dsl)
	}

	// a new document, upserted but not mirrored, right at the query: its rows are let through as
	// unknown, the hit is outside the restriction, and the search goes back to the id parts
	broad, _ := rag.ParseMetaFilter([]byte(`{"not":{"key":"year","eq":2020}}`))
	if n := len(fx.passing(broad)); n <= milvusexpr.MaxFilterIDs {
		t.Fatalf("the filter passes %d documents: too few to need the expression", n)
	}
	q := randVec(fx.r)
	late := rag.VectorRecord{ID: "vlate", Tenant: "t1", KBID: "kb", DocumentID: "dlate", ChunkID: "clate", Vector: q}
	if err := ix.Upsert(ctx, []rag.VectorRecord{late}); err != nil {
		t.Fatal(err)
	}
	if err := fx.ref.Upsert(ctx, []rag.VectorRecord{late}); err != nil {
		t.Fatal(err)
	}
	fx.ids, fx.meta["dlate"] = append(fx.ids, "dlate"), rag.Metadata{"year": 2020.0}
	fx.check(t, ix, broad, q)
	if _, fb := ix.MetaSearches(); fb != 1 {
		t.Fatalf("a hit outside the restriction: %d fallbacks; want 1", fb)
	}
	// mirrored, it is excluded by the expression itself
	if err := ix.SetDocumentMeta(ctx, "t1", "kb", "dlate", fx.meta["dlate"], 2); err != nil {
		t.Fatal(err)
	}
	before, _ := ix.MetaSearches()
	fx.check(t, ix, broad, q)
	if a, fb := ix.MetaSearches(); a != before+1 || fb != 1 {
		t.Fatalf("after mirroring: answered %d (was %d), fallbacks %d", a, before, fb)
	}

	// an edit mirrored at generation 5, then a late mirror of generation 4: the rows keep 5
	doc := fx.ids[0]
	edited := rag.Metadata{"author": "ann", "year": 1999.0, "source": "web"}
	if err := ix.SetDocumentMeta(ctx, "t1", "kb", doc, edited, 5); err != nil {
		t.Fatal(err)
	}
	if err := ix.SetDocumentMeta(ctx, "t1", "kb", doc, fx.meta[doc], 4); err != nil {
		t.Fatal(err)
	}
	fx.meta[doc] = edited
	rows, err := ix.c.Query(ctx, milvusclient.NewQueryOption("chunks").WithFilter(`doc_id == "`+doc+`" and meta["n"]["year"] == 1999.0`).
		WithOutputFields("count(*)").WithConsistencyLevel(entity.ClStrong))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := rows.GetColumn("count(*)").GetAsInt64(0); n != 2 {
		t.Fatalf("%d of the document's 2 rows carry the newer metadata", n)
	}
	fx.check(t, ix, broad, fx.recs[0].Vector)

	// Invalid ids never reach an expression
	if err := ix.SetDocumentMeta(ctx, "t1", "kb", `d" or tenant != "x`, edited, 6); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("SetDocumentMeta with a bad id = %v", err)
	}
}

// TestMetaFieldAddedToOldCollection: a collection made before the metadata field gains it when the
// ingest side opens it (AddCollectionField; its rows read null, let through as unknown, so searches
// stay exact), while a search side that attached before keeps to id lists; once the documents are
// mirrored the expression answers.
func TestMetaFieldAddedToOldCollection(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	c, err := milvusclient.New(ctx, &milvusclient.ClientConfig{Address: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	old := Schema("chunks", metaDim)
	old.Fields = slices.DeleteFunc(old.Fields, func(f *entity.Field) bool { return f.Name == FieldMeta })
	if err := c.CreateCollection(ctx, milvusclient.NewCreateCollectionOption("chunks", old).
		WithIndexOptions(milvusclient.NewCreateIndexOption("chunks", FieldVector, index.NewAutoIndex(entity.COSINE)))); err != nil {
		t.Fatal(err)
	}
	task, err := c.LoadCollection(ctx, milvusclient.NewLoadCollectionOption("chunks"))
	if err != nil || task.Await(ctx) != nil {
		t.Fatal(err)
	}
	query, err := Open(ctx, Options{Addr: srv.Addr(), Collection: "chunks", Dim: metaDim, StrongSearch: true, Late: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { query.Close() })
	if query.hasMeta.Load() {
		t.Fatal("the old collection has a metadata field")
	}
	ingest, err := Open(ctx, Options{Addr: srv.Addr(), Collection: "chunks", Dim: metaDim, StrongSearch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ingest.Close() })
	if !ingest.hasMeta.Load() {
		t.Fatal("the ingest side did not add the metadata field")
	}
	fx := newMetaFixture(t, ingest, srv, 1200, false)
	broad, _ := rag.ParseMetaFilter([]byte(`{"not":{"key":"year","eq":2020}}`))
	if n := len(fx.passing(broad)); n <= milvusexpr.MaxFilterIDs {
		t.Fatalf("the filter passes %d documents: too few to need the expression", n)
	}
	for range 3 {
		q := randVec(fx.r)
		fx.check(t, ingest, broad, q) // rows unknown: exact, by expression or by fallback
		fx.check(t, query, broad, q)
	}
	if a, fb := query.MetaSearches(); a != 0 || fb != 0 {
		t.Fatalf("the search side that saw no field used the expression (%d, %d)", a, fb)
	}
	for _, doc := range fx.ids {
		if err := ingest.SetDocumentMeta(ctx, "t1", "kb", doc, fx.meta[doc], 1); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := ingest.MetaSearches()
	for range 3 {
		fx.check(t, ingest, broad, randVec(fx.r))
	}
	if a, _ := ingest.MetaSearches(); a != before+3 {
		t.Fatalf("after mirroring, %d of 3 searches answered by the expression", a-before)
	}
}
