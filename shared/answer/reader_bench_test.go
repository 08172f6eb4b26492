package answer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/text"

	"github.com/docmind/docmind/shared/rank"
)

// benchEvidence is eight passages of about 800 characters, the size the compression stage leaves.
func benchEvidence() []rank.Evidence {
	var ev []rank.Evidence
	for i := range 8 {
		var b strings.Builder
		for b.Len() < 800 {
			b.WriteString("Georges-Henri Bousquet (21 June 1900, Meudon – 23 January 1978) was a French jurist and Islamologist. ")
			b.WriteString("He is known for his translation of Ibn Khaldun, a Tunisian historian of North African Arab heritage. ")
		}
		ev = append(ev, rank.Evidence{ChunkID: string(rune('a' + i)), Text: b.String(), ChildText: b.String()[:200], Score: 1 / float64(i+1)})
	}
	return ev
}

const benchQ = "Georges-Henri Bousquet translated the work of a historian who is of what heritage?"

// BenchmarkAnswerStage measures what issue #13 added to each question, the reader with its claim
// checks and calibrated confidence against the reader and confidence before it, in the same run
// (compare the two ns/op; a question's whole pipeline is 3 to 5 ms p50 in docs/eval/answers.md).
func BenchmarkAnswerStage(b *testing.B) {
	ev := benchEvidence()
	g := rank.Grade{Tier: rank.TierHigh, Coverage: 0.8}
	cal := ShippedCalibrations()
	b.Run("before", func(b *testing.B) {
		for b.Loop() {
			Score(legacyCompose(benchQ, ev), len(ev), g, false)
		}
	})
	b.Run("after", func(b *testing.B) {
		for b.Loop() {
			Assess(benchQ, Extractive{}.Compose(benchQ, ev), "extractive", ev, g, false, cal)
		}
	})
}

type legacyCandidate struct {
	src, pos int
	text     string
	score    float64
	cover    float64
}

// legacyCompose is the extractive answerer before issue #13 (commit 795f717), kept as the reference
// the benchmark measures the new reader against in the same run.
func legacyCompose(query string, ev []rank.Evidence) string {
	x := struct{ MaxSentences, PerSource, MaxSentRunes, SourcesToRead int }{4, 2, 400, 5}
	if len(ev) == 0 {
		return NoEvidenceAnswer
	}
	q := map[string]float64{}
	for _, t := range text.Analyze(query) {
		q[t] = math.Max(1, float64(utf8.RuneCountInString(t))/4) // longer terms (names, jargon) weigh more
	}
	var total float64
	for _, w := range q {
		total += w
	}
	var cands []legacyCandidate
	for i, e := range ev[:min(len(ev), x.SourcesToRead)] {
		body := e.Text
		if strings.TrimSpace(body) == "" {
			body = e.ChildText
		}
		for j, s := range splitSentences(body) {
			s = cleanSentence(s)
			if utf8.RuneCountInString(s) < 12 {
				continue
			}
			seen := map[string]bool{}
			var hit float64
			terms := text.Analyze(s)
			for _, t := range terms {
				if w, ok := q[t]; ok && !seen[t] {
					seen[t] = true
					hit += w
				}
			}
			if hit == 0 || total == 0 {
				continue
			}
			// Coverage of the question, lightly favouring short sentences and better-ranked sources.
			score := hit/total - 0.02*math.Log1p(float64(len(terms))) + 0.05/float64(i+1)
			cands = append(cands, legacyCandidate{src: i, pos: j, text: truncate(s, x.MaxSentRunes), score: score, cover: hit / total})
		}
	}
	if len(cands) == 0 {
		return NoMatchAnswer
	}
	slices.SortStableFunc(cands, func(a, b legacyCandidate) int { return cmp.Compare(b.score, a.score) })
	// Keep only sentences that cover at least half as much of the question as the best one: a sentence
	// that shares one common word with the question is noise next to one that answers it.
	floor := cands[0].cover / 2
	var picked []legacyCandidate
	perSource := map[int]int{}
	seenText := map[string]bool{}
	for _, c := range cands {
		if len(picked) == x.MaxSentences {
			break
		}
		key := strings.ToLower(c.text)
		if c.cover < floor || perSource[c.src] == x.PerSource || seenText[key] {
			continue
		}
		perSource[c.src]++
		seenText[key] = true
		picked = append(picked, c)
	}
	// Read in source order, then document order, so quotes from one passage stay together.
	slices.SortFunc(picked, func(a, b legacyCandidate) int {
		if a.src != b.src {
			return a.src - b.src
		}
		return a.pos - b.pos
	})
	if len(picked) == 0 {
		return NoEvidenceAnswer
	}
	var b strings.Builder
	b.WriteString(OfflineNotice)
	b.WriteString("\n")
	for _, c := range picked {
		fmt.Fprintf(&b, "\n- %s [%d]", c.text, c.src+1)
	}
	return b.String()
}
