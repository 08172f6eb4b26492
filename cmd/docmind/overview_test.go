package main

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
)

// On the demo, offline: an overview question ("tell me about annual leave", a few words that ask
// nothing) answered from one matched line is not HIGH (it was 0.98), and says why; the lookup that
// line answers stays HIGH.
func TestDemoOverviewNotHigh(t *testing.T) {
	_, base := startServer(t, nil)
	waitDemo(t, base)
	for _, q := range []string{"tell me about annual leave", "annual leave", "What about annual leave?"} {
		done, _ := chat(t, base, q, "demo")
		if done.Abstained || len(done.Claims) != 1 {
			t.Fatalf("%s: abstained %v, %d claims; want one quoted line:\n%s", q, done.Abstained, len(done.Claims), done.Answer)
		}
		if done.Confidence.Band == answer.BandHigh || !strings.Contains(done.Confidence.Reason, "overview question") {
			t.Errorf("%s: %s %.3f (%s); want below HIGH, saying why", q, done.Confidence.Band, done.Confidence.Score, done.Confidence.Reason)
		}
	}
	q := "How many days of annual leave do full-time employees get?"
	if done, _ := chat(t, base, q, "demo"); done.Confidence.Band != answer.BandHigh || strings.Contains(done.Confidence.Reason, "overview") {
		t.Errorf("%s: %s %.3f (%s); the lookup stays HIGH", q, done.Confidence.Band, done.Confidence.Score, done.Confidence.Reason)
	}
}
