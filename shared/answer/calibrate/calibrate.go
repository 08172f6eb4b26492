// Package calibrate maps an answer's features (FeaturesOf: the grade, the claims, what the question
// asks and what the answer holds) to the probability that it is right, with calibrations fitted by
// `docmind eval --variant answer --calibrate` and embedded as calibration.json.
package calibrate

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/claims"
	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/answer/reader"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/text"
)

// calibrate.go turns an answer's signals into an estimate of the probability that it is right (that
// it contains the answer a person would accept): a logistic model over a few features, then an
// isotonic map of its output, both fitted per answerer on the train splits of the evaluation datasets
// by `docmind eval --variant answer --calibrate` and embedded here as calibration.json. A badge that
// says HIGH must be right about as often as it claims (issue #13: HotpotQA had 139 HIGH answers of 250
// while 40% of answers held the gold answer).

// FeatureNames name the features, in the order of Features.Vector.
var FeatureNames = []string{"grader_high", "grader_ambiguous", "grader_coverage", "rerank_top", "reranker_ran",
	"claims_supported", "number_missing", "asked", "asked_held", "quote_coverage", "cites_top", "cjk",
	"line_coverage", "top_margin", "cited_sources", "question_names", "names_held", "numbers_held", "asked_number",
	"asked_name", "question_words", "top_passage_coverage", "spread", "subjects", "described"}

// Positions in Features.Vector that the run-time rules read.
const (
	featRerankTop     = 3
	featRerankerRan   = 4
	featNumberMissing = 6
	featCJK           = 11
	featWords         = 20
	featSubjects      = 23
	featDescribed     = 24
)

// Features are the signals confidence is estimated from, each in [0,1].
type Features struct {
	GraderHigh      float64 `json:"grader_high"`      // the grader's tier is HIGH
	GraderAmbiguous float64 `json:"grader_ambiguous"` // ... or AMBIGUOUS (LOW is neither)
	GraderCoverage  float64 `json:"grader_coverage"`  // the grader's term coverage of the top evidence
	RerankTop       float64 `json:"rerank_top"`       // the rerank top score when a reranker ran, else 0
	RerankerRan     float64 `json:"reranker_ran"`
	ClaimsSupported float64 `json:"claims_supported"` // share of cited sentences the passages support
	NumberMissing   float64 `json:"number_missing"`   // a cited sentence states a number its passages lack
	Asked           float64 `json:"asked"`            // the question asks for a number, date, name...
	AskedHeld       float64 `json:"asked_held"`       // ... and the answer holds one
	QuoteCoverage   float64 `json:"quote_coverage"`   // share of the question's terms the answer holds (longer terms weigh more)
	CitesTop        float64 `json:"cites_top"`        // the answer cites source [1]
	CJK             float64 `json:"cjk"`              // the question is Chinese (or Japanese, Korean)
	LineCoverage    float64 `json:"line_coverage"`    // the best single line's share of the question's terms
	TopMargin       float64 `json:"top_margin"`       // how far the top passage's score leads the second's (relative)
	// What tells kinds of question apart (a single-passage lookup, a multi-hop question, a Chinese one),
	// read from the question and the answer, never from where the question came from.
	CitedSources  float64 `json:"cited_sources"`  // distinct sources cited, /5 (a bridge answer cites two)
	QuestionNames float64 `json:"question_names"` // the question's names (reader.KeyTerms), /4
	NamesHeld     float64 `json:"names_held"`     // share of those names the answer holds (0 without names)
	NumbersHeld   float64 `json:"numbers_held"`   // share of the question's numbers the answer holds (0 without)
	AskedNumber   float64 `json:"asked_number"`   // the question asks for a number, date, age, price or duration
	AskedName     float64 `json:"asked_name"`     // ... for a name or a place
	QuestionWords float64 `json:"question_words"` // the question's length in words (Chinese: characters / 2), /40
	// TopPassageCoverage is the share of the question's terms the top passage alone holds; Spread what
	// the next two passages add to it (a multi-hop question's terms are spread over its passages).
	TopPassageCoverage float64 `json:"top_passage_coverage"`
	Spread             float64 `json:"spread"`
	// Subjects is how many different subjects the top five passages are about, (n-1)/4: a subject is
	// a passage's document title (the first heading of its chapter path), else its document. A lookup's
	// passages come from its subject's document; a multi-hop question's from as many documents as its
	// hops. Described: the question describes what it asks about by a relative clause after its first
	// two words ("the woman who portrayed Corliss Archer") instead of naming it. Together with the
	// question's length they pick the English spread map (Key). English questions only: the Chinese map
	// has seen single-passage questions alone, and held out these features only added noise to it
	// (CMRC 2018's ECE 0.015 without, 0.026 with).
	Subjects  float64 `json:"subjects"`
	Described float64 `json:"described"`
}

// Vector is the features in FeatureNames order.
func (f Features) Vector() []float64 {
	return []float64{f.GraderHigh, f.GraderAmbiguous, f.GraderCoverage, f.RerankTop, f.RerankerRan, f.ClaimsSupported,
		f.NumberMissing, f.Asked, f.AskedHeld, f.QuoteCoverage, f.CitesTop, f.CJK, f.LineCoverage, f.TopMargin,
		f.CitedSources, f.QuestionNames, f.NamesHeld, f.NumbersHeld, f.AskedNumber, f.AskedName, f.QuestionWords,
		f.TopPassageCoverage, f.Spread, f.Subjects, f.Described}
}

// FeaturesOf reads the features of an answer (any answerer: they come from the text, the grade and the
// claims, not from the answerer's internals).
func FeaturesOf(question, answer string, ev []rank.Evidence, g rank.Grade, rerankKnown bool, checked []claims.Claim) Features {
	nSources := len(ev)
	f := Features{GraderCoverage: g.Coverage, ClaimsSupported: claims.Supported(checked)}
	switch g.Tier {
	case rank.TierHigh:
		f.GraderHigh = 1
	case rank.TierAmbiguous:
		f.GraderAmbiguous = 1
	}
	if rerankKnown {
		f.RerankerRan, f.RerankTop = 1, math.Max(0, math.Min(1, g.TopScore))
	}
	for _, c := range checked {
		if c.NumberMissing {
			f.NumberMissing = 1
		}
	}
	body := lang.CiteRe.ReplaceAllString(reader.WithoutNotice(answer), "")
	if asked := lang.AskedFor(question); asked != lang.AskedNone {
		f.Asked = 1
		if lang.Holds(body, asked, question) {
			f.AskedHeld = 1
		}
		switch asked {
		case lang.AskedName, lang.AskedPlace:
			f.AskedName = 1
		default:
			f.AskedNumber = 1
		}
	}
	kindOf(&f, question, body)
	qt := reader.QuestionTerms(question)
	f.QuoteCoverage = termCoverage(qt, body)
	// The answer's length is left out on purpose: "contains a gold answer" rewards long answers, and a
	// badge that marks a precise one-line answer down for being short would mislead the reader.
	for _, l := range claims.Sentences(body) {
		f.LineCoverage = math.Max(f.LineCoverage, termCoverage(qt, l))
	}
	if len(ev) > 0 {
		f.TopPassageCoverage = termCoverage(qt, ev[0].Text)
		var top3 []string
		for _, e := range ev[:min(3, len(ev))] {
			top3 = append(top3, e.Text)
		}
		f.Spread = math.Max(0, termCoverage(qt, strings.Join(top3, "\n"))-f.TopPassageCoverage)
	}
	if len(ev) > 1 && ev[0].Score > 0 {
		f.TopMargin = math.Max(0, math.Min(1, (ev[0].Score-ev[1].Score)/ev[0].Score))
	} else if len(ev) == 1 {
		f.TopMargin = 1
	}
	used, _ := lang.Citations(answer, nSources)
	f.CitesTop = b2f(slices.Contains(used, 1))
	f.CitedSources = math.Min(1, float64(len(used))/5)
	f.CJK = b2f(lang.HasCJK(question))
	if f.CJK == 0 {
		f.Subjects, f.Described = subjects(ev), b2f(describes(question))
	}
	return f
}

// relativeWords introduce a clause describing a noun.
var relativeWords = map[string]bool{"who": true, "that": true, "which": true, "whose": true, "whom": true, "where": true}

// describes reports whether an English question describes what it asks about by a relative clause
// after its first two words ("What position was held by the woman who portrayed ...").
func describes(q string) bool {
	for i, w := range strings.Fields(q) {
		if i > 1 && relativeWords[strings.ToLower(strings.Trim(w, ",;:\"'()?"))] {
			return true
		}
	}
	return false
}

// subjects is Features.Subjects: the distinct subjects of the top five passages, (n-1)/4.
func subjects(ev []rank.Evidence) float64 {
	seen := map[string]bool{}
	for _, e := range ev[:min(5, len(ev))] {
		key := "doc:" + e.DocumentID
		if root, _, _ := strings.Cut(e.Chapter, " > "); strings.TrimSpace(root) != "" {
			key = "title:" + strings.ToLower(strings.TrimSpace(root))
		}
		seen[key] = true
	}
	if len(seen) == 0 {
		return 0
	}
	return float64(len(seen)-1) / 4
}

// kindOf reads the features that tell kinds of question apart: how many names and how many words the
// question has, and whether the answer holds its names and numbers (a multi-hop question names a
// bridge the answer's second passage need not repeat; a lookup's answer repeats its subject).
func kindOf(f *Features, question, body string) {
	names := reader.KeyTerms(question)
	f.QuestionNames = math.Min(1, float64(len(names))/4)
	if len(names) > 0 {
		have := map[string]bool{}
		for _, t := range text.Analyze(body) {
			have[t] = true
		}
		held := 0
		for _, k := range names {
			for _, t := range text.Analyze(strings.Join(k, " ")) {
				if have[t] {
					held++
					break
				}
			}
		}
		f.NamesHeld = float64(held) / float64(len(names))
	}
	if qn := lang.ExtractNumbers(question); len(qn) > 0 {
		bn := lang.NumbersOf(body)
		held := 0
		for _, n := range qn {
			if bn.Has(n.Value) {
				held++
			}
		}
		f.NumbersHeld = float64(held) / float64(len(qn))
	}
	words := float64(len(strings.Fields(question)))
	if lang.HasCJK(question) {
		words = float64(utf8.RuneCountInString(question)) / 2
	}
	f.QuestionWords = math.Min(1, words/40)
}

// termCoverage is the share of the question's terms s holds, longer terms weighing more.
func termCoverage(qt []string, s string) float64 {
	if len(qt) == 0 {
		return 0
	}
	have := map[string]bool{}
	for _, t := range text.Analyze(s) {
		have[t] = true
	}
	var got, all float64
	for _, t := range qt {
		w := float64(min(utf8.RuneCountInString(t), 10))
		all += w
		if have[t] {
			got += w
		}
	}
	return got / all
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Key names the calibration an answer takes: per answerer and per question language
// ("extractive/zh", "extractive/en"), and for English, per kind of question: a question of 12 words or
// more, or one that describes its subject by a clause, whose top five passages are about five
// different subjects (Features.Subjects), takes "extractive/en/spread", the multi-hop shape. One map
// over both languages was tried: fitted mostly on CMRC's Chinese single-passage questions, its
// features ran backwards on HotpotQA's English multi-hop ones (held out, ten folds: MEDIUM answers
// right 46% of the time, LOW ones 53%; ECE 0.088). One English map over SQuAD's lookups and
// HotpotQA's multi-hop questions gave the multi-hop answers the lookups' estimates (held out, 106 HIGH
// answers right 48% of the time, ECE 0.29): no feature of a single map told them apart. Five subjects
// alone did (all of HotpotQA's answers, 6% of SQuAD's), but a small knowledge base of separate
// documents gives every question five: the demo's "What is the monthly price of the Team plan?" fell
// to 0.55, so the question's shape must agree.
func Key(answerer string, x []float64) string {
	if len(x) > featCJK && x[featCJK] >= 0.5 {
		return answerer + "/zh"
	}
	if len(x) > featDescribed && x[featSubjects] >= 1 && (x[featWords] >= 12.0/40-1e-9 || x[featDescribed] >= 0.5) {
		return answerer + "/en/spread"
	}
	return answerer + "/en"
}

// Language is the key without the kind of question ("extractive/en" for "extractive/en/spread"): the
// map an answer falls back to when its kind has none, and the group whose datasets the evaluation
// weighs equally when fitting.
func Language(key string) string {
	if i := strings.Index(key, "/"); i >= 0 {
		if j := strings.Index(key[i+1:], "/"); j >= 0 {
			return key[:i+1+j]
		}
	}
	return key
}

// For is the calibrator an answer with features x takes from cs: its key's, else its language's,
// else the answerer's (a file fitted before kinds of question were keyed); nil when none fits x.
func For(cs Calibrations, answerer string, x []float64) *Calibrator {
	key := Key(answerer, x)
	for _, k := range []string{key, Language(key), answerer} {
		if c := cs[k]; c != nil && len(c.Weights) == len(x) {
			return c
		}
	}
	return nil
}

// Calibrator maps features to a probability of being right: a logistic model (weights over
// standardised features), then an isotonic step map of its output fitted on the same data.
type Calibrator struct {
	Answerer string    `json:"answerer"`
	FittedOn string    `json:"fitted_on"` // which data, for the reader of the file
	N        int       `json:"n"`         // answers fitted on
	Positive float64   `json:"positive"`  // share of them that were right
	Features []string  `json:"features"`  // FeatureNames at fitting time
	Mean     []float64 `json:"mean"`
	Scale    []float64 `json:"scale"`
	Weights  []float64 `json:"weights"`
	Bias     float64   `json:"bias"`
	// Steps is the isotonic map: the estimate is Y[i] for the largest X[i] <= the logistic output.
	X []float64 `json:"x"`
	Y []float64 `json:"y"`
}

// Sample is one answered question for fitting: its features and whether it was right.
type Sample struct {
	X       []float64
	Correct bool
	// Weight is the answer's weight in the fit (0 counts as 1): the evaluation gives each dataset's
	// answers together the same weight, so 250 multi-hop answers are not drowned by 4,961 lookups.
	Weight float64
}

// w is the sample's weight.
func (s Sample) w() float64 {
	if s.Weight <= 0 {
		return 1
	}
	return s.Weight
}

// Logit is the logistic model's output in [0,1].
func (c *Calibrator) Logit(x []float64) float64 {
	z := c.Bias
	for i, v := range x {
		if i < len(c.Weights) {
			z += c.Weights[i] * (v - c.Mean[i]) / c.Scale[i]
		}
	}
	return 1 / (1 + math.Exp(-z))
}

// logistic is 1/(1+e^-(bias + w.z)) for standardised features z.
func logistic(bias float64, w, z []float64) float64 {
	for i, v := range z {
		bias += w[i] * v
	}
	return 1 / (1 + math.Exp(-bias))
}

// Predict is the calibrated probability.
func (c *Calibrator) Predict(x []float64) float64 {
	p := c.Logit(x)
	if len(c.X) == 0 {
		return p
	}
	i, found := slices.BinarySearch(c.X, p)
	if !found {
		i--
	}
	if i < 0 {
		return c.Y[0]
	}
	return c.Y[i]
}

// Fit fits a calibrator on samples: L2-regularised logistic regression by gradient descent on
// standardised features, then pool-adjacent-violators isotonic regression of the outcome on the
// logistic output, in blocks of at least minBlock answers, each block's rate shrunk towards the base
// rate by one pseudo-answer of each kind (so that a small block never claims certainty).
func Fit(answerer string, samples []Sample) (*Calibrator, error) {
	if len(samples) < 20 {
		return nil, fmt.Errorf("calibration needs at least 20 answers, got %d", len(samples))
	}
	d := len(samples[0].X)
	c := &Calibrator{Answerer: answerer, N: len(samples), Features: slices.Clone(FeatureNames), Mean: make([]float64, d), Scale: make([]float64, d), Weights: make([]float64, d)}
	var n float64
	for _, s := range samples {
		for i, v := range s.X {
			c.Mean[i] += s.w() * v
		}
		if s.Correct {
			c.Positive += s.w()
		}
		n += s.w()
	}
	c.Positive /= n
	for i := range c.Mean {
		c.Mean[i] /= n
	}
	for _, s := range samples {
		for i, v := range s.X {
			c.Scale[i] += s.w() * (v - c.Mean[i]) * (v - c.Mean[i])
		}
	}
	for i := range c.Scale {
		c.Scale[i] = math.Sqrt(c.Scale[i] / n)
		if c.Scale[i] < 1e-6 {
			c.Scale[i] = 1 // a constant feature: its weight stays 0
		}
	}
	// Fewer answers (by their effective number), stronger shrinkage: on HotpotQA's 250 (ten-fold,
	// held out) the expected calibration error was 0.091 at lambda 1 and 0.035 at 10, where the
	// estimate stays near the base rate: the features do not tell its right answers from its wrong ones.
	lambda := 1e-2
	if effective(samples) < 400 {
		lambda = 10
	}
	const rate, rounds = 0.5, 3000
	c.Bias = math.Log((c.Positive + 1e-3) / (1 - c.Positive + 1e-3))
	z := make([][]float64, len(samples)) // the standardised features, computed once
	for k, s := range samples {
		z[k] = make([]float64, d)
		for i, v := range s.X {
			z[k][i] = (v - c.Mean[i]) / c.Scale[i]
		}
	}
	grad := make([]float64, d)
	for range rounds {
		clear(grad)
		var gb float64
		for k, s := range samples {
			e := s.w() * (logistic(c.Bias, c.Weights, z[k]) - b2f(s.Correct))
			gb += e
			for i, v := range z[k] {
				grad[i] += e * v
			}
		}
		c.Bias -= rate * gb / n
		for i := range c.Weights {
			c.Weights[i] -= rate / (1 + lambda) * (grad[i]/n + lambda*c.Weights[i]) // a stable step under strong shrinkage
		}
	}
	// The isotonic step map needs answers to be stable: below 400 the logistic output stands alone
	// (held-out ECE on HotpotQA's 250 was worse with a step map fitted on half of them).
	if effective(samples) >= 400 {
		c.X, c.Y = isotonic(c, samples, max(20, len(samples)/40))
	}
	return c, nil
}

// effective is how many answers the samples are worth, (sum of weights)^2 / sum of squares (Kish):
// the count when the weights are equal; the spread map's 221 HotpotQA answers weighted up beside 69
// SQuAD ones sum to a weight of 2,391 but are worth about 230 answers, and are shrunk as such.
func effective(samples []Sample) float64 {
	var sum, sq float64
	for _, s := range samples {
		sum += s.w()
		sq += s.w() * s.w()
	}
	return sum * sum / sq
}

// isotonic fits the step map of the outcome on the logistic output (pool adjacent violators).
func isotonic(c *Calibrator, samples []Sample, minBlock int) ([]float64, []float64) {
	type pt struct {
		p, y, w float64
	}
	pts := make([]pt, len(samples))
	for i, s := range samples {
		pts[i] = pt{c.Logit(s.X), s.w() * b2f(s.Correct), s.w()}
	}
	slices.SortFunc(pts, func(a, b pt) int { return cmpFloat(a.p, b.p) })
	type block struct {
		lo     float64
		sum, n float64
	}
	var blocks []block
	for i := 0; i < len(pts); {
		j := min(len(pts), i+minBlock)
		for j < len(pts) && pts[j].p == pts[j-1].p { // ties stay in one block
			j++
		}
		if len(pts)-j < minBlock/2 { // a short tail joins the last block
			j = len(pts)
		}
		b := block{lo: pts[i].p}
		for _, q := range pts[i:j] {
			b.sum += q.y
			b.n += q.w
		}
		blocks = append(blocks, b)
		for len(blocks) > 1 {
			a, z := blocks[len(blocks)-2], blocks[len(blocks)-1]
			if a.sum/a.n < z.sum/z.n {
				break
			}
			blocks = blocks[:len(blocks)-2]
			blocks = append(blocks, block{lo: a.lo, sum: a.sum + z.sum, n: a.n + z.n})
		}
		i = j
	}
	// Each block's rate is shrunk towards the base rate by shrink pseudo-answers: the top block is the
	// one a HIGH badge rests on, and a step map fitted on the same answers flatters it (held out, the
	// top bin was 0.03 less accurate than its estimate with 2).
	const shrink = 8
	base := c.Positive
	xs, ys := make([]float64, len(blocks)), make([]float64, len(blocks))
	for i, b := range blocks {
		xs[i] = b.lo
		ys[i] = (b.sum + shrink*base) / (b.n + shrink) // shrunk towards the base rate
		if i > 0 && ys[i] < ys[i-1] {
			ys[i] = ys[i-1]
		}
	}
	xs[0] = 0
	return xs, ys
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

//go:embed calibration.json
var calibrationJSON []byte

// Calibrations are the fitted calibrators by answerer, as shipped in the binary.
type Calibrations map[string]*Calibrator

// ShippedCalibrations parses the embedded calibration.json (an empty map when it holds none).
func ShippedCalibrations() Calibrations {
	cs := Calibrations{}
	if err := json.Unmarshal(calibrationJSON, &cs); err != nil {
		return Calibrations{}
	}
	return cs
}

// Explain names what drove a calibrated estimate: the features whose standardised contribution is
// largest, with their direction.
func (c *Calibrator) Explain(f Features) string {
	x := f.Vector()
	type contrib struct {
		i int
		v float64
	}
	var cs []contrib
	for i := range x {
		if i < len(c.Weights) {
			cs = append(cs, contrib{i, c.Weights[i] * (x[i] - c.Mean[i]) / c.Scale[i]})
		}
	}
	slices.SortFunc(cs, func(a, b contrib) int { return cmpFloat(math.Abs(b.v), math.Abs(a.v)) })
	var parts []string
	for _, k := range cs[:min(3, len(cs))] {
		if math.Abs(k.v) < 0.05 {
			break
		}
		dir := "raises it"
		if k.v < 0 {
			dir = "lowers it"
		}
		parts = append(parts, describeFeature(FeatureNames[k.i], x[k.i])+" ("+dir+")")
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing sets this answer apart from their average")
	}
	if x[featRerankerRan] >= 0.5 && !c.sawReranker() {
		// the shipped maps were fitted offline, where no reranker ran: its score cannot move the
		// estimate, and the reader should not think it did
		parts = append(parts, fmt.Sprintf("a reranker scored the passages (top %.2f), but the calibration saw no reranker, so that score is not counted", x[featRerankTop]))
	}
	return strings.Join(parts, "; ")
}

// sawReranker reports whether the answers fitted on had a reranker's score: otherwise both rerank
// features carry weight 0 and were constant in fitting.
func (c *Calibrator) sawReranker() bool {
	for _, i := range []int{featRerankTop, featRerankerRan} {
		if i < len(c.Weights) && c.Weights[i] != 0 || i < len(c.Mean) && c.Mean[i] != 0 {
			return true
		}
	}
	return false
}

// describeFeature says one feature's value in words.
func describeFeature(name string, v float64) string {
	yes := v >= 0.5
	switch name {
	case "grader_high":
		return map[bool]string{true: "the grader rated the evidence HIGH", false: "the grader did not rate the evidence HIGH"}[yes]
	case "grader_ambiguous":
		return map[bool]string{true: "the grader rated the evidence AMBIGUOUS", false: "the grader did not rate the evidence AMBIGUOUS"}[yes]
	case "grader_coverage":
		return fmt.Sprintf("the top passages hold %.0f%% of the question's terms", 100*v)
	case "rerank_top":
		return fmt.Sprintf("rerank top score %.2f", v)
	case "reranker_ran":
		return map[bool]string{true: "a reranker scored the passages", false: "no reranker scored the passages"}[yes]
	case "claims_supported":
		return fmt.Sprintf("%.0f%% of the cited sentences are supported by their sources", 100*v)
	case "number_missing":
		return map[bool]string{true: "a cited number is not in its source", false: "every cited number is in its source"}[yes]
	case "asked":
		return map[bool]string{true: "the question asks for a specific kind of value", false: "the question asks for no specific kind of value"}[yes]
	case "asked_held":
		return map[bool]string{true: "the answer holds the kind of value asked for", false: "the answer lacks the kind of value asked for"}[yes]
	case "quote_coverage":
		return fmt.Sprintf("the answer holds %.0f%% of the question's terms", 100*v)
	case "cites_top":
		return map[bool]string{true: "it cites the top-ranked passage", false: "it does not cite the top-ranked passage"}[yes]
	case "cjk":
		return map[bool]string{true: "a Chinese question", false: "an English question"}[yes]
	case "line_coverage":
		return fmt.Sprintf("its best line holds %.0f%% of the question's terms", 100*v)
	case "top_margin":
		return fmt.Sprintf("the top passage leads the next by %.0f%%", 100*v)
	case "cited_sources":
		return fmt.Sprintf("it cites %.0f source(s)", math.Round(5*v))
	case "question_names":
		return fmt.Sprintf("the question has %.0f name(s)", math.Round(4*v))
	case "names_held":
		return fmt.Sprintf("the answer holds %.0f%% of the question's names", 100*v)
	case "numbers_held":
		return fmt.Sprintf("the answer holds %.0f%% of the question's numbers", 100*v)
	case "asked_number":
		return map[bool]string{true: "the question asks for a number or a date", false: "the question asks for no number or date"}[yes]
	case "asked_name":
		return map[bool]string{true: "the question asks for a name or a place", false: "the question asks for no name or place"}[yes]
	case "top_passage_coverage":
		return fmt.Sprintf("the top passage holds %.0f%% of the question's terms", 100*v)
	case "spread":
		return fmt.Sprintf("the next passages add %.0f%% of the question's terms", 100*v)
	case "subjects":
		return fmt.Sprintf("the top passages come from %.0f different document(s)", 1+math.Round(4*v))
	case "described":
		return map[bool]string{true: "the question describes what it asks about by a clause", false: "the question names what it asks about"}[yes]
	case "question_words":
		return fmt.Sprintf("a question of about %.0f words", math.Round(40*v))
	}
	return name
}

// Recalibrate is Assess's estimate for an answer whose features and share of supported claims are
// known, under calibrator k (evaluation uses it to score answers with a calibration fitted elsewhere).
func Recalibrate(k *Calibrator, x []float64, supported float64) float64 {
	p := k.Predict(x)
	if supported < 1 {
		p *= supported
	}
	if len(x) > featNumberMissing && x[featNumberMissing] >= 0.5 {
		p = math.Min(p, 0.84)
	}
	return math.Round(p*1000) / 1000
}
