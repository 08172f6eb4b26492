package rank

import (
	"fmt"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/text"
)

// Grader tiers (CRAG).
const (
	TierHigh      = "HIGH"
	TierAmbiguous = "AMBIGUOUS"
	TierLow       = "LOW"
)

// GradeOptions are the grader's thresholds (seed 003 #36 defaults).
type GradeOptions struct {
	RerankHigh float64 // top rerank score at or above which the retrieval signal is strong (0.70)
	RerankLow  float64 // below which it is weak (0.30)
	CoverHigh  float64 // lexical coverage at or above which the evidence names the query's terms (0.6)
	CoverLow   float64 // below which the query's salient terms are missing (0.2)
	MinSalient int     // salient query terms needed before coverage is trusted (1)
}

// DefaultGradeOptions are the defaults.
func DefaultGradeOptions() GradeOptions {
	return GradeOptions{RerankHigh: 0.70, RerankLow: 0.30, CoverHigh: 0.6, CoverLow: 0.2, MinSalient: 1}
}

// Grade is the grader's verdict.
type Grade struct {
	Tier            string  `json:"tier"`
	TopScore        float64 `json:"top_score"`
	Coverage        float64 `json:"coverage"`       // best length-weighted coverage of salient query terms in the top 3
	EntityWeak      bool    `json:"entity_weak"`    // the knowledge base seems to lack what the query names
	WebCompensation bool    `json:"web_compensate"` // LOW, or AMBIGUOUS with the entity missing
	NoEvidence      bool    `json:"no_evidence"`    // nothing retrieved: only this uses the fallback prompt
	Reason          string  `json:"reason"`
}

// GradeEvidence judges retrieval with two independent signals (CRAG, seed 003 #36): the rerank top
// score, and lexical coverage of the query's salient terms in the top three items (the same analyzer
// as BM25; longer terms, usually names and jargon, weigh more). Agreement decides the tier; a
// disagreement is AMBIGUOUS: a high rerank with the query's terms absent is "semantically close, factually
// missing", a low rerank with them present is a rerank drift. LOW never discards evidence; only an empty
// list is NoEvidence.
//
// Without a rerank model (rerankKnown false) the first signal does not exist: coverage alone decides
// (HIGH at CoverHigh, LOW below CoverLow, AMBIGUOUS between).
func GradeEvidence(query string, ev []Evidence, o GradeOptions, rerankKnown bool) Grade {
	if len(ev) == 0 {
		return Grade{Tier: TierLow, NoEvidence: true, EntityWeak: true, WebCompensation: true, Reason: "no evidence"}
	}
	g := Grade{TopScore: ev[0].Score}
	terms := salient(query)
	coverageKnown := len(terms) >= o.MinSalient && len(terms) > 0
	if coverageKnown {
		for _, e := range ev[:min(3, len(ev))] {
			g.Coverage = max(g.Coverage, coverage(terms, e.Text, e.ChildText))
		}
	}
	strong, weak := rerankKnown && g.TopScore >= o.RerankHigh, rerankKnown && g.TopScore < o.RerankLow
	covHigh, covLow := coverageKnown && g.Coverage >= o.CoverHigh, coverageKnown && g.Coverage < o.CoverLow
	// The reason states the signals that decided, with their values: "middling rerank score" said
	// nothing when no reranker ran (and was printed at a lexical top score of 1.000).
	rr := fmt.Sprintf("rerank top score %.2f", g.TopScore)
	if !rerankKnown {
		rr = "no rerank model (lexical order only)"
	}
	cov := fmt.Sprintf("%.0f%% of the query's salient terms in the top passages", 100*g.Coverage)
	if !coverageKnown {
		cov = "no salient query terms to check"
	}
	switch {
	case strong && covLow:
		g.Tier, g.Reason = TierAmbiguous, rr+" is high but only "+cov+": semantically close, the named things may be missing"
	case weak && covHigh:
		g.Tier, g.Reason = TierAmbiguous, rr+" is low but "+cov+": the evidence names the query's terms"
	case strong:
		g.Tier, g.Reason = TierHigh, rr+" is high, "+cov
	case weak:
		g.Tier, g.Reason = TierLow, rr+" is low, "+cov
	case covHigh:
		g.Tier, g.Reason = TierHigh, cov+"; "+rr
	case covLow:
		g.Tier, g.Reason = TierLow, "only "+cov+"; "+rr
	default:
		g.Tier, g.Reason = TierAmbiguous, "partial coverage: "+cov+"; "+rr
	}
	g.EntityWeak = covLow
	g.WebCompensation = g.Tier == TierLow || (g.Tier == TierAmbiguous && g.EntityWeak)
	return g
}

type term struct {
	t string
	w float64
}

// salient are the query's analyzed terms weighted by length (a CJK bigram counts 2): short generic
// terms matter little, names and jargon a lot.
func salient(q string) []term {
	seen := map[string]bool{}
	var out []term
	for _, t := range text.Analyze(q) {
		if seen[t] {
			continue
		}
		seen[t] = true
		n := utf8.RuneCountInString(t)
		if n < 2 {
			continue
		}
		out = append(out, term{t, float64(min(n, 10))})
	}
	return out
}

// coverage is the weighted share of terms found among the terms of texts (analyzed one after the
// other, as if joined by a line break). It checks each analyzed word against the few query terms
// instead of collecting the texts' terms: that set was a tenth of the chain's allocations at 100k chunks
// (docs/bench/million.md).
func coverage(terms []term, texts ...string) float64 {
	found := make([]bool, len(terms))
	var a text.Analyzer
	for _, s := range texts {
		a.Each(s, func(t string, _ int32) {
			for i := range terms {
				if terms[i].t == t {
					found[i] = true
				}
			}
		})
	}
	var got, all float64
	for i, t := range terms {
		all += t.w
		if found[i] {
			got += t.w
		}
	}
	if all == 0 {
		return 0
	}
	return got / all
}
