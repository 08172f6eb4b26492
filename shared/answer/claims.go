package answer

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/text"
)

// Claim is one sentence of an answer that cites passages, checked against them: Supported when every
// number, date, amount and name it states appears in a cited passage and enough of its content terms
// do. Reason says what was found missing (or "supported").
type Claim struct {
	Sentence  string `json:"sentence"`
	Citations []int  `json:"citations"`
	Supported bool   `json:"supported"`
	Reason    string `json:"reason"`
	// NumberMissing says a number, date or amount of the sentence is in none of its cited passages:
	// such an answer is never HIGH.
	NumberMissing bool `json:"-"`
}

// ClaimTermShare is the share of a claim's content terms (idf-free, distinct) that must appear in its
// cited passages: a paraphrase keeps most of them, a sentence about something else keeps few.
const ClaimTermShare = 0.5

// CheckClaims splits answer into sentences and checks each one carrying a valid [n] against the
// passages it cites (ev[n-1]); sentences without a citation are not claims about the sources and are
// left out, as is the offline notice. The result is in answer order; empty when nothing is cited.
func CheckClaims(answer string, ev []rank.Evidence) []Claim {
	body := WithoutNotice(answer)
	sentences := claimSentences(body)
	out := []Claim{}
	cache := map[int]*passageFacts{}
	for _, s := range sentences {
		var cites []int
		for _, m := range citeRe.FindAllStringSubmatch(s, -1) {
			n, _ := strconv.Atoi(m[1])
			if n >= 1 && n <= len(ev) && !containsInt(cites, n) {
				cites = append(cites, n)
			}
		}
		if len(cites) == 0 {
			continue
		}
		plain := strings.TrimSpace(strings.TrimLeft(oneLine(citeRe.ReplaceAllString(s, "")), "-*• "))
		c := Claim{Sentence: plain, Citations: cites}
		var facts []*passageFacts
		for _, n := range cites {
			if cache[n] == nil {
				cache[n] = newPassageFacts(ev[n-1])
			}
			facts = append(facts, cache[n])
		}
		c.Supported, c.Reason, c.NumberMissing = checkClaim(plain, cites, facts)
		out = append(out, c)
	}
	return out
}

// claimSentences splits an answer into sentences, attaching a fragment made only of citations
// ("... per year. [1]") to the sentence before it.
func claimSentences(body string) []string {
	var out []string
	for _, s := range splitSentences(body) {
		rest := strings.TrimSpace(citeRe.ReplaceAllString(s, ""))
		if strings.Trim(rest, " .。,，;；-*") == "" {
			if len(out) > 0 && citeRe.MatchString(s) {
				out[len(out)-1] += " " + strings.TrimSpace(s)
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// passageFacts is what a cited passage holds, computed once per answer: its numbers, terms and
// text, and per line (sentence or table row) the numbers with the terms beside them.
type passageFacts struct {
	numbers numberSet
	terms   map[string]bool
	lower   string
	lines   []lineFacts
}

type lineFacts struct {
	numbers numberSet
	terms   map[string]bool
}

func newPassageFacts(e rank.Evidence) *passageFacts {
	all := e.Text + "\n" + e.ChildText + "\n" + e.Chapter + "\n" + e.FileName
	f := &passageFacts{numbers: numbersOf(all), terms: map[string]bool{}, lower: strings.ToLower(foldString(all))}
	for _, t := range text.Analyze(all) {
		f.terms[t] = true
	}
	header := "" // a table row's context is its header: "| Team | 49 |" is about "monthly price"
	for _, l := range splitSentences(all) {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "|") {
			if header == "" {
				header = t
			}
		} else {
			header = ""
		}
		ns := numbersOf(l)
		if len(ns) == 0 {
			continue
		}
		lf := lineFacts{numbers: ns, terms: map[string]bool{}}
		for _, t := range text.Analyze(l + "\n" + header) {
			lf.terms[t] = true
		}
		f.lines = append(f.lines, lf)
	}
	return f
}

// numberInContext reports whether a line of the passage holds v together with enough of the claim's
// terms (a third, at least one): "30 days of annual leave" is not supported by "claims within 30
// days of the trip" in the same passage.
func (f *passageFacts) numberInContext(v float64, terms []string) bool {
	need := max(1, (len(terms)+2)/3)
	for _, l := range f.lines {
		if !l.numbers.has(v) {
			continue
		}
		shared := 0
		for _, t := range terms {
			if l.terms[t] {
				shared++
			}
		}
		if shared >= need {
			return true
		}
	}
	return false
}

// checkClaim checks one sentence against its cited passages: every number (normalised), every name
// (a capitalised word not opening the sentence, or a 《》-quoted title) must be in one of them, and at
// least ClaimTermShare of its content terms.
func checkClaim(s string, cites []int, facts []*passageFacts) (bool, string, bool) {
	where := citeList(cites)
	terms := contentTerms(s)
	for _, n := range extractNumbers(s) {
		found, inContext := false, false
		for _, f := range facts {
			if f.numbers.has(n.value) {
				found = true
				if f.numberInContext(n.value, terms) {
					inContext = true
					break
				}
			}
		}
		if !found {
			return false, fmt.Sprintf("%s is not in %s", n.raw, where), true
		}
		if !inContext {
			return false, fmt.Sprintf("%s is in %s only in a sentence about something else", n.raw, where), true
		}
	}
	for _, name := range newNames(s, "") {
		ln := strings.ToLower(foldString(name))
		found := false
		for _, f := range facts {
			if strings.Contains(f.lower, ln) {
				found = true
				break
			}
		}
		if !found {
			return false, fmt.Sprintf("%q is not in %s", name, where), false
		}
	}
	if len(terms) == 0 {
		return true, "supported", false
	}
	have := 0
	for _, t := range terms {
		for _, f := range facts {
			if f.terms[t] {
				have++
				break
			}
		}
	}
	share := float64(have) / float64(len(terms))
	if share < ClaimTermShare {
		return false, fmt.Sprintf("only %d of its %d content terms are in %s", have, len(terms), where), false
	}
	return true, "supported", false
}

// contentTerms are a sentence's distinct analyzed terms less numbers (checked on their own) and
// one-character terms.
func contentTerms(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range text.Analyze(s) {
		if seen[t] || utf8.RuneCountInString(t) < 2 || isNumeric(t) {
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

func isNumeric(t string) bool {
	for _, r := range t {
		if !(r >= '0' && r <= '9' || r == '.' || r == ',' || r == '%') {
			return false
		}
	}
	return true
}

func foldString(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(text.Fold(r))
	}
	return b.String()
}

func citeList(cites []int) string {
	var parts []string
	for _, n := range cites {
		parts = append(parts, fmt.Sprintf("[%d]", n))
	}
	return "source " + strings.Join(parts, "")
}

func containsInt(xs []int, v int) bool {
	for _, x := range xs {
		if x == v {
			return true
		}
	}
	return false
}

// ClaimsSupported is the share of claims that are supported (1 when there are none: nothing was
// claimed about the sources, so nothing was found unsupported).
func ClaimsSupported(cs []Claim) float64 {
	if len(cs) == 0 {
		return 1
	}
	n := 0
	for _, c := range cs {
		if c.Supported {
			n++
		}
	}
	return float64(n) / float64(len(cs))
}
