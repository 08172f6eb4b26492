package bm25

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

func ids(h []rag.Hit) []string {
	out := make([]string, len(h))
	for i, x := range h {
		out[i] = x.ID
	}
	return out
}

func TestRankingAndScores(t *testing.T) {
	ix := New(Params{K1: 0.9, B: 0.4, TitleWeight: 1})
	ix.Add(
		Doc{ID: "c1", Tenant: "t", KBID: "k", DocumentID: "d1", Content: "aspirin prevents heart attacks"},
		Doc{ID: "c2", Tenant: "t", KBID: "k", DocumentID: "d2", Content: "aspirin aspirin aspirin dosage"},
		Doc{ID: "c3", Tenant: "t", KBID: "k", DocumentID: "d3", Content: "statins lower cholesterol levels in adults with risk"},
		Doc{ID: "c4", Tenant: "u", KBID: "k", DocumentID: "d4", Content: "aspirin for another tenant"},
	)
	hits, err := ix.Search(context.Background(), "aspirin heart", 10, rag.Filter{Tenant: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); !slices.Equal(got, []string{"c1", "c2"}) {
		t.Fatalf("ranking %v", got)
	}
	// hand-computed Lucene BM25 for c1: N=4 (stats are index-wide), lengths after stop words 4, 4, 6, 3
	avg := (4.0 + 4 + 6 + 3) / 4
	norm := 0.9 * (1 - 0.4 + 0.4*4/avg)
	idfA := math.Log(1 + (4-3+0.5)/(3+0.5))
	idfH := math.Log(1 + (4-1+0.5)/(1+0.5))
	want := idfA*1/(1+norm) + idfH*1/(1+norm)
	if math.Abs(float64(hits[0].Score)-want) > 1e-5 {
		t.Fatalf("score %v, want %v", hits[0].Score, want)
	}
	if other, _ := ix.Search(context.Background(), "aspirin", 10, rag.Filter{Tenant: "u"}); len(other) != 1 || other[0].ID != "c4" {
		t.Fatalf("tenant filter: %v", other)
	}
	if none, _ := ix.Search(context.Background(), "the of and", 10, rag.Filter{Tenant: "t"}); none == nil || len(none) != 0 {
		t.Fatalf("stop words only: %v", none)
	}
}

func TestTitleWeightAndChinese(t *testing.T) {
	ix := New(DefaultParams())
	ix.Add(
		Doc{ID: "a", Tenant: "t", KBID: "k", DocumentID: "d1", Content: "# 安心保 A 款\n## 投保年龄\n\n投保年龄为 18 至 60 周岁。"},
		Doc{ID: "b", Tenant: "t", KBID: "k", DocumentID: "d2", Content: "# 康宁保 B 款\n## 保险责任\n\n重大疾病按保额给付，投保年龄见其他条款。"},
	)
	hits, _ := ix.Search(context.Background(), "安心保的投保年龄", 2, rag.Filter{Tenant: "t"})
	if len(hits) != 2 || hits[0].ID != "a" {
		t.Fatalf("heading terms should lift a: %v", ids(hits))
	}
	if got, _ := ix.Search(context.Background(), "康宁保", 5, rag.Filter{Tenant: "t", KBIDs: []string{"k"}, DocumentIDs: []string{"d2"}}); len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("doc filter: %v", ids(got))
	}
}

func TestReplaceRemoveCompact(t *testing.T) {
	ix := New(DefaultParams())
	for i := range 3000 {
		ix.Add(Doc{ID: fmt.Sprintf("c%04d", i), Tenant: "t", KBID: "k", DocumentID: fmt.Sprintf("d%d", i%10), Content: fmt.Sprintf("common term%d", i)})
	}
	ix.Add(Doc{ID: "c0001", Tenant: "t", KBID: "k", DocumentID: "d1", Content: "replaced words"})
	if h, _ := ix.Search(context.Background(), "term1", 5, rag.Filter{Tenant: "t"}); len(h) != 0 {
		t.Fatalf("replaced chunk still matches its old text: %v", ids(h))
	}
	for d := range 8 {
		ix.RemoveDocument("t", fmt.Sprintf("d%d", d)) // 2,400 of 3,000 removed: compaction runs
	}
	if ix.Len() != 600 {
		t.Fatalf("live %d", ix.Len())
	}
	h, _ := ix.Search(context.Background(), "term8 term2999", 5, rag.Filter{Tenant: "t"})
	if got := ids(h); !slices.Equal(got, []string{"c2999", "c0008"}) && !slices.Equal(got, []string{"c0008", "c2999"}) {
		t.Fatalf("after compaction: %v", got)
	}
	ix.Remove("t", "c0008", "missing")
	if h, _ := ix.Search(context.Background(), "term8", 5, rag.Filter{Tenant: "t"}); len(h) != 0 {
		t.Fatalf("removed chunk found: %v", ids(h))
	}
}

func TestInvalid(t *testing.T) {
	ix := New(DefaultParams())
	if _, err := ix.Search(context.Background(), "x", 0, rag.Filter{Tenant: "t"}); !rag.Is(err, rag.KindInvalid) {
		t.Fatal(err)
	}
	if _, err := ix.Search(context.Background(), "x", 3, rag.Filter{Tenant: `" or 1`}); !rag.Is(err, rag.KindInvalid) {
		t.Fatal(err)
	}
}

// TestLongRestriction: a restriction long enough for the cached bitset (rag.DocBits) keeps exactly its
// documents, follows a document indexed after it was first used, and refuses a malformed id on every
// query, cached or not.
func TestLongRestriction(t *testing.T) {
	ctx := context.Background()
	ix := New(DefaultParams())
	for i := range 50 {
		ix.Add(Doc{ID: fmt.Sprintf("c%d", i), Tenant: "t", KBID: "k", DocumentID: fmt.Sprintf("d%d", i), Content: "quokka habitat"})
	}
	var restrict []string
	for i := 0; i < 50; i += 3 {
		restrict = append(restrict, fmt.Sprintf("d%d", i))
	}
	restrict = append(restrict, "d55")
	if len(restrict) < rag.MinDocBits {
		t.Fatalf("%d ids: too few for the bitset", len(restrict))
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
	for range 2 {
		hits, err := ix.Search(ctx, "quokka", 100, rag.Filter{Tenant: "t", DocumentIDs: restrict})
		if err != nil || !slices.Equal(docs(hits), want) {
			t.Fatalf("restricted search = %v, %v; want %v", docs(hits), err, want)
		}
	}
	ix.Add(Doc{ID: "c55", Tenant: "t", KBID: "k", DocumentID: "d55", Content: "quokka"})
	hits, err := ix.Search(ctx, "quokka", 100, rag.Filter{Tenant: "t", DocumentIDs: restrict})
	if want := slices.Sorted(slices.Values(restrict)); err != nil || !slices.Equal(docs(hits), want) {
		t.Fatalf("after d55 was indexed: %v, %v; want %v", docs(hits), err, want)
	}
	bad := append(slices.Clone(restrict), "d 1")
	for range 2 {
		if _, err := ix.Search(ctx, "quokka", 10, rag.Filter{Tenant: "t", DocumentIDs: bad}); !rag.Is(err, rag.KindInvalid) {
			t.Fatalf("malformed id in a long restriction: %v", err)
		}
	}
}
