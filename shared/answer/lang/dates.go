package lang

import (
	"regexp"
	"strconv"
	"strings"
)

// dates.go reads the dates a text states as (year, month, day), so that one date written two ways
// compares equal ("March 5, 2026" = "2026-03-05" = "2026年3月5日") and two dates made of the same
// numbers do not ("2026-05-03" is not "2026-03-05"). A part the text leaves out is 0.

// Date is one Date found in a text, with its byte span in the folded text it was read from.
type Date struct {
	Y, M, D    int
	Raw        string
	Start, End int
}

var monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8,
	"sep": 9, "oct": 10, "nov": 11, "dec": 12}

const (
	reMonthName = `(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)`
	reCNSmall   = `([0-9]{1,2}|[一二三四五六七八九十]{1,3})`
	reCNYear    = `([0-9]{4}|[〇零一二三四五六七八九]{4})`
)

// dateForms are tried in order on folded (lower-case) text; a later form never overlaps an earlier
// match. Each returns the year, month and day group numbers (0 when the form has no such part).
var dateForms = []struct {
	re      *regexp.Regexp
	y, m, d int
	// needs says what the text must hold for the form to be tried: the forms are read on every line
	// of every cited passage, and most lines hold no date.
	needs int
}{
	{regexp.MustCompile(`\b([0-9]{4})[-/.]([0-9]{1,2})[-/.]([0-9]{1,2})\b`), 1, 2, 3, needsISO},
	{regexp.MustCompile(reCNYear + `\s*年\s*` + reCNSmall + `\s*月(?:\s*` + reCNSmall + `\s*[日号])?`), 1, 2, 3, needsCN},
	{regexp.MustCompile(reCNSmall + `\s*月\s*` + reCNSmall + `\s*[日号]`), 0, 1, 2, needsCN},
	{regexp.MustCompile(`\b` + reMonthName + `\.?\s+([0-9]{1,2})(?:st|nd|rd|th)?\b(?:,?\s+([0-9]{4})\b)?`), 3, 1, 2, needsMonthName},
	{regexp.MustCompile(`\b([0-9]{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + reMonthName + `\.?,?\s+([0-9]{4})\b`), 3, 2, 1, needsMonthName},
	{regexp.MustCompile(`\b` + reMonthName + `\.?,?\s+(?:of\s+)?([0-9]{4})\b`), 2, 1, 0, needsMonthName},
	{regexp.MustCompile(`\b([0-9]{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?` + reMonthName + `\b`), 0, 2, 1, needsMonthName},
}

const (
	needsISO = 1 << iota
	needsCN
	needsMonthName
)

// dateHints says which date forms s may hold.
func dateHints(s string) int {
	if !strings.ContainsAny(s, "0123456789") {
		if strings.Contains(s, "月") {
			return needsCN
		}
		return 0
	}
	h := 0
	if strings.ContainsAny(s, "-/.") {
		h |= needsISO
	}
	if strings.Contains(s, "月") {
		h |= needsCN
	}
	for m := range monthNames {
		if strings.Contains(s, m) {
			h |= needsMonthName
			break
		}
	}
	return h
}

// ExtractDates returns the dates the folded text s states, in order of the forms above.
func ExtractDates(s string) []Date {
	var out []Date
	taken := func(a, b int) bool {
		for _, d := range out {
			if a < d.End && d.Start < b {
				return true
			}
		}
		return false
	}
	hints := dateHints(s)
	for _, f := range dateForms {
		if hints&f.needs == 0 {
			continue
		}
		for _, m := range f.re.FindAllStringSubmatchIndex(s, -1) {
			if taken(m[0], m[1]) {
				continue
			}
			part := func(g int) string {
				if g == 0 || m[2*g] < 0 {
					return ""
				}
				return s[m[2*g]:m[2*g+1]]
			}
			d := Date{Y: datePart(part(f.y)), M: monthPart(part(f.m)), D: datePart(part(f.d)), Raw: s[m[0]:m[1]], Start: m[0], End: m[1]}
			if d.M < 1 || d.M > 12 || d.D < 0 || d.D > 31 || part(f.d) != "" && d.D == 0 {
				continue
			}
			out = append(out, d)
		}
	}
	return out
}

// datePart reads a year or day written in digits or Chinese numerals (0 when empty).
func datePart(s string) int {
	if s == "" {
		return 0
	}
	if v, err := strconv.Atoi(s); err == nil {
		return v
	}
	if v, ok := parseCN(s); ok {
		return int(v)
	}
	return -1
}

func monthPart(s string) int {
	if len(s) >= 3 {
		if v, ok := monthNames[s[:3]]; ok {
			return v
		}
	}
	return datePart(s)
}

// Matches reports whether the passage's date p states the claim's date c: every part the claim names
// is equal, except a year the passage leaves out.
func (c Date) Matches(p Date) bool {
	return (c.Y == 0 || p.Y == 0 || c.Y == p.Y) && (c.M == 0 || c.M == p.M) && (c.D == 0 || c.D == p.D)
}

// MaskDates blanks the dates' spans in s (same byte length), so that their parts are not read again
// as loose numbers.
func MaskDates(s string, ds []Date) string {
	if len(ds) == 0 {
		return s
	}
	b := []byte(s)
	for _, d := range ds {
		for i := d.Start; i < d.End; i++ {
			b[i] = ' '
		}
	}
	return string(b)
}

// FoldLower is s folded rune by rune (full-width to ASCII, lower case): the text dates are read from.
func FoldLower(s string) string { return strings.ToLower(FoldString(s)) }
