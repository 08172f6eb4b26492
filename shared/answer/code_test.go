package answer

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rank"
)

// Issue #20 item 3: an answer that quotes code or a run of identifiers is never HIGH, whoever wrote
// it, even when every other signal is at its best (a reranker's top score, full coverage); the same
// signals over a prose answer are not capped.
func TestAssessCodeNeverHigh(t *testing.T) {
	ev := []rank.Evidence{{ChunkID: "c1", DocumentID: "d1", FileName: "design.md",
		Text: "The breaker opens after 5 consecutive failed calls.\nbreakerThreshold := 5\nretry_backoff_ms = 200"}}
	g := rank.Grade{Tier: rank.TierHigh, TopScore: 0.99, Coverage: 1}
	for _, c := range []struct {
		answer, answerer string
		code             bool
	}{
		{"- breakerThreshold := 5 [1]", "extractive", true},
		{"`retry_backoff_ms = 200` and `max_retry_count = 3` [1].", "llm", true},
		{"Set `retry_backoff_ms` to 200 milliseconds [1].", "llm", false},
		{"- The breaker opens after 5 consecutive failed calls. [1]", "extractive", false},
	} {
		conf, _ := Assess("What is the breaker threshold?", c.answer, c.answerer, ev, g, true, ShippedCalibrations())
		capped := strings.Contains(conf.Reason, "quotes code")
		if capped != c.code || c.code && (conf.Band == BandHigh || conf.Score > 0.84) {
			t.Errorf("%s: band %s %.2f, reason %q (code %v)", c.answer, conf.Band, conf.Score, conf.Reason, c.code)
		}
	}
}
