package answer

import (
	"context"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

// A fake model's answers run through the pipeline: the claims reach done, and a wrong number is never
// HIGH.
func TestPipelineClaimsWithModel(t *testing.T) {
	evidence := []rank.Evidence{
		ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 1),
		ev("faq.html", "Changes take effect within one business day of our email confirmation.", 0.5),
	}
	for _, c := range []struct {
		name, reply string
		supported   bool
	}{
		{"right", "Full-time employees receive 20 days of paid annual leave per year [1].", true},
		{"changed number", "Full-time employees receive 30 days of paid annual leave per year [1].", false},
		{"wrong source", "Full-time employees receive 20 days of paid annual leave per year [2].", false},
	} {
		p := &Pipeline{Retriever: &fakeRetriever{res: &retrieve.Result{Evidence: evidence, Reranked: evidence,
			Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.95, Coverage: 1}}}, RerankKnown: true,
			LLM: fixedModel(c.reply), Model: "m", Calibration: Calibrations{}}
		var rec recorder
		done, err := p.Run(context.Background(), Request{Tenant: "t", Question: "How many days of paid annual leave do full-time employees get?"}, rec.emit)
		if err != nil {
			t.Fatal(err)
		}
		if len(done.Claims) != 1 || done.Claims[0].Supported != c.supported {
			t.Fatalf("%s: claims %+v", c.name, done.Claims)
		}
		if !c.supported && (done.Confidence.Band == BandHigh || done.Confidence.Score >= 0.85) {
			t.Fatalf("%s: an unsupported lang.Number is HIGH: %+v", c.name, done.Confidence)
		}
		// No calibration for model answers: a supported answer over strong evidence is capped below
		// HIGH (the old formula gave it 0.95), and the reason says how to calibrate.
		if c.supported && (done.Confidence.Band != BandMedium || done.Confidence.Score != UncalibratedCap ||
			!strings.Contains(done.Confidence.Reason, "no calibration for model answers yet") ||
			!strings.Contains(done.Confidence.Reason, "docmind eval --variant answer --calibrate")) {
			t.Fatalf("%s: an uncalibrated supported model answer: %+v", c.name, done.Confidence)
		}
		if done.Confidence.Reason == "" {
			t.Fatalf("%s: no reason", c.name)
		}
	}
}

type fixedModel string

func (m fixedModel) Stream(ctx context.Context, req llm.Request, send func(string) error) (llm.Usage, error) {
	for _, tok := range lang.Tokens(string(m)) {
		if err := send(tok); err != nil {
			return llm.Usage{}, err
		}
	}
	return llm.Usage{PromptTokens: 10, CompletionTokens: 10}, nil
}
