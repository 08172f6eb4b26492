package bm25

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

func rm3Index(p Params) *Index {
	ix := New(p)
	ix.Add(
		Doc{ID: "a1", Tenant: "t", KBID: "k", DocumentID: "d1", Content: "aspirin lowers the risk of heart attack"},
		Doc{ID: "a2", Tenant: "t", KBID: "k", DocumentID: "d2", Content: "aspirin reduces heart attack risk in adults"},
		Doc{ID: "b1", Tenant: "t", KBID: "k", DocumentID: "d3", Content: "myocardial infarction, a heart attack, follows a blocked artery"},
		Doc{ID: "c1", Tenant: "t", KBID: "k", DocumentID: "d4", Content: "zebra stripes confuse biting flies"},
		Doc{ID: "u1", Tenant: "u", KBID: "k", DocumentID: "d5", Content: "aspirin zebra zebra zebra stripes"},
	)
	return ix
}

// Feedback finds a chunk that shares no word with the query but many with its best chunks, and only
// from the searching tenant's chunks: another tenant's text never shapes the expansion.
func TestRM3ExpandsFromTheTenantsOwnChunks(t *testing.T) {
	ctx := context.Background()
	f := rag.Filter{Tenant: "t"}
	plain := rm3Index(Params{K1: 0.9, B: 0.4, TitleWeight: 1})
	hits, err := plain.Search(ctx, "aspirin", 10, f)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(hits); !slices.Equal(got, []string{"a1", "a2"}) {
		t.Fatalf("without feedback: %v", got)
	}
	fb := RM3{Docs: 2, Terms: 5, OrigWeight: 0.5}
	ix := rm3Index(Params{K1: 0.9, B: 0.4, TitleWeight: 1, RM3: fb})
	hits, err = ix.Search(ctx, "aspirin", 10, f)
	if err != nil {
		t.Fatal(err)
	}
	got := ids(hits)
	if len(got) < 3 || !slices.Equal(got[:2], []string{"a1", "a2"}) || !slices.Contains(got, "b1") {
		t.Fatalf("with feedback: %v, want a1, a2 first and b1 found through heart and attack", got)
	}
	if slices.Contains(got, "c1") || slices.Contains(got, "u1") {
		t.Fatalf("with feedback: %v holds zebra text (the other tenant's chunk fed the expansion, or leaked)", got)
	}
	// the CJK setting is separate: feedback for English queries leaves Chinese ones alone
	zh := New(Params{K1: 0.9, B: 0.4, TitleWeight: 1, RM3: fb})
	zh.Add(Doc{ID: "z1", Tenant: "t", KBID: "k", DocumentID: "d1", Content: "投保年龄为 18 至 60 周岁"},
		Doc{ID: "z2", Tenant: "t", KBID: "k", DocumentID: "d2", Content: "周岁 18 至 60 等待期"})
	if h, _ := zh.Search(ctx, "投保年龄", 10, f); !slices.Equal(ids(h), []string{"z1"}) {
		t.Fatalf("CJK query with English-only feedback: %v", ids(h))
	}
	zh.p.RM3CJK = fb
	if h, _ := zh.Search(ctx, "投保年龄", 10, f); !slices.Equal(ids(h), []string{"z1", "z2"}) {
		t.Fatalf("CJK query with CJK feedback: %v", ids(h))
	}
}

// MaxDF keeps common terms out of the expansion: with "attack" in most chunks, the expansion cannot
// reach b1 through it.
func TestRM3MaxDF(t *testing.T) {
	ctx := context.Background()
	ix := New(Params{K1: 0.9, B: 0.4, TitleWeight: 1, RM3: RM3{Docs: 1, Terms: 3, OrigWeight: 0.5, MaxDF: 0.5}})
	ix.Add(
		Doc{ID: "a1", Tenant: "t", KBID: "k", DocumentID: "d1", Content: "aspirin attack"},
		Doc{ID: "b1", Tenant: "t", KBID: "k", DocumentID: "d2", Content: "attack plan"},
		Doc{ID: "b2", Tenant: "t", KBID: "k", DocumentID: "d3", Content: "attack wave"},
		Doc{ID: "b3", Tenant: "t", KBID: "k", DocumentID: "d4", Content: "quiet river"},
	)
	if h, _ := ix.Search(ctx, "aspirin", 10, rag.Filter{Tenant: "t"}); !slices.Equal(ids(h), []string{"a1"}) {
		t.Fatalf("max df 0.5: %v", ids(h))
	}
	if err := ix.Tune(Params{K1: 0.9, B: 0.4, TitleWeight: 1, RM3: RM3{Docs: 1, Terms: 3, OrigWeight: 0.5}}); err != nil {
		t.Fatal(err)
	}
	if h, _ := ix.Search(ctx, "aspirin", 10, rag.Filter{Tenant: "t"}); len(h) != 3 || h[0].ID != "a1" {
		t.Fatalf("no max df: %v, want a1 then the attack chunks", ids(h))
	}
}

func TestTune(t *testing.T) {
	ix := rm3Index(Params{K1: 0.9, B: 0.4, TitleWeight: 1})
	if err := ix.Tune(Params{K1: 0.9, B: 0.4, TitleWeight: 2}); rag.KindOf(err) != rag.KindInvalid {
		t.Fatalf("a field weight change: %v", err)
	}
	if err := ix.Tune(Params{K1: 0, B: 0.4, TitleWeight: 1}); rag.KindOf(err) != rag.KindInvalid {
		t.Fatalf("k1 0: %v", err)
	}
	before, _ := ix.Search(context.Background(), "aspirin heart", 10, rag.Filter{Tenant: "t"})
	if err := ix.Tune(Params{K1: 2, B: 1, TitleWeight: 1}); err != nil {
		t.Fatal(err)
	}
	after, _ := ix.Search(context.Background(), "aspirin heart", 10, rag.Filter{Tenant: "t"})
	if len(before) == 0 || len(after) != len(before) || after[0].Score == before[0].Score {
		t.Fatalf("k1 and b not applied: %v then %v", before, after)
	}
}

func TestIsCJKQuery(t *testing.T) {
	for q, want := range map[string]bool{
		"安心保的投保年龄":          true,
		"安心保 A 款 等待期":       true,
		"what does 安心 mean": false,
		"how old must I be": false,
		"v1.2.3":            false,
		"CMRC 2018 里的问题是什么": true,
		"":                  false,
		"a query about 投保年龄为多少周岁": true,
	} {
		if got := IsCJKQuery(q); got != want {
			t.Errorf("%q: %v, want %v", q, got, want)
		}
	}
}

// BM25+: each matched term adds idf * Delta, in the index and in Score (the MySQL adapter's) alike.
func TestDelta(t *testing.T) {
	p := Params{K1: 0.9, B: 0.4, TitleWeight: 1}
	ix := rm3Index(p)
	before, _ := ix.Search(context.Background(), "aspirin heart", 10, rag.Filter{Tenant: "t"})
	p.Delta = 0.5
	if err := ix.Tune(p); err != nil {
		t.Fatal(err)
	}
	after, _ := ix.Search(context.Background(), "aspirin heart", 10, rag.Filter{Tenant: "t"})
	n := 5.0
	idfA, idfH := IDF(3, n), IDF(3, n) // aspirin: a1, a2, u1; heart: a1, a2, b1
	if len(after) != len(before) || math.Abs(float64(after[0].Score-before[0].Score)-0.5*(idfA+idfH)) > 1e-5 {
		t.Fatalf("delta 0.5: %v then %v", before, after)
	}
	if d := float64(Score(p, 1, 3, n, 4, 5) - Score(Params{K1: 0.9, B: 0.4, TitleWeight: 1}, 1, 3, n, 4, 5)); math.Abs(d-0.5*idfA) > 1e-6 {
		t.Fatalf("Score with delta adds %v, want %v", d, 0.5*idfA)
	}
}
