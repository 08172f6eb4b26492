package eval

import (
	"encoding/json"
	"strings"
	"testing"
)

// Every band is in the report, an empty one with n 0 (HotpotQA's report had no HIGH key at all when no
// answer was HIGH, which read as "not measured").
func TestSummariseEmitsEveryBand(t *testing.T) {
	r := AnswerResult{All: []AnswerQuery{
		{Band: "LOW", Confidence: 0.5, Correct: true},
		{Band: "LOW", Confidence: 0.5, Correct: false},
	}}
	r.Summarise()
	for band, want := range map[string]BandStat{"HIGH": {}, "MEDIUM": {}, "LOW": {N: 2, AnswerRecall: 0.5}} {
		got, ok := r.BandStats[band]
		if !ok || got != want {
			t.Errorf("band_stats[%s] = %+v (present %v), want %+v", band, got, ok, want)
		}
		if r.Bands[band] != want.N {
			t.Errorf("bands[%s] = %d, want %d", band, r.Bands[band], want.N)
		}
	}
	b, err := json.Marshal(r.BandStats)
	if err != nil || !strings.Contains(string(b), `"HIGH":{"n":0,"answer_recall":0}`) {
		t.Errorf("band_stats JSON %s (%v)", b, err)
	}
}
