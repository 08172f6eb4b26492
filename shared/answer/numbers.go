package answer

import (
	"math"
	"strconv"
	"strings"

	"github.com/docmind/docmind/shared/text"
)

// numbers.go reads the numbers a text states, normalised so that one fact written two ways compares
// equal: full-width digits, thousands separators ("20,000"), Chinese numerals ("二十" = 20,
// "二〇二六" = 2026, "两百" = 200), and scale words ("3 million", "5万"), whose value is the scaled
// one only: "五万元" is 50000, never 5, so "5元" is not supported by it. Dates are read whole
// (dates.go) and compared as (year, month, day).

// numberSet is the set of values a text states.
type numberSet map[float64]bool

// has reports whether v is in the set, tolerating float noise.
func (s numberSet) has(v float64) bool {
	if s[v] {
		return true
	}
	for x := range s {
		if math.Abs(x-v) < 1e-9*math.Max(1, math.Abs(v)) {
			return true
		}
	}
	return false
}

// number is one number found in a text, with how it was written.
type number struct {
	value float64
	raw   string
	// base is the value as written before its scale word ("3" of "3 million"); equal to value when
	// there is none.
	base float64
}

// scaled reports whether the number was written with a scale word.
func (n number) scaled() bool { return n.base != n.value }

var cnDigit = map[rune]int{'零': 0, '〇': 0, '○': 0, '一': 1, '二': 2, '两': 2, '三': 3, '四': 4, '五': 5, '六': 6, '七': 7, '八': 8, '九': 9}
var cnUnit = map[rune]int{'十': 10, '百': 100, '千': 1000}
var cnBig = map[rune]float64{'万': 1e4, '亿': 1e8}

var scaleWords = map[string]float64{"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "k": 1e3, "m": 1e6, "bn": 1e9}

// isCNNumeral reports whether r is part of a Chinese numeral.
func isCNNumeral(r rune) bool {
	_, d := cnDigit[r]
	_, u := cnUnit[r]
	_, b := cnBig[r]
	return d || u || b
}

// extractNumbers returns the numbers s states, in order.
func extractNumbers(s string) []number {
	rs := []rune(s)
	for i, r := range rs {
		rs[i] = text.Fold(r)
	}
	var out []number
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case r >= '0' && r <= '9':
			j := i
			for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || (rs[j] == ',' || rs[j] == '.') && j+1 < len(rs) && rs[j+1] >= '0' && rs[j+1] <= '9' && j > i) {
				j++
			}
			raw := string(rs[i:j])
			clean := raw
			// "20,000" is twenty thousand; "3,5" (no group of three) is left as two numbers
			if strings.Contains(raw, ",") && groupedThousands(raw) {
				clean = strings.ReplaceAll(raw, ",", "")
			} else if k := strings.IndexByte(raw, ','); k >= 0 {
				clean, j = raw[:k], i+len([]rune(raw[:k]))
				raw = clean
			}
			v, err := strconv.ParseFloat(clean, 64)
			if err == nil {
				if m, n := scaleAfter(rs, j); m > 0 {
					out = append(out, number{value: v * m, raw: raw + string(rs[j:j+n]), base: v})
					j += n
				} else {
					out = append(out, number{value: v, raw: raw, base: v})
				}
			}
			i = j
		case isCNNumeral(r):
			j := i
			for j < len(rs) && isCNNumeral(rs[j]) {
				j++
			}
			raw := string(rs[i:j])
			// a lone 一/两 inside words ("一些", "统一") is rarely a quantity; keep it only before a
			// counter or unit-like character that commonly follows numbers
			if v, ok := parseCN(raw); ok && (j-i > 1 || cnQuantity(rs, i, j)) {
				n := number{value: v, raw: raw, base: v}
				if _, ok := cnBig[rs[j-1]]; ok && j-i > 1 { // "五万" is 50000, written as 5 with a scale
					if w, ok := parseCN(string(rs[i : j-1])); ok {
						n.base = w
					}
				}
				out = append(out, n)
			}
			i = j
		default:
			i++
		}
	}
	// digits followed by 万/亿 ("5万") are handled by scaleAfter
	return out
}

// groupedThousands reports whether every comma in raw separates groups of three digits.
func groupedThousands(raw string) bool {
	intPart := raw
	if k := strings.IndexByte(raw, '.'); k >= 0 {
		intPart = raw[:k]
	}
	parts := strings.Split(intPart, ",")
	for i, p := range parts {
		if i > 0 && len(p) != 3 || i == 0 && (len(p) == 0 || len(p) > 3) {
			return false
		}
	}
	return true
}

// scaleAfter reads a scale word right after position j ("5 million", "5万", "3k"): its factor and the
// runes it spans (0 when none).
func scaleAfter(rs []rune, j int) (float64, int) {
	if j < len(rs) {
		if b, ok := cnBig[rs[j]]; ok {
			return b, 1
		}
	}
	k := j
	if k < len(rs) && rs[k] == ' ' {
		k++
	}
	e := k
	for e < len(rs) && rs[e] >= 'a' && rs[e] <= 'z' {
		e++
	}
	if m, ok := scaleWords[string(rs[k:e])]; ok && (e-k > 1 || k == j) {
		return m, e - j
	}
	return 0, 0
}

// cnQuantity reports whether a one-character numeral at rs[i:j] is followed by a measure word.
func cnQuantity(rs []rune, i, j int) bool {
	if j >= len(rs) {
		return false
	}
	return strings.ContainsRune("个年月日天周岁次名位人元件条项倍分秒小种家所期章节层号米座对场届台", rs[j]) ||
		rs[j] == '公' && j+1 < len(rs) && strings.ContainsRune("里尺斤顷分升", rs[j+1]) // 一公里, not 一公司
}

// parseCN reads a Chinese numeral: positional digits ("二〇二六" = 2026) or with units ("二十" = 20,
// "一百零五" = 105, "三千五百万" = 35000000, "十二" = 12).
func parseCN(s string) (float64, bool) {
	rs := []rune(s)
	positional := true
	for _, r := range rs {
		if _, ok := cnDigit[r]; !ok {
			positional = false
		}
	}
	if positional && len(rs) > 1 {
		v := 0.0
		for _, r := range rs {
			v = v*10 + float64(cnDigit[r])
		}
		return v, true
	}
	var total, section, digit float64
	seen := false
	for _, r := range rs {
		switch {
		case cnDigit[r] > 0 || r == '零' || r == '〇' || r == '○':
			digit = float64(cnDigit[r])
			seen = true
		case cnUnit[r] > 0:
			if digit == 0 && !seen {
				digit = 1 // "十二" is 12
			}
			section += digit * float64(cnUnit[r])
			digit, seen = 0, true
		case cnBig[r] > 0:
			section += digit
			if section == 0 {
				return 0, false
			}
			total += section * cnBig[r]
			section, digit = 0, 0
		default:
			return 0, false
		}
	}
	if !seen && total == 0 {
		return 0, false
	}
	return total + section + digit, true
}

// numbersOf returns the set of values text states.
func numbersOf(s string) numberSet {
	set := numberSet{}
	for _, n := range extractNumbers(s) {
		set[n.value] = true
	}
	return set
}
