package answer

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"
	"unicode"

	"github.com/docmind/docmind/shared/rag"
)

// Date ranges a question names (issue #23): "in 2025", "the 2025 policy", "2025年", "since March
// 2024", "after 2023", "before 2023", "until June 2024", "last year", "this month" (relative to now),
// each a range of days on a date key, [from, to) in UTC. A phrase becomes a filter only on a date key
// the knowledge bases' documents have (dateKeys) and only when some document's value falls in it
// (the inference step asks MatchDocuments); a phrase matched under two such keys, or whose words are
// also a value under another key, is ambiguous and not used (combineMatches).

// inferSkipDateKeys are the date keys docmind derives (when a document was first and last indexed):
// "the 2025 policy" is about the policy's own date, not about when it was indexed.
var inferSkipDateKeys = map[string]bool{"created": true, "modified": true}

var months = map[string]time.Month{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4, "may": 5,
	"june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12,
}

// datePrepositions say how a period bounds the range: in it, from its start, after its end, before
// its start, up to its end.
var datePrepositions = map[string]string{
	"in": "in", "during": "in", "of": "in", "for": "in", "from": "in", // "the policies from 2024"
	"since": "from", "after": "after",
	"before": "before", "until": "until", "till": "until", "through": "until",
}

var (
	// an optional preposition, an optional month name, a year of 1900-2199 (its edges checked apart)
	yearPhrase = regexp.MustCompile(`(?:\b(in|during|of|for|since|from|after|before|until|till|through)\s+)?(?:\b(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?,?\s+)?(19\d\d|2[01]\d\d)`)
	// a period relative to now
	relativePhrase = regexp.MustCompile(`(?:\b(in|during|since|from|before)\s+)?\b(last|previous|this|current)\s+(year|month)\b|(去年|今年|上个月|本月)`)
)

// dateSpan is a range a question names: its words and bounds (YYYY-MM-DD; either may be empty).
type dateSpan struct {
	words, gte, lt string
}

// dateSpans finds the date phrases of the normalised question nq.
func dateSpans(nq string, now time.Time) []dateSpan {
	var out []dateSpan
	for _, m := range yearPhrase.FindAllStringSubmatchIndex(nq, -1) {
		ys, ye := m[6], m[7]
		if !wholeYear(nq, ys, ye) {
			continue
		}
		y, _ := strconv.Atoi(nq[ys:ye])
		from := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		to := from.AddDate(1, 0, 0)
		if m[4] >= 0 {
			from = time.Date(y, months[nq[m[4]:m[5]]], 1, 0, 0, 0, 0, time.UTC)
			to = from.AddDate(0, 1, 0)
		}
		prep := ""
		if m[2] >= 0 {
			prep = datePrepositions[nq[m[2]:m[3]]]
		}
		out = append(out, span(nq[m[0]:m[1]], prep, from, to))
	}
	for _, m := range relativePhrase.FindAllStringSubmatch(nq, -1) {
		var from, to time.Time
		y, mo := now.UTC().Year(), now.UTC().Month()
		switch unit, which := m[3], m[2]; {
		case m[4] == "去年" || unit == "year" && (which == "last" || which == "previous"):
			from = time.Date(y-1, 1, 1, 0, 0, 0, 0, time.UTC)
			to = from.AddDate(1, 0, 0)
		case m[4] == "今年" || unit == "year":
			from = time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
			to = from.AddDate(1, 0, 0)
		case m[4] == "上个月" || which == "last" || which == "previous":
			from = time.Date(y, mo-1, 1, 0, 0, 0, 0, time.UTC)
			to = from.AddDate(0, 1, 0)
		default:
			from = time.Date(y, mo, 1, 0, 0, 0, 0, time.UTC)
			to = from.AddDate(0, 1, 0)
		}
		out = append(out, span(m[0], datePrepositions[m[1]], from, to))
	}
	return out
}

// span bounds the period [from, to) by the preposition's meaning.
func span(words, prep string, from, to time.Time) dateSpan {
	d := func(t time.Time) string { return t.Format(time.DateOnly) }
	switch prep {
	case "from":
		return dateSpan{words, d(from), ""}
	case "after":
		return dateSpan{words, d(to), ""}
	case "before":
		return dateSpan{words, "", d(from)}
	case "until":
		return dateSpan{words, "", d(to)}
	}
	return dateSpan{words, d(from), d(to)}
}

// wholeYear says nq[s:e] stands alone as a year: not inside a longer number (120250), a date
// (2025-01-01, 1/2025), a decimal or a word (v2025, 2025th; a character of a script written without
// spaces may touch it: 2025年).
func wholeYear(nq string, s, e int) bool {
	before, after := nq[:s], nq[e:]
	b, a := lastRune(before), firstRune(after)
	if unicode.IsDigit(b) || unicode.IsDigit(a) {
		return false
	}
	if (a == '-' || a == '.' || a == '/') && unicode.IsDigit(firstRune(after[1:])) ||
		(b == '-' || b == '.' || b == '/') && len(before) > 1 && unicode.IsDigit(lastRune(before[:len(before)-1])) {
		return false
	}
	return !(unicode.IsLetter(b) && !spaceless(string(b)) || unicode.IsLetter(a) && !spaceless(string(a)))
}

// dateKeys are the date keys a range may be inferred on: typed date by the documents' values, held
// by at least half the documents (as for values, candidateFacets), neither derived by docmind
// (inferSkipDateKeys) nor named by the user's filter (skip).
func dateKeys(facets []rag.MetaFacet, skip []string) []string {
	most := 0
	for _, f := range facets {
		most = max(most, f.Documents)
	}
	var out []string
	for _, f := range facets {
		if f.Type == "date" && !inferSkipDateKeys[f.Key] && !slices.Contains(skip, f.Key) && 2*f.Documents >= most {
			out = append(out, f.Key)
		}
	}
	return out
}

// MatchDates returns the date ranges q names, one match per phrase and date key (dateKeys), in the
// order of the phrases. Whether a document's value falls in each is for the caller to ask (the
// inference step keeps only those that hold one, then drops words claimed by two keys).
func MatchDates(q string, facets []rag.MetaFacet, skip []string, now time.Time) []InferredMatch {
	keys := dateKeys(facets, skip)
	if len(keys) == 0 {
		return nil
	}
	var out []InferredMatch
	for _, s := range dateSpans(normaliseText(q), now) {
		for _, k := range keys {
			out = append(out, InferredMatch{Words: s.words, Key: k, Value: rangeValue(s.gte, s.lt), By: "rules", Gte: s.gte, Lt: s.lt})
		}
	}
	return out
}

// rangeValue writes a range as a half-open interval, for the timeline and the page's line.
func rangeValue(gte, lt string) string {
	lo, hi := "["+gte, lt+")"
	if gte == "" {
		lo = "(…"
	}
	if lt == "" {
		hi = "…)"
	}
	return lo + ", " + hi
}

// rangeWords says a range in words.
func rangeWords(gte, lt string) string {
	switch {
	case gte == "":
		return "before " + lt
	case lt == "":
		return "from " + gte
	}
	return fmt.Sprintf("from %s to before %s", gte, lt)
}

// shareWord says two phrases have a word in common, prepositions aside: a value's words claimed by a
// date phrase too ("2025" in "in 2025").
func shareWord(a, b string) bool {
	wa := questionWords(a)
	for _, w := range questionWords(b) {
		if datePrepositions[w.text] != "" {
			continue
		}
		if slices.ContainsFunc(wa, func(x qword) bool { return x.text == w.text }) {
			return true
		}
	}
	return false
}
