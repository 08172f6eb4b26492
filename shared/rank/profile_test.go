package rank

import (
	"math"
	"testing"
)

func TestProfileQuery(t *testing.T) {
	cases := []struct {
		q           string
		spec, cmplx string
	}{
		{"server.shutdown 默认值是多少", Precise, Simple},
		{"what changed in v1.2.3", Precise, Simple},
		{`what does "graceful drain" mean`, Precise, Simple},
		{"error E1062 on insert", Precise, Simple},
		{"maxRetries default", Precise, Simple},
		{"微服务架构的优势", Fuzzy, Simple},
		{"why does aspirin reduce heart attacks", Fuzzy, Simple},
		{"aspirin heart attack", Neutral, Simple},
		{"对比安心保A款和康宁保B款的投保年龄分别是多少", Neutral, Complex}, // CJK product names need the understanding model
		{"What is the waiting period? And who can apply?", Fuzzy, Complex},
		{"compare the leave policy and the expense policy for new employees", Fuzzy, Complex},
	}
	for _, c := range cases {
		p := ProfileQuery(c.q, true)
		if p.Specificity != c.spec || p.Complexity != c.cmplx {
			t.Errorf("%q: %s/%s (%s), want %s/%s", c.q, p.Specificity, p.Complexity, p.Reason, c.spec, c.cmplx)
		}
	}
	if p := ProfileQuery("server.shutdown timeout", true); p.BM25Weight != 0.7 || p.VectorWeight != 0.3 || p.K != 40 {
		t.Errorf("precise weights %+v, want BM25 0.7, vector 0.3, k 40", p)
	}
	if p := ProfileQuery("为什么要用微服务", true); p.VectorWeight != 0.6 || p.K != 60 {
		t.Errorf("semantic weights %+v, want vector 0.6, k 60", p)
	}
	if p := ProfileQuery("为什么要用微服务", false); math.Abs(p.VectorWeight-0.6/1e4) > 1e-12 {
		t.Errorf("lexical embedder must only break ties: %+v", p)
	}
}
