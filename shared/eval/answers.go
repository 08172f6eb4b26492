package eval

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/docmind/docmind/shared/answer/reader"
)

// Outcome is one answered question as the answer metrics see it.
type Outcome struct {
	Text     string   // the answer as the user reads it
	Cited    []string // corpus ids of the cited sources, in citation order
	Band     string   // HIGH, MEDIUM, LOW (empty for a short circuit)
	Invalid  int      // [n] markers that name no source
	Answerer string   // llm or extractive
	// Abstained says the answer declined: the documents do not answer the question.
	Abstained bool
	// Confidence is the answer's confidence score (an estimate of the probability that it is right
	// when calibrated); ClaimsSupported the share of its cited sentences its sources support.
	Confidence      float64
	ClaimsSupported float64
	// Features are the confidence's inputs (answer.Features.Vector), kept for fitting a calibration.
	Features []float64
	// Signals, when set, are the abstain rule's inputs for an answer written without abstaining: the
	// run decides abstention itself with AnswerOptions.Rule (ApplyRule), so that rules can be compared
	// on the same answers. Nil: Abstained is the answerer's own decision.
	Signals *reader.Signals
}

// Question is one question as the answerer is asked it.
type Question struct {
	ID   string
	Text string
	// Without are the corpus ids of documents retrieval must leave out (the unanswerable mode: the
	// question's judged-relevant documents).
	Without []string
}

// Answerer answers one question through the whole pipeline.
type Answerer func(ctx context.Context, q Question) (Outcome, error)

// AnswerOptions shape an answer run.
type AnswerOptions struct {
	// Unanswerable asks every question without its judged-relevant documents (Question.Without): the
	// right outcome is to abstain, and AbstainRate is the share that did.
	Unanswerable bool
	// Rule decides abstention for outcomes that carry Signals (reader.DefaultRule when zero).
	Rule reader.Rule
	// Sample, when positive, asks at most that many questions, evenly spaced over the dataset (every
	// k-th question with gold answers), for iterating on a shared machine.
	Sample int
}

// AnswerQuery is one question's answer metrics.
type AnswerQuery struct {
	ID     string   `json:"id"`
	Text   string   `json:"text"`
	Gold   []string `json:"gold"`
	Answer string   `json:"answer"`
	EM     float64  `json:"em"`
	F1     float64  `json:"f1"`
	Recall float64  `json:"answer_recall"` // 1 when a gold answer appears in the answer
	Band   string   `json:"band"`
	Error  string   `json:"error,omitempty"`
	// Confidence and ClaimsSupported are the outcome's; Correct is Recall == 1 (a gold answer is in it).
	Confidence      float64   `json:"confidence"`
	Correct         bool      `json:"correct"`
	ClaimsSupported float64   `json:"claims_supported"`
	Abstained       bool      `json:"abstained,omitempty"`
	Answerer        string    `json:"-"`
	Features        []float64 `json:"-"`
	// Signals are the abstain rule's inputs (nil: the answerer decided); Composed the answer written
	// without abstaining and its metrics (Recall, EM, F1 hold 0 when the rule abstains), and
	// Grounded, CitedRelevant its citations' checks.
	Signals       *reader.Signals `json:"-"`
	Composed      string          `json:"-"`
	ComposedEM    float64         `json:"-"`
	ComposedF1    float64         `json:"-"`
	ComposedRight bool            `json:"-"`
	Grounded      bool            `json:"-"`
	CitedRelevant bool            `json:"-"`
}

// BandStat is one confidence band's size and precision: the share of its answers that hold a gold
// answer.
type BandStat struct {
	N            int     `json:"n"`
	AnswerRecall float64 `json:"answer_recall"`
}

// Bin is one bin of the reliability diagram: answers whose confidence is in [Lo, Hi), their mean
// confidence and the share that were right.
type Bin struct {
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	N          int     `json:"n"`
	Confidence float64 `json:"confidence"`
	Accuracy   float64 `json:"accuracy"`
}

// AnswerResult is the answer stage's report over the questions that have gold answers.
type AnswerResult struct {
	Dataset  string `json:"dataset"`
	Split    string `json:"split"`
	Variant  string `json:"variant"`
	Answerer string `json:"answerer"`
	Queries  int    `json:"queries"`
	// EM and F1 are SQuAD's (CMRC's for Chinese: characters are tokens), maximum over the gold answers;
	// AnswerRecall is the share of answers that contain a gold answer (normalised), the fairer measure
	// for an extractive answerer, whose answers are whole sentences.
	EM           float64 `json:"em"`
	F1           float64 `json:"f1"`
	AnswerRecall float64 `json:"answer_recall"`
	// Abstained counts the answers that declined. Asked with their documents, every question here has
	// a gold answer, so each is a false abstention, FalseAbstainRate is their share of the questions
	// and AbstainedRight counts those whose answer, written anyway, held the gold answer (the recall
	// abstaining cost). Unanswerable (asked without them), AbstainRate is the share that declined.
	Unanswerable     bool         `json:"unanswerable,omitempty"`
	Abstained        int          `json:"abstained"`
	FalseAbstainRate float64      `json:"false_abstain_rate"`
	AbstainRate      float64      `json:"abstain_rate"`
	AbstainedRight   int          `json:"abstained_right"`
	Rule             *reader.Rule `json:"abstain_rule,omitempty"`
	// Grounded is the share of answers with at least one valid citation and none invalid; CitedRelevant
	// the share whose cited sources include a document judged relevant.
	Grounded      float64        `json:"grounded"`
	CitedRelevant float64        `json:"cited_relevant"`
	Bands         map[string]int `json:"bands"`
	// BandStats is each band's size and precision; ECE the expected calibration error over 10 equal
	// bins of confidence (the answer-weighted mean gap between confidence and accuracy); Reliability the
	// bins themselves.
	BandStats   map[string]BandStat `json:"band_stats"`
	ECE         float64             `json:"ece"`
	Reliability []Bin               `json:"reliability"`
	// All is every question's record, in dataset order (written by --out, not in the JSON report).
	All    []AnswerQuery `json:"-"`
	P50ms  float64       `json:"p50_ms"`
	P95ms  float64       `json:"p95_ms"`
	Errors int           `json:"errors"`
	Worst  []AnswerQuery `json:"worst"`
}

// RunAnswers answers every judged question that has gold answers.
func RunAnswers(ctx context.Context, ds *Dataset, a Answerer, opt AnswerOptions) AnswerResult {
	res := AnswerResult{Dataset: ds.Name, Split: ds.Split, Variant: "answer", Unanswerable: opt.Unanswerable, Bands: map[string]int{}}
	var lat []float64
	var all []AnswerQuery
	answerers := map[string]int{}
	step, seen := 1, 0
	if opt.Sample > 0 {
		n := 0
		for _, q := range ds.Queries {
			if len(ds.Answers[q.ID]) > 0 {
				n++
			}
		}
		step = max(1, (n+opt.Sample-1)/opt.Sample)
	}
	for _, q := range ds.Queries {
		gold := ds.Answers[q.ID]
		if len(gold) == 0 || ctx.Err() != nil {
			continue
		}
		if seen++; (seen-1)%step != 0 {
			continue
		}
		res.Queries++
		asked := Question{ID: q.ID, Text: q.Text}
		if opt.Unanswerable {
			for id, rel := range ds.Qrels[q.ID] {
				if rel > 0 {
					asked.Without = append(asked.Without, id)
				}
			}
			slices.Sort(asked.Without)
		}
		start := time.Now()
		out, err := a(ctx, asked)
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
		aq := AnswerQuery{ID: q.ID, Text: q.Text, Gold: gold}
		if err != nil {
			res.Errors++
			aq.Error = err.Error()
			all = append(all, aq)
			continue
		}
		answerers[out.Answerer]++
		aq.Composed, aq.Band, aq.Confidence, aq.ClaimsSupported = out.Text, out.Band, out.Confidence, out.ClaimsSupported
		aq.Answerer, aq.Features, aq.Abstained, aq.Signals = out.Answerer, out.Features, out.Abstained, out.Signals
		body := AnswerBody(out.Text)
		for _, g := range gold {
			aq.ComposedEM = max(aq.ComposedEM, ExactMatch(body, g))
			aq.ComposedF1 = max(aq.ComposedF1, F1(body, g))
			aq.ComposedRight = aq.ComposedRight || ContainsAnswer(body, g)
		}
		aq.Grounded = len(out.Cited) > 0 && out.Invalid == 0
		for _, id := range out.Cited {
			aq.CitedRelevant = aq.CitedRelevant || ds.Qrels[q.ID][id] > 0
		}
		all = append(all, aq)
	}
	for name := range answerers {
		if res.Answerer != "" {
			res.Answerer += "+"
		}
		res.Answerer += name
	}
	res.All = all
	res.ApplyRule(opt.Rule)
	slices.Sort(lat)
	res.P50ms, res.P95ms = percentile(lat, 0.50), percentile(lat, 0.95)
	return res
}

// ApplyRule decides abstention with rule (reader.DefaultRule when zero) for the answers that carry
// the rule's signals, and recomputes every figure: an abstention holds no answer (recall, EM, F1,
// grounded and cited relevant 0) and is left out of the bands and the calibration error, which
// describe the answers given.
func (r *AnswerResult) ApplyRule(rule reader.Rule) {
	if rule == (reader.Rule{}) {
		rule = reader.DefaultRule
	}
	r.Rule = &rule
	r.EM, r.F1, r.AnswerRecall, r.Grounded, r.CitedRelevant = 0, 0, 0, 0, 0
	r.Abstained, r.AbstainedRight = 0, 0
	for i := range r.All {
		q := &r.All[i]
		if q.Error != "" {
			continue
		}
		if q.Signals != nil {
			q.Abstained = rule.Abstain(*q.Signals)
		}
		q.Answer, q.EM, q.F1, q.Recall, q.Correct = q.Composed, q.ComposedEM, q.ComposedF1, 0, q.ComposedRight
		if q.Correct {
			q.Recall = 1
		}
		if q.Abstained {
			r.Abstained++
			if q.ComposedRight {
				r.AbstainedRight++
			}
			if q.Signals != nil {
				q.Answer = reader.AbstainText(q.Text, *q.Signals)
			}
			q.EM, q.F1, q.Recall, q.Correct = 0, 0, 0, false
			continue
		}
		r.EM += q.EM
		r.F1 += q.F1
		r.AnswerRecall += q.Recall
		if q.Grounded {
			r.Grounded++
		}
		if q.CitedRelevant {
			r.CitedRelevant++
		}
	}
	r.FalseAbstainRate, r.AbstainRate = 0, 0
	if n := float64(r.Queries); n > 0 {
		r.EM /= n
		r.F1 /= n
		r.AnswerRecall /= n
		r.Grounded /= n
		r.CitedRelevant /= n
		if r.Unanswerable {
			r.AbstainRate = float64(r.Abstained) / n
		} else {
			r.FalseAbstainRate = float64(r.Abstained) / n
		}
	}
	r.Summarise()
	worst := slices.Clone(r.All)
	slices.SortStableFunc(worst, func(a, b AnswerQuery) int {
		switch {
		case (a.Error != "") != (b.Error != ""): // failures first: they are the first thing to read
			if a.Error != "" {
				return -1
			}
			return 1
		case a.F1 < b.F1:
			return -1
		case a.F1 > b.F1:
			return 1
		}
		return 0
	})
	r.Worst = worst[:min(10, len(worst))]
}

// Summarise computes the band statistics, the reliability bins and the expected calibration error
// from All (answered questions only; failures have no confidence). Call it again after changing the
// records' confidences and bands.
func (r *AnswerResult) Summarise() {
	// every band is reported, an empty one with n 0: a missing key read as "not measured", and a
	// report where no answer is HIGH should say so
	r.BandStats = map[string]BandStat{"HIGH": {}, "MEDIUM": {}, "LOW": {}}
	r.Bands = map[string]int{"HIGH": 0, "MEDIUM": 0, "LOW": 0}
	r.Reliability = make([]Bin, 10)
	for i := range r.Reliability {
		r.Reliability[i].Lo, r.Reliability[i].Hi = float64(i)/10, float64(i+1)/10
	}
	n := 0
	for _, q := range r.All {
		if q.Error != "" || q.Abstained {
			continue
		}
		n++
		r.Bands[q.Band]++
		b := r.BandStats[q.Band]
		b.N++
		if q.Correct {
			b.AnswerRecall++
		}
		r.BandStats[q.Band] = b
		i := min(9, max(0, int(q.Confidence*10)))
		r.Reliability[i].N++
		r.Reliability[i].Confidence += q.Confidence
		if q.Correct {
			r.Reliability[i].Accuracy++
		}
	}
	for k, b := range r.BandStats {
		if b.N > 0 {
			b.AnswerRecall /= float64(b.N)
		}
		r.BandStats[k] = b
	}
	r.ECE = 0
	for i := range r.Reliability {
		b := &r.Reliability[i]
		if b.N == 0 {
			continue
		}
		b.Confidence /= float64(b.N)
		b.Accuracy /= float64(b.N)
		r.ECE += float64(b.N) / float64(n) * math.Abs(b.Confidence-b.Accuracy)
	}
}

// ReliabilityMarkdown renders the reliability diagram as a table.
func ReliabilityMarkdown(r AnswerResult) string {
	var b strings.Builder
	b.WriteString("| confidence | answers | mean confidence | share right |\n|---|---|---|---|\n")
	for _, bin := range r.Reliability {
		if bin.N == 0 {
			fmt.Fprintf(&b, "| %.1f-%.1f | 0 | | |\n", bin.Lo, bin.Hi)
			continue
		}
		fmt.Fprintf(&b, "| %.1f-%.1f | %d | %.3f | %.3f |\n", bin.Lo, bin.Hi, bin.N, bin.Confidence, bin.Accuracy)
	}
	return b.String()
}

var (
	citeMarks = regexp.MustCompile(`\[\d+\]`)
	articles  = regexp.MustCompile(`\b(a|an|the)\b`)
)

// AnswerBody strips what is not the answer's content: citation markers, list bullets and a first
// paragraph that only says no model is configured.
func AnswerBody(s string) string {
	if i := strings.Index(s, "\n\n"); i >= 0 && (strings.Contains(strings.ToLower(s[:i]), "no language model is configured") || strings.Contains(s[:i], "未配置语言模型")) {
		s = s[i+2:]
	}
	s = citeMarks.ReplaceAllString(s, "")
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		lines = append(lines, strings.TrimPrefix(strings.TrimSpace(l), "- "))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// normTokens normalises as SQuAD does (lower case, no punctuation, no English articles) and splits into
// tokens, each CJK character being one token (CMRC 2018's rule).
func normTokens(s string) []string {
	s = articles.ReplaceAllString(strings.ToLower(s), " ")
	var out []string
	var word strings.Builder
	flush := func() {
		if word.Len() > 0 {
			out = append(out, word.String())
			word.Reset()
		}
	}
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			word.WriteRune(r)
		default: // punctuation and spaces separate and vanish
			flush()
		}
	}
	flush()
	return out
}

// ExactMatch is 1 when the normalised texts are equal.
func ExactMatch(answer, gold string) float64 {
	if slices.Equal(normTokens(answer), normTokens(gold)) {
		return 1
	}
	return 0
}

// F1 is the token-overlap F1 of answer against gold.
func F1(answer, gold string) float64 {
	a, g := normTokens(answer), normTokens(gold)
	if len(a) == 0 || len(g) == 0 {
		if len(a) == len(g) {
			return 1
		}
		return 0
	}
	count := map[string]int{}
	for _, t := range g {
		count[t]++
	}
	common := 0
	for _, t := range a {
		if count[t] > 0 {
			count[t]--
			common++
		}
	}
	if common == 0 {
		return 0
	}
	p, r := float64(common)/float64(len(a)), float64(common)/float64(len(g))
	return 2 * p * r / (p + r)
}

// ContainsAnswer says whether the normalised gold answer appears, as a token sequence, in the answer.
func ContainsAnswer(answer, gold string) bool {
	a, g := normTokens(answer), normTokens(gold)
	if len(g) == 0 {
		return false
	}
	for i := 0; i+len(g) <= len(a); i++ {
		if slices.Equal(a[i:i+len(g)], g) {
			return true
		}
	}
	return false
}

// AnswerMarkdown renders the answer report.
func AnswerMarkdown(r AnswerResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Answer evaluation: %s (%s split, %d questions with gold answers, answerer %s)\n\n", r.Dataset, r.Split, r.Queries, r.Answerer)
	b.WriteString("| EM | F1 | answer recall | grounded | cited relevant | HIGH | MEDIUM | LOW | HIGH precision | MEDIUM precision | ECE | p50 ms | p95 ms | errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %.4f | %.4f | %.4f | %.4f | %.4f | %d | %d | %d | %.3f | %.3f | %.3f | %.2f | %.2f | %d |\n", r.EM, r.F1, r.AnswerRecall, r.Grounded, r.CitedRelevant,
		r.Bands["HIGH"], r.Bands["MEDIUM"], r.Bands["LOW"], r.BandStats["HIGH"].AnswerRecall, r.BandStats["MEDIUM"].AnswerRecall, r.ECE, r.P50ms, r.P95ms, r.Errors)
	b.WriteString("\n## Reliability (10 bins)\n\n")
	b.WriteString(ReliabilityMarkdown(r))
	b.WriteString("\n## Lowest F1\n\n| question | gold | answer | F1 |\n|---|---|---|---|\n")
	cell := func(s string, n int) string {
		s = strings.Join(strings.Fields(s), " ")
		if r := []rune(s); len(r) > n {
			s = string(r[:n]) + "..."
		}
		return strings.ReplaceAll(s, "|", "\\|")
	}
	for _, q := range r.Worst {
		ans := q.Answer
		if q.Error != "" {
			ans = "error: " + q.Error
		}
		fmt.Fprintf(&b, "| %s: %s | %s | %s | %.3f |\n", q.ID, cell(q.Text, 60), cell(strings.Join(q.Gold, " / "), 40), cell(AnswerBody(ans), 80), q.F1)
	}
	return b.String()
}
