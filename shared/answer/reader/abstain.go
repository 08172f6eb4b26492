package reader

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/text"
)

// Abstention texts: what the answer says when the documents do not answer the question, in the
// question's language (%s is the missing name).
const (
	AbstainAnswer   = "The documents do not say: none of the retrieved passages mentions %s, so nothing is quoted as an answer."
	AbstainAnswerZH = "文档中没有提到%s：检索到的段落都不包含它，因此不作回答。"
	// ... when the passages hold too little of the question (Rule.LowCover), whatever its names
	AbstainUnrelated   = "The documents do not say: the retrieved passages hold too little of the question, so nothing is quoted as an answer."
	AbstainUnrelatedZH = "文档中没有相关内容：检索到的段落与问题关系不大，因此不作回答。"
)

// KeyTerms are the question's names, what an answer must be about, each a run of adjacent name words:
// acronyms ("CEO"), capitalised words after the question's first word ("Example Corp"), and the Latin
// words of a Chinese question ("CEO" in 公司的CEO是谁). Single letters and question words are never
// names; a question without names has none and is never abstained on for a missing one.
func KeyTerms(q string) [][]string {
	cjk := lang.HasCJK(q)
	var out [][]string
	var run []string
	flush := func() {
		if len(run) > 0 {
			out = append(out, run)
			run = nil
		}
	}
	// words are split at anything but Latin letters and digits; a separator other than a space (a
	// comma, a Han character) also ends a name
	i := 0
	for _, f := range strings.Fields(q) {
		for j, w := range strings.FieldsFunc(f, func(r rune) bool { return !unicode.Is(unicode.Latin, r) && !unicode.IsDigit(r) }) {
			if j > 0 && !cjk {
				flush()
			}
			if nameWord(w, i, cjk) {
				run = append(run, w)
			} else {
				flush()
			}
			i++
		}
		if strings.ContainsAny(f, ",;:?!\"()") {
			flush()
		}
	}
	flush()
	return out
}

// nameWord reports whether w, the question's i-th word, is a name word (see KeyTerms).
func nameWord(w string, i int, cjk bool) bool {
	r := []rune(w)
	if len(r) < 2 || !latinWord(w) || questionWords[strings.ToLower(w)] || len(text.Analyze(w)) == 0 {
		return false
	}
	acronym := strings.ToUpper(w) == w && unicode.IsLetter(r[0])
	return cjk || acronym || i > 0 && unicode.IsUpper(r[0])
}

// latinWord reports whether w is written in Latin letters (with digits), not a number alone.
func latinWord(w string) bool {
	letter := false
	for _, r := range w {
		switch {
		case unicode.Is(unicode.Latin, r):
			letter = true
		case unicode.IsDigit(r):
		default:
			return false
		}
	}
	return letter
}

// MissingKey returns the first of the question's names (KeyTerms) of which no passage holds a single
// word, in its text, child text, chapter or file name; "" when every name is somewhere. A name is
// missing only whole: "Livesey Hal" is found by "Livesey", however the passage spells the rest. Words
// are compared without accents ("Beyonce" finds "Beyoncé"), a few abbreviations also count as their
// spelt-out words ("TV" is found by "television"), and a name word of five letters or more is found
// by a passage word one typo away ("Merceds", "Sigimund", "Univeristy") or one it begins
// ("Russian", "Frenchman"): SQuAD's questions misspell names the passages hold, and each such
// abstention withheld a right answer.
func MissingKey(q string, ev []rank.Evidence) string {
	keys := KeyTerms(q)
	if len(keys) == 0 {
		return ""
	}
	held := map[string]bool{}
	words := map[string]bool{}
	for _, e := range ev {
		all := foldAccents(e.Text + "\n" + e.ChildText + "\n" + e.Chapter + "\n" + e.FileName)
		for _, t := range text.Analyze(all) {
			held[t] = true
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(all), notLetterOrDigit) {
			words[w] = true
		}
	}
	for _, k := range keys {
		name := strings.Join(k, " ")
		found := false
		for _, t := range text.Analyze(foldAccents(name + " " + spelt[strings.ToUpper(name)])) {
			found = found || held[t]
		}
		for _, w := range k {
			found = found || nearWord(strings.ToLower(foldAccents(w)), words)
		}
		if !found {
			return name
		}
	}
	return ""
}

func notLetterOrDigit(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }

// nearWord reports whether a passage word is one edit (insertion, deletion, substitution or swap of
// neighbours) from w, or w begins it or it begins w with five letters or more in common; only for
// words of five letters or more, where such a neighbour is rarely another name.
func nearWord(w string, words map[string]bool) bool {
	if len([]rune(w)) < 5 {
		return false
	}
	for v := range words {
		if len([]rune(v)) >= 5 && (oneEdit(w, v) || strings.HasPrefix(v, w) || strings.HasPrefix(w, v)) {
			return true
		}
	}
	return false
}

// oneEdit reports whether a and b differ by at most one insertion, deletion, substitution or swap of
// adjacent letters.
func oneEdit(a, b string) bool {
	x, y := []rune(a), []rune(b)
	if len(x) > len(y) {
		x, y = y, x
	}
	if len(y)-len(x) > 1 {
		return false
	}
	i := 0
	for i < len(x) && x[i] == y[i] {
		i++
	}
	if i == len(x) {
		return true
	}
	if len(x) == len(y) {
		if string(x[i+1:]) == string(y[i+1:]) {
			return true // substitution
		}
		return i+1 < len(x) && x[i] == y[i+1] && x[i+1] == y[i] && string(x[i+2:]) == string(y[i+2:]) // swap
	}
	return string(x[i:]) == string(y[i+1:]) // insertion
}

// spelt are abbreviations a question writes that passages spell out (SQuAD: "TV" in questions about
// passages that say "television" or "commercial", 4 of the first 10 of its wrong abstentions).
var spelt = map[string]string{
	"TV": "television", "US": "United States", "USA": "United States", "UK": "United Kingdom",
	"UN": "United Nations", "EU": "European Union",
}

// foldAccents removes combining marks: "Beyoncé" reads as "Beyonce".
func foldAccents(s string) string {
	out, _, err := transform.String(transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC), s)
	if err != nil {
		return s
	}
	return out
}

// Signals are what the abstain rule reads (AbstainSignals): whether anything was retrieved, the first
// name of the question no retrieved passage holds, and the grade.
type Signals struct {
	NoEvidence bool    `json:"no_evidence,omitempty"`
	Missing    string  `json:"missing,omitempty"`
	High       bool    `json:"high,omitempty"` // the grade's tier is HIGH
	Low        bool    `json:"low,omitempty"`  // ... LOW
	Coverage   float64 `json:"coverage"`       // the grade's coverage of the question's salient terms
	CJK        bool    `json:"cjk,omitempty"`  // the question is Chinese (or Japanese, Korean)
	// Titled: the question names the title of the top passage's document ("锦地罗又被称之为什么？"
	// over the article 锦地罗): the passage is about what the question asks about, however few of the
	// question's other words it holds.
	Titled bool `json:"titled,omitempty"`
}

// AbstainSignals reads the abstain rule's signals for question q over the retrieved passages.
func AbstainSignals(q string, ev []rank.Evidence, grade rank.Grade) Signals {
	s := Signals{NoEvidence: len(ev) == 0, High: grade.Tier == rank.TierHigh, Low: grade.Tier == rank.TierLow, Coverage: grade.Coverage, CJK: lang.HasCJK(q)}
	if !s.NoEvidence {
		s.Missing = MissingKey(q, ev)
		s.Titled = namesTitle(q, ev[0].Chapter)
	}
	return s
}

// namesTitle reports whether question q names the document title of a passage with chapter path
// chapter (its first heading, without a parenthesised qualifier: "Kiss and Tell (1945 film)" is named
// by "Kiss and Tell"). A title must be two Han characters or four letters long, and a Latin one is
// matched as whole words ("Art" is not named by "start").
func namesTitle(q, chapter string) bool {
	title, _, _ := strings.Cut(chapter, " > ")
	if i := strings.Index(title, " ("); i > 0 {
		title = title[:i]
	}
	title = strings.ToLower(strings.TrimSpace(foldAccents(title)))
	n := len([]rune(title))
	if n < 2 || !lang.HasCJK(title) && n < 4 {
		return false
	}
	lq := strings.ToLower(foldAccents(q))
	for off := 0; ; {
		i := strings.Index(lq[off:], title)
		if i < 0 {
			return false
		}
		i += off
		if lang.HasCJK(title) || !wordRune(lq[:i], true) && !wordRune(lq[i+len(title):], false) {
			return true
		}
		off = i + 1
	}
}

// wordRune reports whether the rune at the end (before) or the start of s is a letter or digit.
func wordRune(s string, before bool) bool {
	if s == "" {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s)
	if before {
		r, _ = utf8.DecodeLastRuneInString(s)
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Rule decides from Signals whether to abstain: nothing retrieved, or a missing name unless the grade
// is HIGH with at least HighCover of the question's terms (over 1: never overridden), or, name or not,
// a grade coverage below LowCover (0: never) that was measured (a LOW tier, or a coverage above 0: a
// question without salient terms has coverage 0 and an AMBIGUOUS grade) on a grade that is not HIGH
// (a rerank model sure of a passage whose words differ) over a top passage whose title the question
// does not name (Signals.Titled).
type Rule struct {
	HighCover float64 `json:"high_cover"`
	LowCover  float64 `json:"low_cover,omitempty"`
}

// DefaultRule is the rule the pipeline applies, tuned by `docmind eval --variant answer
// --unanswerable` on SQuAD, HotpotQA and CMRC 2018 (train, every question asked with and without its
// documents): the rule that abstains most on the questions without their documents while abstaining on
// at most 4% of each dataset's answerable ones, chosen on nine folds in turn (held out: 10.7%, 34% and
// 44% abstained without the documents, 0.9%, 3.2% and 0.8% with them; docs/eval/answers.md). Below
// HighCover, a HIGH grade without a rerank model rests on the question's other words ("Example Corp"
// of "the CEO of Example Corp", coverage 0.62); a coverage below LowCover is a question the passages
// barely touch ("犹豫期是多少天？", answered right on the demo, is at 0.26).
var DefaultRule = Rule{HighCover: 0.8, LowCover: 0.25}

// Abstain applies the rule.
func (r Rule) Abstain(s Signals) bool {
	switch {
	case s.NoEvidence, s.Coverage < r.LowCover && !s.High && !s.Titled && (s.Low || s.Coverage > 0):
		return true
	case s.Missing == "":
		return false
	}
	return !(s.High && s.Coverage >= r.HighCover)
}

// AbstainText is what an abstaining answer says, in the question's language, citing nothing.
func AbstainText(q string, s Signals) string {
	switch {
	case s.NoEvidence:
		return offlineFor(q).noEvidence
	case s.Missing == "" && lang.HasCJK(q):
		return AbstainUnrelatedZH
	case s.Missing == "":
		return AbstainUnrelated
	case lang.HasCJK(q):
		return strings.Replace(AbstainAnswerZH, "%s", s.Missing, 1)
	}
	return strings.Replace(AbstainAnswer, "%s", "“"+s.Missing+"”", 1)
}

// Abstains decides whether the documents leave the question unanswered, from signals that each miss
// on their own: no passage at all, or a name the question asks about that no retrieved passage holds
// while the grader is not sure of the passages (a HIGH grade with most of the question's terms found
// overrides a missing name: retrieval found the answer's passage under another spelling). It returns
// the answer that says so, in the question's language, citing nothing.
func Abstains(q string, ev []rank.Evidence, grade rank.Grade) (string, bool) {
	s := AbstainSignals(q, ev, grade)
	if !DefaultRule.Abstain(s) {
		return "", false
	}
	return AbstainText(q, s), true
}
