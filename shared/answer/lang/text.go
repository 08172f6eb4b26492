// Package lang holds the text primitives the reader, the claim checks and the calibration share: tokens
// and sentences in English and Chinese, what a question asks for (Asked), numbers with their units, dates,
// names and [n] citation markers.
package lang

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/text"
)

// SplitSentences splits on line breaks and on sentence-ending punctuation (Latin and CJK).
func SplitSentences(s string) []string {
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
					if r[i] == '.' && i+1 < len(r) && abbreviation(r[start:i]) { // "Candice E. Jackson", "the U.S. Navy"
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

// Abbreviations that end with a full stop inside a sentence.
var Abbreviations = map[string]bool{"mr": true, "mrs": true, "ms": true, "dr": true, "st": true, "jr": true, "sr": true,
	"vs": true, "no": true, "prof": true, "gen": true, "col": true, "lt": true, "sgt": true, "capt": true, "inc": true,
	"co": true, "corp": true, "ltd": true, "mt": true, "ft": true, "e.g": true, "i.e": true, "etc": true, "u.s": true, "u.k": true}

// abbreviation reports whether the word ending text (right before a full stop) is an initial ("E") or
// a known abbreviation ("Dr", "U.S"): the full stop after it does not end the sentence.
func abbreviation(text []rune) bool {
	j := len(text)
	for j > 0 && !unicode.IsSpace(text[j-1]) && text[j-1] != '(' {
		j--
	}
	w := string(text[j:])
	if n := utf8.RuneCountInString(w); n == 1 {
		r, _ := utf8.DecodeRuneInString(w)
		return unicode.IsUpper(r)
	}
	return Abbreviations[strings.ToLower(w)]
}

// HasCJK reports whether s holds a CJK character (a question holding one is answered in Chinese).
func HasCJK(s string) bool {
	for _, r := range s {
		if text.IsCJK(r) {
			return true
		}
	}
	return false
}

// SplitListMarkers cuts s before each inline list marker that is not at its start.
func SplitListMarkers(s string) []string {
	r := []rune(s)
	var out []string
	start := 0
	for i := 1; i < len(r); i++ {
		if isListMarker(r, i) {
			if strings.TrimSpace(string(r[start:i])) != "" {
				out = append(out, string(r[start:i]))
			}
			start = i
		}
	}
	return append(out, string(r[start:]))
}

// isListMarker reports whether a list marker starts at r[i]: "（1）"/"(1)", a circled number, or a
// Chinese ordinal followed by "、" ("一、", "2、").
func isListMarker(r []rune, i int) bool {
	switch {
	case r[i] >= '①' && r[i] <= '⑳':
		return true
	case (r[i] == '（' || r[i] == '(') && i+2 < len(r) && (unicode.IsDigit(r[i+1]) || strings.ContainsRune("一二三四五六七八九十", r[i+1])) && (r[i+2] == '）' || r[i+2] == ')'):
		return true
	case i+1 < len(r) && r[i+1] == '、' && (unicode.IsDigit(r[i]) || strings.ContainsRune("一二三四五六七八九十", r[i])):
		return i == 0 || !unicode.IsDigit(r[i-1]) && !strings.ContainsRune("一二三四五六七八九十", r[i-1])
	}
	return false
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

// UnitOrCurrency reports the words that are, whole, a currency code, symbol or unit of measure ("USD",
// "GB", "KG", "¥", "人民币"): newNames reads them as names, and the bridge followed them to any line with
// an amount in the same currency ("Who acquired GitHub?" quoted the handbook's 500 USD home-office
// allowance). The whole word is matched, not searched: "Yuan", "Euro" and "Dollar" can be names, and a
// title 《元史》 holding 元 is still a name.
func UnitOrCurrency(w string) bool {
	if CurrencySigns[w] {
		return true
	}
	_, ok := UnitWords[strings.ToUpper(w)]
	return ok && strings.ToUpper(w) == w
}

// CurrencySigns are the currency symbols and Chinese currency words a name never is on its own.
var CurrencySigns = map[string]bool{"$": true, "€": true, "£": true, "¥": true, "￥": true, "元": true, "人民币": true,
	"美元": true, "美金": true, "欧元": true, "英镑": true, "日元": true, "港币": true, "港元": true}

// UnitWords are units of measure written in capitals (currencies are currencyCode's).
var UnitWords = map[string]struct{}{"USD": {}, "EUR": {}, "GBP": {}, "CNY": {}, "RMB": {}, "JPY": {}, "HKD": {}, "CHF": {},
	"CAD": {}, "AUD": {}, "KB": {}, "MB": {}, "GB": {}, "TB": {}, "PB": {}, "KM": {}, "CM": {}, "MM": {}, "KG": {}, "MG": {},
	"ML": {}, "KW": {}, "KWH": {}, "MW": {}, "GHZ": {}, "MHZ": {}, "HZ": {}, "MPH": {}, "KPH": {}, "AM": {}, "PM": {}, "UTC": {}, "GMT": {}}

// CiteRe is a citation marker: [n], or the full-width 【n】 or ［n］ some models write in Chinese.
var CiteRe = regexp.MustCompile(`[\[【［](\d{1,3})[\]】］]`)

func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

// ReClause ends a clause: a fact is about the words of its own clause ("Team costs $49, Business
// $199" holds two facts about two rows). The text is folded ("，" is ","), and a comma before a
// digit is a thousands separator.
var ReClause = regexp.MustCompile(`;|、|,[^0-9]|,$|\s(and|but|while|whereas)\s`)

// currencies maps how a currency is written to its code: $ = USD, 元 = CNY (美元 is USD), ¥ = CNY.
// The regular expression runs only when one of the hints is in the text (it is read for every line of
// every cited passage).
var currencies = []struct {
	code  string
	hints []string
	re    *regexp.Regexp
}{
	{"usd", []string{"$", "usd", "dollar", "美元", "美金"}, regexp.MustCompile(`\$|\busd\b|\bdollars?\b|美元|美金`)},
	{"eur", []string{"€", "eur", "欧元"}, regexp.MustCompile(`€|\beur\b|\beuros?\b|欧元`)},
	{"gbp", []string{"£", "gbp", "sterling", "英镑"}, regexp.MustCompile(`£|\bgbp\b|\bpounds? sterling\b|英镑`)},
	{"cny", []string{"¥", "cny", "rmb", "yuan", "人民币", "元"}, regexp.MustCompile(`¥|\bcny\b|\brmb\b|\byuan\b|人民币|(^|[^美欧日港澳台])元`)},
}

// CurrencyCodes returns the codes of the currencies the folded text s names.
func CurrencyCodes(s string) []string {
	var out []string
	for _, c := range currencies {
		for _, h := range c.hints {
			if strings.Contains(s, h) {
				if c.re.MatchString(s) {
					out = append(out, c.code)
				}
				break
			}
		}
	}
	return out
}

func FoldString(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(text.Fold(r))
	}
	return b.String()
}

// Citations parses [n] markers: the distinct valid source numbers in order of first use, and how many
// markers point at no source (counted, never shown as links).
func Citations(answer string, nSources int) (used []int, invalid int) {
	for _, m := range CiteRe.FindAllStringSubmatch(answer, -1) {
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > nSources {
			invalid++
			continue
		}
		if !slices.Contains(used, n) {
			used = append(used, n)
		}
	}
	return used, invalid
}
