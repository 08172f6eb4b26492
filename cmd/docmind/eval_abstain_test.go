package main

import (
	"testing"

	"github.com/docmind/docmind/shared/answer/reader"
	"github.com/docmind/docmind/shared/eval"
)

// Tuning the abstain rule: on synthetic runs where unanswerable questions have low grade coverage and
// answerable ones high (a few answerable ones low too), the tuned rule abstains on the unanswerable
// ones, keeps false abstentions within the bound in its training folds, and the held-out figures
// come from rules tuned without the fold they are measured on.
func TestEvalAbstainTuning(t *testing.T) {
	const n = 400
	asked := eval.AnswerResult{Dataset: "mini", Queries: n}
	without := eval.AnswerResult{Dataset: "mini", Queries: n, Unanswerable: true}
	for i := range n {
		cov := 0.6 + 0.3*float64(i%7)/7
		if i%50 == 0 { // 2% of answerable questions look unanswerable
			cov = 0.12
		}
		asked.All = append(asked.All, eval.AnswerQuery{ID: "q", ComposedRight: i%3 != 0, Signals: &reader.Signals{Coverage: cov}})
		without.All = append(without.All, eval.AnswerQuery{ID: "q", Signals: &reader.Signals{Coverage: 0.05 + 0.4*float64(i%7)/7}})
	}
	reports, tuned := tuneAbstain([]eval.AnswerResult{asked}, []eval.AnswerResult{without})
	if len(tuned) != crossFolds+1 || len(reports) != 1 {
		t.Fatalf("%d rules, %d reports", len(tuned), len(reports))
	}
	r := reports[0]
	// every LowCover up to 0.5 keeps false abstentions at 2% (coverage 0.12) or 0: the lowest that
	// catches every unanswerable question (coverage 0.05 to 0.39) is 0.4
	if tuned[crossFolds].LowCover != 0.4 || r.HeldOut.AbstainRate != 1 || r.HeldOut.FalseAbstainRate != 0.02 || r.HeldOut.AbstainedRight != 5 {
		t.Errorf("tuned %+v, held out %+v", tuned[crossFolds], r.HeldOut)
	}
	if r.Written.AbstainRate != 0 || r.Written.FalseAbstainRate != 0 || r.Written.AnswerRecall != float64(266)/n {
		t.Errorf("never abstaining: %+v", r.Written)
	}
	// no name is missing: the shipped rule abstains on the coverages below its LowCover
	below := 0
	for _, q := range without.All {
		if q.Signals.Coverage < reader.DefaultRule.LowCover {
			below++
		}
	}
	if r.Shipped.AbstainRate != float64(below)/n || r.Shipped.FalseAbstainRate != 0.02 {
		t.Errorf("shipped rule %+v, want abstain rate %v", r.Shipped, float64(below)/n)
	}
	// a bound the answerable questions cannot meet at any LowCover but 0
	for i := range asked.All {
		if i%10 == 0 {
			asked.All[i].Signals = &reader.Signals{Coverage: 0.01}
		}
	}
	if _, tuned := tuneAbstain([]eval.AnswerResult{asked}, []eval.AnswerResult{without}); tuned[crossFolds].LowCover != 0 {
		t.Errorf("with 10%% of answerable questions at coverage 0.01 the rule must not abstain on coverage: %+v", tuned[crossFolds])
	}
}
