package answer

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/text"
)

// OfflineNotice opens every extractive answer: the reader must know no language model wrote it.
const OfflineNotice = "No language model is configured, so this answer quotes the passages of your documents that best match the question."

// NoEvidenceAnswer is the extractive answer when nothing was retrieved. It never claims that the thing
// asked about does not exist: only that the selected knowledge bases did not yield it.
const NoEvidenceAnswer = "No language model is configured, and no passage in the selected knowledge bases matched the question. Try other words, or check that the documents you expect are ingested."

// NoMatchAnswer is the extractive answer when passages were retrieved but none shares a word with the
// question (the vector leg found them): nothing is quoted, the passages are still listed as sources.
const NoMatchAnswer = "No language model is configured, and no sentence in the retrieved passages shares the words of the question, so nothing is quoted. The closest passages are listed as sources; they may still be relevant."

// Extractive composes answers from the best sentences of the top sources, each followed by its [n].
type Extractive struct {
	MaxSentences  int // default 4
	PerSource     int // sentences taken from one source at most (default 2)
	MaxSentRunes  int // longer sentences are cut (default 400)
	SourcesToRead int // top sources considered (default 5)
}

func (x Extractive) defaults() Extractive {
	if x.MaxSentences <= 0 {
		x.MaxSentences = 4
	}
	if x.PerSource <= 0 {
		x.PerSource = 2
	}
	if x.MaxSentRunes <= 0 {
		x.MaxSentRunes = 400
	}
	if x.SourcesToRead <= 0 {
		x.SourcesToRead = 5
	}
	return x
}

type candidate struct {
	src, pos int
	text     string
	score    float64
	cover    float64 // weighted share of the question's terms the sentence contains
}

// Compose returns the answer for query over ev (ev[i] is source i+1).
func (x Extractive) Compose(query string, ev []rank.Evidence) string {
	x = x.defaults()
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
	var cands []candidate
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
			cands = append(cands, candidate{src: i, pos: j, text: truncate(s, x.MaxSentRunes), score: score, cover: hit / total})
		}
	}
	if len(cands) == 0 {
		return NoMatchAnswer
	}
	slices.SortStableFunc(cands, func(a, b candidate) int { return cmp.Compare(b.score, a.score) })
	// Keep only sentences that cover at least half as much of the question as the best one: a sentence
	// that shares one common word with the question is noise next to one that answers it.
	floor := cands[0].cover / 2
	var picked []candidate
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
	slices.SortFunc(picked, func(a, b candidate) int {
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

// splitSentences splits on line breaks and on sentence-ending punctuation (Latin and CJK).
func splitSentences(s string) []string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		start := 0
		r := []rune(line)
		for i := 0; i < len(r); i++ {
			switch r[i] {
			case '。', '！', '？', '；':
				out = append(out, string(r[start:i+1]))
				start = i + 1
			case '.', '!', '?':
				if i+1 == len(r) || unicode.IsSpace(r[i+1]) {
					if i > 0 && unicode.IsDigit(r[i-1]) && i+1 < len(r) { // "section 3. " is rarely an end
						continue
					}
					out = append(out, string(r[start:i+1]))
					start = i + 1
				}
			}
		}
		if start < len(r) {
			out = append(out, string(r[start:]))
		}
	}
	return out
}

// cleanSentence drops markdown structure: headings, bullets, table rows, emphasis and existing [n]s.
func cleanSentence(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "#") || strings.HasPrefix(s, "|") || strings.HasPrefix(s, "```") {
		return ""
	}
	s = strings.TrimLeft(s, "-*+> ")
	s = strings.NewReplacer("**", "", "__", "", "`", "").Replace(s)
	s = citeRe.ReplaceAllString(s, "")
	return strings.TrimSpace(oneLine(s))
}

// Tokens splits an answer into stream tokens: a word with its trailing space, or one CJK character.
func Tokens(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		switch {
		case text.IsCJK(r):
			if start < i {
				out = append(out, s[start:i])
			}
			out = append(out, string(r))
			start = i + utf8.RuneLen(r)
		case r == ' ' || r == '\n':
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
