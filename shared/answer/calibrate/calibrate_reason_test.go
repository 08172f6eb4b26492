package calibrate

import (
	"strings"
	"testing"
)

// Issue #13 review, finding 8: the shipped maps were fitted where no reranker ran, so when one runs the
// badge's reason says its score was not counted; a map that saw a reranker says nothing of the kind.
func TestExplainRerankerUnseen(t *testing.T) {
	k := ShippedCalibrations()["extractive/en"]
	if k == nil {
		t.Fatal("no shipped extractive/en calibration")
	}
	const unseen = "the calibration saw no reranker"
	ran := Features{RerankerRan: 1, RerankTop: 0.93, GraderCoverage: 0.5}
	if got := k.Explain(ran); !strings.Contains(got, unseen) || !strings.Contains(got, "0.93") {
		t.Errorf("reranker ran, reason %q", got)
	}
	if got := k.Explain(Features{GraderCoverage: 0.5}); strings.Contains(got, "reranker") {
		t.Errorf("no reranker ran, reason %q", got)
	}
	seen := *k
	seen.Weights = append([]float64(nil), k.Weights...)
	seen.Weights[featRerankTop] = 0.4
	if got := seen.Explain(ran); strings.Contains(got, unseen) {
		t.Errorf("a map fitted with a reranker, reason %q", got)
	}
}
