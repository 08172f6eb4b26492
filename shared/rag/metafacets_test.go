package rag

import (
	"fmt"
	"testing"
)

// BenchmarkFacets is the cost of describing 10,000 documents' connector-sized metadata (a unique title
// and URL, dates, categories) from their column view: what MetadataFacets pays once after each write
// (it keeps the answer until the next), beside the column view's own build as the reference.
//
//	go test ./shared/rag -run '^$' -bench Facets
func BenchmarkFacets(b *testing.B) {
	k := NewMetaKeys()
	docs := make([]MetaDoc, 10_000)
	for i := range docs {
		docs[i] = k.Prepare(Metadata{"title": fmt.Sprintf("Page %d", i), "url": fmt.Sprintf("https://wiki.example.com/p/%d", i),
			"modified": fmt.Sprintf("2025-%02d-%02d", 1+i%12, 1+i%28), "department": fmt.Sprintf("dept%d", i%8),
			"year": float64(2021 + i%5), "author": fmt.Sprintf("user%d", i%200), "tags": []string{fmt.Sprintf("tag%d", i%20)}})
	}
	mask := make([]uint64, (len(docs)+63)/64)
	for i := range docs {
		mask[i/64] |= 1 << (i % 64)
	}
	cols := k.Columns(docs)
	b.Run("facets", func(b *testing.B) {
		for b.Loop() {
			if f := cols.Facets(k, mask, 32); len(f) != 7 {
				b.Fatalf("%d keys", len(f))
			}
		}
	})
	b.Run("columns", func(b *testing.B) {
		for b.Loop() {
			k.Columns(docs)
		}
	})
}

// Facets keeps the best values whatever the order they come in, when there are more than asked.
func TestTopValues(t *testing.T) {
	var cands []valueCount
	for i := range 100 {
		cands = append(cands, valueCount{s: fmt.Sprintf("v%02d", 99-i), docs: i % 7})
	}
	cands = append(cands, valueCount{n: 5, num: true, docs: 6}, valueCount{n: 3, num: true, docs: 6})
	got := fmt.Sprint(topValues(cands, 5))
	if want := "[{ 3 true 6} { 5 true 6} {v02 0 false 6} {v09 0 false 6} {v16 0 false 6}]"; got != want {
		t.Fatalf("topValues = %s; want %s (most documents, numbers first, then by value)", got, want)
	}
	if got := topValues(cands[:3], 10); len(got) != 3 {
		t.Fatalf("fewer than asked: %v", got)
	}
}
