package answer

import (
	"context"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

// Issue #13 review, finding 4: without a calibration for the answerer and language, a cited model
// answer is capped below HIGH (HIGH means right at least 85% of the time, and nothing measured that);
// with an llm map installed, the map decides, HIGH included.
func TestModelAnswerCalibration(t *testing.T) {
	evidence := []rank.Evidence{
		ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 1),
		ev("faq.html", "Changes take effect within one business day of our email confirmation.", 0.5),
	}
	const question = "How many days of paid annual leave do full-time employees get?"
	const reply = "Full-time employees receive 20 days of paid annual leave per year [1]."
	run := func(cal Calibrations) *Done {
		t.Helper()
		p := &Pipeline{Retriever: &fakeRetriever{res: &retrieve.Result{Evidence: evidence, Reranked: evidence,
			Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.95, Coverage: 1}}}, RerankKnown: true,
			LLM: fixedModel(reply), Model: "m", Calibration: cal}
		var rec recorder
		done, err := p.Run(context.Background(), Request{Tenant: "t", Question: question}, rec.emit)
		if err != nil {
			t.Fatal(err)
		}
		if done.Answerer != "llm" || len(done.Claims) != 1 || !done.Claims[0].Supported {
			t.Fatalf("answerer %q, claims %+v", done.Answerer, done.Claims)
		}
		return done
	}

	// The shipped maps are the extractive answerer's: they do not rate model answers.
	c := run(Calibrations{"extractive/en": constCalibrator("extractive/en", 0.97)}).Confidence
	if c.Calibrated || c.Score != UncalibratedCap || c.Band != BandMedium {
		t.Errorf("uncalibrated model answer, every claim supported: %+v", c)
	}
	for _, want := range []string{"no calibration for model answers yet (llm/en)", "docmind eval --variant answer --calibrate with the model configured", "capped at 0.84"} {
		if !strings.Contains(c.Reason, want) {
			t.Errorf("reason %q lacks %q", c.Reason, want)
		}
	}

	// An installed llm/en map is followed, up and down.
	for _, p := range []float64{0.93, 0.41} {
		c := run(Calibrations{"llm/en": constCalibrator("llm/en", p)}).Confidence
		if !c.Calibrated || c.Score != p || c.Band != Band(p) || !strings.Contains(c.Reason, "llm/en answers") {
			t.Errorf("llm/en map at %.2f: %+v", p, c)
		}
	}
	// The map is chosen by the question's language: an llm/zh map does not rate an English question.
	if c := run(Calibrations{"llm/zh": constCalibrator("llm/zh", 0.93)}).Confidence; c.Calibrated || c.Score > UncalibratedCap {
		t.Errorf("llm/zh map used for an English question: %+v", c)
	}
}

// The cap leaves lower uncalibrated scores alone and names no cap it did not apply.
func TestUncalibratedBelowCap(t *testing.T) {
	score, reason := uncalibrated(Confidence{Score: 0.7, Coverage: 1, Signal: 0.45}, "extractive", "extractive/en")
	if score != 0.7 || strings.Contains(reason, "capped") || !strings.Contains(reason, "no calibration for the extractive answerer (extractive/en)") {
		t.Errorf("score %.3f, reason %q", score, reason)
	}
}

// constCalibrator estimates p for every answer: no weights, a bias of logit(p), no step map.
func constCalibrator(answerer string, p float64) *Calibrator {
	n := len(FeatureNames)
	k := &Calibrator{Answerer: answerer, N: 100, Positive: p, Features: FeatureNames, Mean: make([]float64, n),
		Scale: make([]float64, n), Weights: make([]float64, n), X: []float64{0}, Y: []float64{p}}
	for i := range k.Scale {
		k.Scale[i] = 1
	}
	return k
}
