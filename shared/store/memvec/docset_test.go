package memvec

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// TestLongRestriction: a restriction long enough for the cached bitset (rag.DocBits) answers exactly
// like the short form, follows documents indexed after it was first used, and refuses a malformed id on every query, cached or not.
func TestLongRestriction(t *testing.T) {
	ctx := context.Background()
	ix := New(4)
	var recs []rag.VectorRecord
	for i := range 60 {
		recs = append(recs, rag.VectorRecord{ID: fmt.Sprintf("v%d", i), Tenant: "t1", KBID: "kb", DocumentID: fmt.Sprintf("d%d", i),
			ChunkID: fmt.Sprintf("c%d", i), Vector: []float32{1, float32(i) / 100, 0, 0}})
	}
	if err := ix.Upsert(ctx, recs[:50]); err != nil {
		t.Fatal(err)
	}
	var restrict []string // every third document, and d55, not indexed yet
	for i := 0; i < 50; i += 3 {
		restrict = append(restrict, fmt.Sprintf("d%d", i))
	}
	restrict = append(restrict, "d55")
	if len(restrict) < rag.MinDocBits {
		t.Fatalf("the restriction has %d ids: too few to use the bitset", len(restrict))
	}
	docs := func(hits []rag.Hit) []string {
		var out []string
		for _, h := range hits {
			out = append(out, h.DocumentID)
		}
		slices.Sort(out)
		return out
	}
	want := slices.Sorted(slices.Values(restrict[:len(restrict)-1]))
	for range 2 { // translated, then cached
		hits, err := ix.Search(ctx, []float32{1, 0, 0, 0}, 100, rag.Filter{Tenant: "t1", DocumentIDs: restrict})
		if err != nil || !slices.Equal(docs(hits), want) {
			t.Fatalf("restricted search = %v, %v; want %v", docs(hits), err, want)
		}
		if n, err := ix.Count(ctx, rag.Filter{Tenant: "t1", DocumentIDs: restrict}); n != len(want) || err != nil {
			t.Fatalf("Count = %d, %v", n, err)
		}
	}
	if err := ix.Upsert(ctx, recs[50:]); err != nil { // d55 arrives
		t.Fatal(err)
	}
	want = slices.Sorted(slices.Values(restrict))
	hits, err := ix.Search(ctx, []float32{1, 0, 0, 0}, 100, rag.Filter{Tenant: "t1", DocumentIDs: restrict})
	if err != nil || !slices.Equal(docs(hits), want) {
		t.Fatalf("after d55 was indexed: %v, %v; want %v", docs(hits), err, want)
	}
	// another tenant's documents never pass, whatever the restriction
	if hits, err := ix.Search(ctx, []float32{1, 0, 0, 0}, 100, rag.Filter{Tenant: "t2", DocumentIDs: restrict}); err != nil || len(hits) != 0 {
		t.Fatalf("tenant t2: %v, %v", hits, err)
	}
	bad := append(slices.Clone(restrict), "d 1")
	for range 2 {
		if _, err := ix.Search(ctx, []float32{1, 0, 0, 0}, 10, rag.Filter{Tenant: "t1", DocumentIDs: bad}); !rag.Is(err, rag.KindInvalid) {
			t.Fatalf("malformed id in a long restriction: %v", err)
		}
		if _, err := ix.ListVectors(ctx, rag.Filter{Tenant: "t1", DocumentIDs: bad}); !rag.Is(err, rag.KindInvalid) {
			t.Fatalf("ListVectors with a malformed id: %v", err)
		}
	}
}
