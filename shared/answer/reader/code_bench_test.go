package reader

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rank"
)

// BenchmarkCodeChecks measures what the code rule (issue #20 item 3) adds to a question: CodeLine on
// every line of the passages, as joinWrapped (each line and the one before it) and units (each line)
// call it, opensInCode and CodeQuestion once per passage and question, against the reader itself in
// the same run (compare the two ns/op). The passages are eight of about 800 characters of prose and a
// code block, the size compression leaves.
func BenchmarkCodeChecks(b *testing.B) {
	var ev []rank.Evidence
	for i := range 8 {
		var s strings.Builder
		for s.Len() < 700 {
			s.WriteString("The breaker opens after 5 consecutive failed calls to the reranker, and the threshold is checked per tenant.\n")
		}
		if i%2 == 0 {
			s.WriteString("```go\nconst threshold = 5\nif failures >= threshold {\n\tbreaker.Open()\n}\n```\n")
		}
		ev = append(ev, rank.Evidence{ChunkID: string(rune('a' + i)), Text: s.String(), Score: 1 / float64(i+1)})
	}
	const q = "How many failed calls open the circuit breaker?"
	b.Run("reader", func(b *testing.B) {
		for b.Loop() {
			Extractive{}.Read(q, ev)
		}
	})
	b.Run("checks", func(b *testing.B) {
		for b.Loop() {
			CodeQuestion(q)
			for _, e := range ev {
				lines := strings.Split(e.Text, "\n")
				opensInCode(lines)
				for _, l := range lines {
					CodeLine(l)
					CodeLine(l)
					CodeLine(l)
				}
			}
		}
	})
}
