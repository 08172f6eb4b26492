package lambdafn

import (
	"context"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

// BenchmarkGrade compares grading eight compressed passages (about 1,500 characters each, the chat's
// usual evidence) in process with the same verdict through the grade contract: JSON out, the grade
// function's handler, JSON back. The network and Lambda's own invoke overhead (milliseconds) are not
// in it; the ratio is what the contract itself costs.
func BenchmarkGrade(b *testing.B) {
	para := strings.Repeat("Annual plans have a refund window of 30 days from purchase; monthly plans renew automatically. ", 16)
	var ev []rank.Evidence
	for i := range 8 {
		ev = append(ev, rank.Evidence{ChunkID: string(rune('a' + i)), DocumentID: "d", KBID: "kb", FileName: "billing.md",
			Text: para, ChildText: para[:400], Score: 0.9 - 0.05*float64(i)})
	}
	const query = "refund window for annual plans"
	opts := rank.DefaultGradeOptions()
	b.Run("in-process", func(b *testing.B) {
		for b.Loop() {
			rank.GradeEvidence(query, ev, opts, true)
		}
	})
	b.Run("contract", func(b *testing.B) {
		g := &Grader{Function{Client: &gradeLambda{grader: rankfn.Grader{Options: opts}}, Name: "docmind-grade"}}
		for b.Loop() {
			if _, err := g.Grade(context.Background(), query, ev, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}
