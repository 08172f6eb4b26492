package lang

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/text"
)

// numbers.go reads the numbers a text states, normalised so that one fact written two ways compares
// equal: full-width digits, thousands separators ("20,000"), Chinese numerals ("二十" = 20,
// "二〇二六" = 2026, "两百" = 200), and scale words ("3 million", "5万"), whose value is the scaled
// one only: "五万元" is 50000, never 5, so "5元" is not supported by it. Dates are read whole
// (dates.go) and compared as (year, month, day).

// NumberSet is the set of values a text states.
type NumberSet map[float64]bool

// Has reports whether v is in the set, tolerating float noise.
func (s NumberSet) Has(v float64) bool {
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

// Number is one Number found in a text, with how it was written.
type Number struct {
	Value float64
	Raw   string
	// Base is the value as written before its scale word ("3" of "3 million"); equal to value when
	// there is none.
	Base float64
}

// Scaled reports whether the number was written with a scale word.
func (n Number) Scaled() bool { return n.Base != n.Value }

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

// ExtractNumbers returns the numbers s states, in order.
func ExtractNumbers(s string) []Number {
	rs := []rune(s)
	for i, r := range rs {
		rs[i] = text.Fold(r)
	}
	var out []Number
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
					out = append(out, Number{Value: v * m, Raw: raw + string(rs[j:j+n]), Base: v})
					j += n
				} else {
					out = append(out, Number{Value: v, Raw: raw, Base: v})
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
				n := Number{Value: v, Raw: raw, Base: v}
				if _, ok := cnBig[rs[j-1]]; ok && j-i > 1 { // "五万" is 50000, written as 5 with a scale
					if w, ok := parseCN(string(rs[i : j-1])); ok {
						n.Base = w
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

// NumbersOf returns the set of values text states.
func NumbersOf(s string) NumberSet {
	set := NumberSet{}
	for _, n := range ExtractNumbers(s) {
		set[n.Value] = true
	}
	return set
}

// Units is what a number is counted in: a time unit ("10 days"), the period it is per ("per year",
// "monthly", "每月") and a currency ("$49", "49 USD"); "" when the text does not say. A claim's number
// is not supported by the same number counted in another unit of the same kind: "10 weeks" is not
// "10 days", "$49 per year" is not a monthly price, "€49" is not 49 USD.
type Units struct{ Time, Period, Currency string }

// Conflicts names the kind on which u and v state different units ("" when none does).
func (u Units) Conflicts(v Units) string {
	switch {
	case u.Time != "" && v.Time != "" && u.Time != v.Time:
		return "time"
	case u.Period != "" && v.Period != "" && u.Period != v.Period:
		return "period"
	case u.Currency != "" && v.Currency != "" && u.Currency != v.Currency:
		return "currency"
	}
	return ""
}

// Describe writes u as the reader would ("days", "per year", "usd").
func (u Units) Describe() string {
	var parts []string
	if u.Currency != "" {
		parts = append(parts, strings.ToUpper(u.Currency))
	}
	if u.Time != "" {
		parts = append(parts, u.Time+"s")
	}
	if u.Period != "" {
		parts = append(parts, "per "+u.Period)
	}
	return strings.Join(parts, " ")
}

var (
	// a time unit right after a number (the text is folded: lower case, half-width)
	reTimeAfter = regexp.MustCompile(`^\s?-?\s?(second|minute|hour|day|week|month|year|decade)s?\b|^\s?(秒|分钟|小时|天|周|星期|个月|年)`)
	// a time unit anywhere (a column header: "days per year")
	ReTimeWord = regexp.MustCompile(`\b(second|minute|hour|day|week|month|year|decade)s?\b`)
	rePeriod   = regexp.MustCompile(`\b(per|a|an|each|every)\s(day|week|month|year|hour)\b|\b(daily|weekly|monthly|yearly|annually|hourly)\b|/\s?(mo|month|yr|year|day|week|hour)\b|每(天|日|周|星期|个月|月|年|小时)|(月|年)均`)
	// a currency right before ("$49") or right after ("49 usd", "49元") a number
	reCurrencyBefore = regexp.MustCompile(`(\$|€|£|¥|\busd|\beur|\bgbp|\bcny|\brmb)\s?$`)
	ReCurrencyAfter  = regexp.MustCompile(`^\s?(usd|eur|gbp|cny|rmb|dollars?|euros?|pounds? sterling|yuan|美元|美金|欧元|英镑|人民币|元)`)
)

var UnitNames = map[string]string{"秒": "second", "分钟": "minute", "小时": "hour", "天": "day", "日": "day", "周": "week", "星期": "week",
	"个月": "month", "月": "month", "年": "year", "mo": "month", "yr": "year", "daily": "day", "weekly": "week", "monthly": "month",
	"yearly": "year", "annually": "year", "hourly": "hour"}

// unitName is the English singular of a folded time unit as written.
func unitName(w string) string {
	if n, ok := UnitNames[w]; ok {
		return n
	}
	return strings.TrimSuffix(w, "s")
}

// PeriodOf reads the period folded text s states ("" when none).
func PeriodOf(s string) string {
	m := rePeriod.FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	for _, g := range m[2:] {
		if g != "" {
			return unitName(g)
		}
	}
	return ""
}

// AdjacentUnits reads the time unit and currency written right around a number: before and after are
// the folded text on either side of it.
func AdjacentUnits(before, after string) Units {
	var u Units
	if m := reTimeAfter.FindStringSubmatch(after); m != nil {
		u.Time = unitName(m[1] + m[2])
	}
	if m := reCurrencyBefore.FindStringSubmatch(before); m != nil {
		u.Currency = CurrencyCode(m[1])
	} else if m := ReCurrencyAfter.FindStringSubmatch(after); m != nil {
		u.Currency = CurrencyCode(m[1])
	}
	return u
}

// CurrencyCode is the code of one currency as written ("$" is usd).
func CurrencyCode(w string) string {
	if cs := CurrencyCodes(w); len(cs) > 0 {
		return cs[0]
	}
	return ""
}

// NumberUnits returns the units of each occurrence of value v (or, scaled, its base) in folded text s,
// with the period its clause states ("每年3~8月……每月月圆后的第2~4日": 2 is per month).
func NumberUnits(s string, v float64) []Units {
	var out []Units
	bounds := []int{0}
	for _, m := range ReClause.FindAllStringIndex(s, -1) {
		_, n := utf8.DecodeRuneInString(s[m[0]:])
		bounds = append(bounds, m[0]+n)
	}
	bounds = append(bounds, len(s))
	for i := 1; i < len(bounds); i++ {
		part := s[bounds[i-1]:max(bounds[i-1], bounds[i])]
		period, off := PeriodOf(part), 0
		for _, n := range ExtractNumbers(part) {
			k := strings.Index(part[off:], n.Raw)
			if k < 0 {
				continue
			}
			at := off + k
			off = at + len(n.Raw)
			if !(NumberSet{n.Value: true}).Has(v) && !(NumberSet{n.Base: true}).Has(v) {
				continue
			}
			u := AdjacentUnits(part[:at], part[off:])
			u.Period = period
			out = append(out, u)
		}
	}
	return out
}

// HeaderUnits reads what a table column's header says its cells are counted in: "days per year" is
// days, per year; "monthly price (usd)" is USD, per month.
func HeaderUnits(h string) Units {
	u := Units{Period: PeriodOf(h), Currency: CurrencyCode(h)}
	if m := ReTimeWord.FindStringSubmatch(rePeriod.ReplaceAllString(h, " ")); m != nil {
		u.Time = m[1]
	}
	return u
}
