package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/docmind/docmind/shared/answer/reader"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/eval"
	"github.com/docmind/docmind/shared/rag"
)

// eval_abstain.go measures abstaining (`docmind eval --variant answer --unanswerable`): every question
// is asked twice, with its documents (where abstaining is a false abstention) and without its
// judged-relevant documents (where abstaining is right), and the abstain rule is tuned on nine folds and
// measured on the tenth, so the held-out rates are not measured on the questions that chose the rule.

// maxFalseAbstain is the share of answerable questions a tuned rule may abstain on, per dataset, in
// its training folds (the goal is 5%; the margin absorbs the fold-to-fold spread).
const maxFalseAbstain = 0.04

// abstainRules are the rules tuning chooses from: the HIGH override's coverage (1.01: never) and the
// coverage below which any question abstains (0: never).
func abstainRules() []reader.Rule {
	var out []reader.Rule
	for _, hi := range []float64{0.5, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 1.01} {
		for _, lo := range []float64{0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5} {
			out = append(out, reader.Rule{HighCover: hi, LowCover: lo})
		}
	}
	return out
}

// abstainFigures are one rule's rates over some questions of one dataset.
type abstainFigures struct {
	Questions        int     `json:"questions"`
	AbstainRate      float64 `json:"abstain_rate"`       // unanswerable questions that abstained
	FalseAbstainRate float64 `json:"false_abstain_rate"` // answerable questions that abstained
	AbstainedRight   int     `json:"abstained_right"`    // ... whose written answer held the gold answer
	AnswerRecall     float64 `json:"answer_recall"`      // answerable questions answered right
}

// abstainReport is the --unanswerable run's report for one dataset.
type abstainReport struct {
	Dataset string         `json:"dataset"`
	Split   string         `json:"split"`
	Shipped abstainFigures `json:"shipped"`  // reader.DefaultRule on every question
	HeldOut abstainFigures `json:"held_out"` // each fold's questions under the rule tuned on the other nine
	Written abstainFigures `json:"no_abstaining"`
}

func evalUnanswerable(e env, c common, cfg config.Config, dirs []string, split, outFile string, sample int) int {
	var asked, without []eval.AnswerResult
	for _, dir := range dirs {
		ds, r, closeStores, err := openEval(e, c, cfg, dir, split)
		if err != nil {
			return fail(e, err)
		}
		if len(ds.Answers) == 0 {
			closeStores()
			return fail(e, rag.Errorf("eval", rag.KindInvalid, "%s has no answers.jsonl: the answer variant needs gold answers", dir))
		}
		asked = append(asked, eval.RunAnswers(e.ctx, ds, r.answerer(nil), eval.AnswerOptions{Sample: sample}))
		without = append(without, eval.RunAnswers(e.ctx, ds, r.answerer(nil), eval.AnswerOptions{Unanswerable: true, Sample: sample}))
		closeStores()
	}
	reports, tuned := tuneAbstain(asked, without)
	if outFile != "" {
		if err := writeAnswerLines(outFile, append(asked, without...)); err != nil {
			return fail(e, rag.E("eval", rag.KindInternal, err))
		}
	}
	out := struct {
		Shipped reader.Rule     `json:"shipped_rule"`
		Tuned   reader.Rule     `json:"tuned_rule"` // tuned on every question
		Folds   []reader.Rule   `json:"fold_rules"`
		Reports []abstainReport `json:"datasets"`
	}{reader.DefaultRule, tuned[crossFolds], tuned[:crossFolds], reports}
	if c.json {
		printJSON(e.stdout, out)
		return exitOK
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Abstaining: shipped rule %+v, tuned on every question %+v\n\n", out.Shipped, out.Tuned)
	b.WriteString("| dataset | questions | rule | abstain rate (unanswerable) | false-abstain rate | abstained but right | answer recall |\n|---|---|---|---|---|---|---|\n")
	for _, r := range reports {
		for _, row := range []struct {
			name string
			f    abstainFigures
		}{{"never abstain", r.Written}, {"shipped", r.Shipped}, {"tuned, held out", r.HeldOut}} {
			fmt.Fprintf(&b, "| %s | %d | %s | %.3f | %.3f | %d | %.4f |\n", r.Dataset, row.f.Questions, row.name, row.f.AbstainRate, row.f.FalseAbstainRate, row.f.AbstainedRight, row.f.AnswerRecall)
		}
	}
	fmt.Fprint(e.stdout, b.String())
	return exitOK
}

// tuneAbstain chooses a rule on every fold's complement (positions modulo crossFolds, as the
// calibration's folds), applies each to its held-out fold, and reports per dataset the shipped rule,
// the held-out figures and the figures without abstaining. tuned[crossFolds] is the rule chosen on
// every question (the one to ship).
func tuneAbstain(asked, without []eval.AnswerResult) ([]abstainReport, []reader.Rule) {
	tuned := make([]reader.Rule, crossFolds+1)
	for f := range crossFolds + 1 {
		tuned[f] = bestRule(asked, without, func(i int) bool { return i%crossFolds != f })
	}
	reports := make([]abstainReport, len(asked))
	for d := range asked {
		reports[d] = abstainReport{Dataset: asked[d].Dataset, Split: asked[d].Split,
			Shipped: figures(asked[d], without[d], func(int) reader.Rule { return reader.DefaultRule }),
			HeldOut: figures(asked[d], without[d], func(i int) reader.Rule { return tuned[i%crossFolds] }),
			Written: figures(asked[d], without[d], nil),
		}
	}
	return reports, tuned
}

// bestRule is the rule that abstains most on the selected unanswerable questions (mean over datasets
// of the abstain rate less the false-abstain rate) while no dataset's false-abstain rate on the
// selected answerable questions exceeds maxFalseAbstain; ties go to the rule listed first.
func bestRule(asked, without []eval.AnswerResult, keep func(int) bool) reader.Rule {
	best, bestScore := reader.DefaultRule, math.Inf(-1)
	for _, rule := range abstainRules() {
		score, ok := 0.0, true
		for d := range asked {
			f := figuresOf(asked[d], without[d], keep, func(int) reader.Rule { return rule })
			if f.FalseAbstainRate > maxFalseAbstain {
				ok = false
				break
			}
			score += (f.AbstainRate - f.FalseAbstainRate) / float64(len(asked))
		}
		if ok && score > bestScore {
			best, bestScore = rule, score
		}
	}
	return best
}

func figures(asked, without eval.AnswerResult, rule func(int) reader.Rule) abstainFigures {
	return figuresOf(asked, without, func(int) bool { return true }, rule)
}

// figuresOf applies rule(i) to the i-th question of both runs, for the positions keep selects; an
// answer without signals (a model's) keeps its own decision. A nil rule never abstains (what the
// reader writes when it is not allowed to).
func figuresOf(asked, without eval.AnswerResult, keep func(int) bool, rule func(int) reader.Rule) abstainFigures {
	var f abstainFigures
	var nu int
	abstains := func(q eval.AnswerQuery, r reader.Rule) bool {
		if rule == nil {
			return false
		}
		if q.Signals == nil {
			return q.Abstained
		}
		return r.Abstain(*q.Signals)
	}
	for i, q := range asked.All {
		if q.Error != "" || !keep(i) {
			continue
		}
		f.Questions++
		switch {
		case abstains(q, ruleAt(rule, i)):
			f.FalseAbstainRate++
			if q.ComposedRight {
				f.AbstainedRight++
			}
		case q.ComposedRight:
			f.AnswerRecall++
		}
	}
	for i, q := range without.All {
		if q.Error != "" || !keep(i) {
			continue
		}
		nu++
		if abstains(q, ruleAt(rule, i)) {
			f.AbstainRate++
		}
	}
	if f.Questions > 0 {
		f.FalseAbstainRate /= float64(f.Questions)
		f.AnswerRecall /= float64(f.Questions)
	}
	if nu > 0 {
		f.AbstainRate /= float64(nu)
	}
	return f
}

func ruleAt(rule func(int) reader.Rule, i int) reader.Rule {
	if rule == nil {
		return reader.Rule{}
	}
	return rule(i)
}
