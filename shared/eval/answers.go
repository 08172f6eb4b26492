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
}

// Answerer answers one question through the whole pipeline.
type Answerer func(ctx context.Context, question string) (Outcome, error)

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
	// Abstained counts the answers that declined; every question here has a gold answer, so each is a
	// false abstention, and FalseAbstainRate is their share of the questions.
	Abstained        int     `json:"abstained"`
	FalseAbstainRate float64 `json:"false_abstain_rate"`
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
func RunAnswers(ctx context.Context, ds *Dataset, a Answerer) AnswerResult {
	res := AnswerResult{Dataset: ds.Name, Split: ds.Split, Variant: "answer", Bands: map[string]int{}}
	var lat []float64
	var all []AnswerQuery
	answerers := map[string]int{}
	for _, q := range ds.Queries {
		gold := ds.Answers[q.ID]
		if len(gold) == 0 || ctx.Err() != nil {
			continue
		}
		res.Queries++
		start := time.Now()
		out, err := a(ctx, q.Text)
		lat = append(lat, float64(time.Since(start).Microseconds())/1000)
		aq := AnswerQuery{ID: q.ID, Text: q.Text, Gold: gold}
		if err != nil {
			res.Errors++
			aq.Error = err.Error()
			all = append(all, aq)
			continue
		}
		answerers[out.Answerer]++
		aq.Answer, aq.Band, aq.Confidence, aq.ClaimsSupported = out.Text, out.Band, out.Confidence, out.ClaimsSupported
		aq.Answerer, aq.Features, aq.Abstained = out.Answerer, out.Features, out.Abstained
		if out.Abstained {
			res.Abstained++
		}
		body := AnswerBody(out.Text)
		for _, g := range gold {
			aq.EM = max(aq.EM, ExactMatch(body, g))
			aq.F1 = max(aq.F1, F1(body, g))
			if ContainsAnswer(body, g) {
				aq.Recall = 1
			}
		}
		aq.Correct = aq.Recall == 1
		res.EM += aq.EM
		res.F1 += aq.F1
		res.AnswerRecall += aq.Recall
		res.Bands[out.Band]++
		if len(out.Cited) > 0 && out.Invalid == 0 {
			res.Grounded++
		}
		for _, id := range out.Cited {
			if ds.Qrels[q.ID][id] > 0 {
				res.CitedRelevant++
				break
			}
		}
		all = append(all, aq)
	}
	if n := float64(res.Queries); n > 0 {
		res.EM /= n
		res.F1 /= n
		res.AnswerRecall /= n
		res.FalseAbstainRate = float64(res.Abstained) / n
		res.Grounded /= n
		res.CitedRelevant /= n
	}
	for name := range answerers {
		if res.Answerer != "" {
			res.Answerer += "+"
		}
		res.Answerer += name
	}
	res.All = slices.Clone(all)
	res.Summarise()
	slices.Sort(lat)
	res.P50ms, res.P95ms = percentile(lat, 0.50), percentile(lat, 0.95)
	slices.SortStableFunc(all, func(a, b AnswerQuery) int {
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
	res.Worst = all[:min(10, len(all))]
	return res
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
		if q.Error != "" {
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
