package rank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/text"
)

func ev(scores ...float64) []Evidence {
	out := make([]Evidence, len(scores))
	for i, s := range scores {
		out[i] = Evidence{ChunkID: fmt.Sprintf("c%d", i), Text: fmt.Sprintf("text %d", i), ChildText: fmt.Sprintf("child %d", i), Score: s}
	}
	return out
}

func scoresOf(e []Evidence) []float64 {
	out := make([]float64, len(e))
	for i, x := range e {
		out[i] = x.Score
	}
	return out
}

// Seed 001's example: [0.92, 0.85, 0.80, 0.40, 0.35] keeps [0.92, 0.85, 0.80] (0.40 is 56.5% below the top).
func TestFilterSeed001(t *testing.T) {
	got := scoresOf(Filter(ev(0.92, 0.85, 0.80, 0.40, 0.35), FilterOptions{}))
	if fmt.Sprint(got) != "[0.92 0.85 0.8]" {
		t.Fatalf("kept %v", got)
	}
	// all below 0.28: the floor would empty the list, so everything is kept (then the cliff applies)
	if got := scoresOf(Filter(ev(0.2, 0.15, 0.05), FilterOptions{})); fmt.Sprint(got) != "[0.2 0.15]" {
		t.Fatalf("all below the floor: %v", got)
	}
	// the floor removes 0.1 before the cliff check
	if got := scoresOf(Filter(ev(0.35, 0.30, 0.28, 0.1), FilterOptions{})); fmt.Sprint(got) != "[0.35 0.3 0.28]" {
		t.Fatalf("floor: %v", got)
	}
	// duplicates by content collapse to the best one
	d := ev(0.9, 0.8)
	d[1].Text, d[1].ChildText = d[0].Text, d[0].ChildText
	if got := Filter(d, FilterOptions{}); len(got) != 1 {
		t.Fatalf("dedupe: %v", got)
	}
}

func TestMMR(t *testing.T) {
	e := []Evidence{
		{ChunkID: "a", ChildText: "aspirin reduces heart attack risk in adults", Score: 0.9},
		{ChunkID: "a2", ChildText: "aspirin reduces heart attack risk in adults.", Score: 0.89},
		{ChunkID: "b", ChildText: "statins lower cholesterol", Score: 0.7},
	}
	got := MMR(e, 2, 0.7)
	if got[0].ChunkID != "a" || got[1].ChunkID != "b" {
		t.Fatalf("MMR should skip the near-duplicate: %v", []string{got[0].ChunkID, got[1].ChunkID})
	}
	if got := MMR(e, 2, 5); got[1].ChunkID != "a2" {
		t.Fatalf("lambda clamps to 1 (relevance only): %v", got[1].ChunkID)
	}
	if got := MMR(e, 3, -1); len(got) != 3 {
		t.Fatalf("lambda clamps to 0: %d", len(got))
	}
	v := []Evidence{{ChunkID: "x", Score: 1, Vector: []float32{1, 0}}, {ChunkID: "y", Score: 0.95, Vector: []float32{1, 0.01}}, {ChunkID: "z", Score: 0.6, Vector: []float32{0, 1}}} // 0.7*0.6 = 0.42 beats y: 0.7*0.95 - 0.3*0.99995 = 0.365
	if got := MMR(v, 2, 0.7); got[1].ChunkID != "z" {
		t.Fatalf("cosine MMR: %v", got[1].ChunkID)
	}
	if MMR(nil, 3, 0.7) != nil {
		t.Fatal("empty")
	}
}

func TestExpandParents(t *testing.T) {
	parents := map[string]rag.ChunkText{"p1": {ID: "p1", Content: "# A\n\nparent one text", Chapter: "A"}}
	got := ExpandParents([]Evidence{
		{ChunkID: "c1", ParentID: "p1", Text: "child one", Score: 0.9},
		{ChunkID: "c2", ParentID: "p1", Text: "child two", Score: 0.8},
		{ChunkID: "c3", ParentID: "", Text: "orphan", Score: 0.7},
	}, parents)
	if len(got) != 2 || got[0].Text != "# A\n\nparent one text" || got[0].ChildText != "child one" || got[0].Chapter != "A" || got[1].Text != "orphan" {
		t.Fatalf("expanded %+v", got)
	}
}

func TestCompress(t *testing.T) {
	long := strings.Repeat("Filler sentence about nothing. ", 60) + "The waiting period is 90 days. " + strings.Repeat("More filler text here. ", 60)
	e := []Evidence{
		{ChunkID: "a", Text: long, ChildText: "# P\n\nThe waiting period is 90 days.", Score: 0.9},
		{ChunkID: "dup", Text: "The waiting period is 90 days.", ChildText: "x", Score: 0.8}, // contained in a
		{ChunkID: "big", Text: strings.Repeat("word ", 3000), ChildText: "word", Score: 0.7},
		{ChunkID: "small", Text: "Short and useful.", ChildText: "Short and useful.", Score: 0.6},
	}
	got := Compress(e, CompressOptions{Window: 800, TokenBudget: 400})
	ids := []string{}
	for _, x := range got {
		ids = append(ids, x.ChunkID)
	}
	if fmt.Sprint(ids) != "[a small]" {
		t.Fatalf("kept %v (want the duplicate removed, the over-budget item skipped and the small one kept)", ids)
	}
	w := got[0].Text
	if !strings.Contains(w, "The waiting period is 90 days.") || len([]rune(w)) > 1000 || !strings.HasSuffix(w, ".") {
		t.Fatalf("window %d chars, focus kept %v: %q", len([]rune(w)), strings.Contains(w, "90 days"), w)
	}
	used := 0
	for _, x := range got {
		used += text.EstimateTokens(x.Text)
	}
	if used > 400 {
		t.Fatalf("%d tokens over the budget", used)
	}
	// one item over the budget alone is still returned, cut to fit
	one := Compress([]Evidence{{ChunkID: "big", Text: strings.Repeat("word ", 3000), ChildText: "word"}}, CompressOptions{TokenBudget: 50})
	if len(one) != 1 || text.EstimateTokens(one[0].Text) > 50 {
		t.Fatalf("keep at least one: %+v", one)
	}
}

// Seed 003 #36: two signals, agreement decides.
func TestGrade(t *testing.T) {
	o := DefaultGradeOptions()
	q := "80岁可以投保鑫缘宝终身寿险吗"
	with := []Evidence{{Text: "鑫缘宝终身寿险的投保年龄为出生满28天至80周岁，可以投保。", Score: 0.9}}
	without := []Evidence{{Text: "康宁保重大疾病险的投保年龄为30天至55周岁。", Score: 0.9}}
	cases := []struct {
		name string
		ev   []Evidence
		top  float64
		tier string
		web  bool
	}{
		{"both strong", with, 0.9, TierHigh, false},
		{"high rerank, entity missing", without, 0.9, TierAmbiguous, true},
		{"low rerank, entity present (rerank drift)", with, 0.1, TierAmbiguous, false},
		{"both weak", without, 0.1, TierLow, true},
		{"middling, entity present", with, 0.5, TierHigh, false},
		{"middling, entity missing", without, 0.5, TierLow, true},
	}
	for _, c := range cases {
		e := append([]Evidence(nil), c.ev...)
		e[0].Score = c.top
		g := GradeEvidence(q, e, o, true)
		if g.Tier != c.tier || g.WebCompensation != c.web {
			t.Errorf("%s: %s web=%v (coverage %.2f, %s), want %s web=%v", c.name, g.Tier, g.WebCompensation, g.Coverage, g.Reason, c.tier, c.web)
		}
	}
	if g := GradeEvidence(q, nil, o, true); !g.NoEvidence || g.Tier != TierLow {
		t.Fatalf("no evidence: %+v", g)
	}
	// no rerank model: coverage alone decides
	if g := GradeEvidence(q, with, o, false); g.Tier != TierHigh {
		t.Fatalf("coverage only, entity present: %+v", g)
	}
	if g := GradeEvidence(q, without, o, false); g.Tier != TierLow || !g.WebCompensation {
		t.Fatalf("coverage only, entity missing: %+v", g)
	}
	// The reason names the signals that decided, with their values; without a reranker it never
	// speaks of a rerank score's level.
	lexical := append([]Evidence(nil), with...)
	lexical[0].Score = 1
	if g := GradeEvidence(q, lexical, o, false); strings.Contains(g.Reason, "middling") || !strings.Contains(g.Reason, "no rerank model") || !strings.Contains(g.Reason, "%") {
		t.Fatalf("reason without a reranker: %q", g.Reason)
	}
	if g := GradeEvidence(q, lexical, o, true); !strings.Contains(g.Reason, "rerank top score 1.00 is high") {
		t.Fatalf("reason with a reranker: %q", g.Reason)
	}
}

type fakeRerankAPI struct {
	mu     sync.Mutex
	format string
	fail   int
	sizes  []int
	calls  int
}

func (f *fakeRerankAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	f.mu.Lock()
	f.calls++
	failing := f.calls <= f.fail
	f.mu.Unlock()
	if failing {
		w.WriteHeader(503)
		return
	}
	var docs []any
	switch f.format {
	case "tei":
		docs = body["texts"].([]any)
	case "dashscope":
		docs = body["input"].(map[string]any)["documents"].([]any)
	default:
		docs = body["documents"].([]any)
	}
	f.mu.Lock()
	f.sizes = append(f.sizes, len(docs))
	f.mu.Unlock()
	var res []map[string]any
	for i := len(docs) - 1; i >= 0; i-- { // APIs return results sorted by score, not input order
		s := float64(len(docs[i].(string))) / 100
		if f.format == "tei" {
			res = append(res, map[string]any{"index": i, "score": s})
		} else {
			res = append(res, map[string]any{"index": i, "relevance_score": s})
		}
	}
	switch f.format {
	case "tei":
		json.NewEncoder(w).Encode(res)
	case "dashscope":
		json.NewEncoder(w).Encode(map[string]any{"output": map[string]any{"results": res}})
	default:
		json.NewEncoder(w).Encode(map[string]any{"results": res})
	}
}

func TestHTTPRerankerFormats(t *testing.T) {
	docs := make([]string, 130)
	for i := range docs {
		docs[i] = strings.Repeat("x", i%50+1)
	}
	for _, format := range []string{"cohere", "tei", "dashscope"} {
		api := &fakeRerankAPI{format: format, fail: 1}
		srv := httptest.NewServer(api)
		var slept []time.Duration
		r := &HTTPReranker{URL: srv.URL, Model: "m", Format: format, Sleep: func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return nil }}
		scores, err := r.Rerank(context.Background(), "q", docs)
		srv.Close()
		if err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		for i, s := range scores {
			if want := float64(len(docs[i])) / 100; s != want {
				t.Fatalf("%s: score %d = %v, want %v (results must map back by index)", format, i, s, want)
			}
		}
		if len(api.sizes) != 3 || api.sizes[0] != 64 || api.sizes[2] != 2 || len(slept) != 1 || slept[0] != time.Second {
			t.Fatalf("%s: batches %v, backoff %v", format, api.sizes, slept)
		}
	}
}

// A failed rerank model keeps the fused order (lexical coverage, the old stand-in, ranked far worse than
// the fusion on the development splits), degraded, with the error for the caller to report.
func TestRerankFailureKeepsTheFusedOrder(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(401) }))
	defer srv.Close()
	r := &HTTPReranker{URL: srv.URL}
	e := []Evidence{{ChunkID: "a", ChildText: "statins lower cholesterol", Score: 0.04}, {ChunkID: "b", ChildText: "aspirin prevents heart attacks", Score: 0.01}}
	out, degraded, err := RerankEvidence(context.Background(), r, "aspirin heart attack", e)
	if !degraded || err == nil || !rag.Is(err, rag.KindInvalid) || out[0].ChunkID != "a" || out[0].Score != 1 || out[1].Score != 0.25 {
		t.Fatalf("fallback: degraded %v err %v order %v", degraded, err, out)
	}
	e[0].Score, e[1].Score = 0.02, 0.04 // fused scores, in fused order b, a
	e[0], e[1] = e[1], e[0]
	out, degraded, err = RerankEvidence(context.Background(), nil, "cholesterol", e)
	if degraded || err != nil || out[0].ChunkID != "b" || out[0].Score != 1 || out[1].Score != 0.5 {
		t.Fatalf("no reranker keeps the fused order with relative scores: %v %v %+v", degraded, err, out)
	}
	_ = errors.New
}

// DESIGN.md step 10: near-duplicates are texts one inside the other or with bigram Jaccard >= 0.85.
func TestCompressNearDuplicates(t *testing.T) {
	base := "The waiting period of the accident policy is ninety days from the start date of cover."
	near := "The waiting period of the accident policy is ninety days from the start date of the cover."
	far := "Claims need the application form, an identity document and the hospital's diagnosis."
	if j := Jaccard(base, near); j < 0.85 {
		t.Fatalf("fixture: Jaccard %.3f should be >= 0.85", j)
	}
	if j := Jaccard(base, far); j >= 0.85 {
		t.Fatalf("fixture: Jaccard %.3f should be < 0.85", j)
	}
	got := Compress([]Evidence{{ChunkID: "a", Text: base}, {ChunkID: "b", Text: near}, {ChunkID: "c", Text: far}}, CompressOptions{})
	if len(got) != 2 || got[0].ChunkID != "a" || got[1].ChunkID != "c" {
		t.Fatalf("kept %+v", got)
	}
}
