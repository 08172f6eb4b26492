package lang

import (
	"math"
	"regexp"
	"strings"
	"unicode/utf8"
)

// ranges.go compares numbers as numbers: a question's numeric condition ("below 95%", "more than 30
// days", "at least 3 years", "低于95%", "超过30天", "不少于3年", or a value, "availability of 93%")
// with the ranges a line or a table cell states ("< 95%", "95%以下", "95%-99%", "95.0% 至 99.0%",
// "≥ 99.9%", "30 days or more"). Matched as words, "below 95%" found "95.0% 至 99.0%" by its 95 and
// "availability of 93%" found no row at all.

// Interval is a set of values on one unit: Lo..Hi, each end open or closed (±Inf: unbounded).
type Interval struct {
	Lo, Hi         float64
	LoOpen, HiOpen bool
	// Unit is what the values are counted in: "%", a currency code ("usd", "cny"), or a time unit
	// ("day", "year"); "" when the text does not say
	Unit string
}

// Point reports whether the interval is one value.
func (iv Interval) Point() bool { return iv.Lo == iv.Hi }

// Contains reports whether v lies in the interval.
func (iv Interval) Contains(v float64) bool {
	return (v > iv.Lo || v == iv.Lo && !iv.LoOpen) && (v < iv.Hi || v == iv.Hi && !iv.HiOpen)
}

// within reports whether iv lies inside q, its ends compared as values whether open or closed: a
// table's "95%以下" (at most 95) is the row "below 95%" asks for, and tables write the boundary
// row both ways.
func (iv Interval) within(q Interval) bool { return iv.Lo >= q.Lo && iv.Hi <= q.Hi }

// Condition is a question's numeric condition: the interval it asks about and whether it was stated
// with a comparison ("below", "超过") rather than as a value.
type Condition struct {
	Interval
	Compared bool
}

// Fit is how a line's numbers meet a question's condition.
type Fit int

// Fits.
const (
	FitNone     Fit = iota // the line states no number in the condition's unit
	FitMatch               // a range or value of the line meets the condition
	FitConflict            // the line states numbers in the unit, none of which meets it
)

// comparison words before a number (folded text): the interval they make of value v
var (
	reBelowBefore   = regexp.MustCompile(`(below|under|less than|lower than|fewer than|smaller than|<|低于|少于|小于|不足|不到|未满|未达到|未达|达不到)\s*$`)
	reAtMostBefore  = regexp.MustCompile(`(at most|up to|no more than|not more than|no higher than|not exceeding|maximum of|max\.?|≤|<=|不超过|不高于|不多于|不大于|最多|至多|最高)\s*$`)
	reAboveBefore   = regexp.MustCompile(`(above|over|more than|greater than|higher than|exceeds|exceeding|in excess of|>|超过|高于|大于|多于|超出|逾)\s*$`)
	reAtLeastBefore = regexp.MustCompile(`(at least|no less than|not less than|no fewer than|minimum of|min\.?|≥|>=|不少于|不低于|不小于|至少|最少|最低|满)\s*$`)
	reCurrencySym   = regexp.MustCompile(`[$€£¥]\s*$`)
	reCNTenure      = regexp.MustCompile(`(工龄|司龄|服务|工作|任职|为期|连续|期限|年限|合同期|有效期)\s*$`)
	reNotFull       = regexp.MustCompile(`(不满|未满)\s*$`)
	reBelowAfter    = regexp.MustCompile(`^\s*(以下|以内|或以下|及以下|or less|or fewer|or below|or lower|or under|and below|and under|max\b)`)
	reAboveAfter    = regexp.MustCompile(`^\s*(以上|或以上|及以上|or more|or above|or higher|or over|and above|and over|\+|plus\b)`)
	// a range's joint between two numbers: "95%-99%", "95.0% 至 99.0%", "95 to 99", "95~99"
	reRangeJoint = regexp.MustCompile(`^\s*(-|–|—|~|～|至|到|to|through)\s*[$€£¥]?$`)
	// a unit written between a number and what follows it ("95%-99%", "30 days or more")
	reUnitTok = regexp.MustCompile(`^\s*(%|％|percent\b|per cent\b|(second|minute|hour|day|week|month|year)s?\b|usd\b|eur\b|gbp\b|cny\b|rmb\b|dollars?\b|euros?\b|yuan\b|秒|分钟|小时|天|日|周|星期|个月|年|元|美元|人民币|欧元)`)
	// "between 95% and 99%", "介于95%和99%之间", "在95%与99%之间"
	reBetween    = regexp.MustCompile(`(between|介于|在)\s*$`)
	reAndJoint   = regexp.MustCompile(`^\s*(and|和|与|及)\s*$`)
	rePercentAft = regexp.MustCompile(`^\s*(%|％|percent\b|per cent\b)`)
	rePercentBef = regexp.MustCompile(`百分之$`)
)

// nearRunes is how much text around a number its comparison and unit are read from: the longest
// comparison ("not exceeding", "or fewer than") is shorter, and reading the whole line before each of
// its numbers with patterns anchored at its end made comparing four times slower than reading.
const nearRunes = 24

// near is the end (before true) or the start of s, nearRunes long.
func near(s string, before bool) string {
	n := 0
	if before {
		for i := len(s); i > 0; {
			_, w := utf8.DecodeLastRuneInString(s[:i])
			i -= w
			if n++; n == nearRunes {
				return s[i:]
			}
		}
		return s
	}
	for i := range s {
		if n == nearRunes {
			return s[:i]
		}
		n++
	}
	return s
}

// unitWords are how each unit is written, lower case: a text holding none of its unit's states no
// number in it.
var unitWords = map[string][]string{
	"%": {"%", "％", "percent", "per cent", "百分之"}, "usd": {"$", "usd", "dollar", "美元", "美金"},
	"cny": {"元", "yuan", "cny", "rmb", "¥", "￥", "人民币"}, "eur": {"€", "eur", "欧元"}, "gbp": {"£", "gbp", "pound", "英镑"},
	"second": {"second", "秒"}, "minute": {"minute", "分钟"}, "hour": {"hour", "小时"}, "day": {"day", "天", "日"},
	"week": {"week", "周", "星期"}, "month": {"month", "月"}, "year": {"year", "年"}, "decade": {"decade"},
}

// mentions reports whether s writes unit anywhere (true for a unit without a list).
func mentions(s, unit string) bool {
	words, ok := unitWords[unit]
	if !ok {
		return true
	}
	l := strings.ToLower(s)
	for _, w := range words {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// located is a number of a text with where it was written and its unit.
type located struct {
	Number
	at, end int // byte offsets in the folded text
	unit    string
	// cnYear marks "N年": a year of an era or a calendar ("天正16年", "民国二年", "哪一年") far more
	// often than a duration, so it counts only with a comparison or in a range ("不少于3年", "1至3年"),
	// or after a word of tenure ("工龄5年", "服务3年")
	cnYear bool
}

// numbersIn reads the numbers of folded text s with their units: a number without one takes the
// unit of the number after it when they form a range ("95-99%": both are percent).
func numbersIn(s string) []located {
	var out []located
	off := 0
	for _, n := range ExtractNumbers(s) {
		k := strings.Index(s[off:], n.Raw)
		if k < 0 {
			continue
		}
		at := off + k
		end := at + len(n.Raw)
		off = end
		u := unitAround(near(s[:at], true), near(s[end:], false), n.Value)
		cnYear := u == "year" && strings.HasPrefix(strings.TrimLeft(s[end:], " "), "年") && !reCNTenure.MatchString(s[:at])
		out = append(out, located{Number: n, at: at, end: end, unit: u, cnYear: cnYear})
	}
	for i := len(out) - 2; i >= 0; i-- {
		if out[i].unit == "" && out[i+1].unit != "" && reRangeJoint.MatchString(s[out[i].end:out[i+1].at]) {
			out[i].unit = out[i+1].unit
		}
	}
	return out
}

// unitAround is the unit written right around a number: percent, a currency, a time unit; a year
// ("2026年", "1995 年") is a date, not a duration.
func unitAround(before, after string, v float64) string {
	if rePercentAft.MatchString(after) || rePercentBef.MatchString(before) {
		return "%"
	}
	u := AdjacentUnits(before, after)
	if u.Currency != "" {
		return u.Currency
	}
	if u.Time != "" {
		if u.Time == "year" && v >= 1000 && v < 3000 && v == math.Trunc(v) {
			return "" // "1995年": a year, not 1995 years
		}
		return u.Time
	}
	return ""
}

// ConditionOf reads the numeric condition of question q: the first number with a unit (percent,
// currency, time), as an interval made by the comparison written around it ("below 95%" is < 95,
// "95%以上" is >= 95, "between 95% and 99%" is [95, 99]), or the value itself. A question without such
// a number has none (ok false): bare numbers ("in 1995", "Super Bowl 50") are names and dates.
func ConditionOf(q string) (Condition, bool) {
	s := FoldLower(q)
	nums := numbersIn(s)
	for i, n := range nums {
		if n.unit == "" {
			continue
		}
		if iv, consumed, ok := rangeAt(s, nums, i); ok && consumed {
			return Condition{Interval: iv, Compared: true}, true
		}
		iv := comparedAt(s, n)
		if iv.Point() && n.cnYear {
			continue
		}
		return Condition{Interval: iv, Compared: !iv.Point()}, true
	}
	return Condition{}, false
}

// rangeAt reads a range starting at nums[i]: "95%-99%", "95 to 99 days", "between 95% and 99%".
func rangeAt(s string, nums []located, i int) (Interval, bool, bool) {
	if i+1 >= len(nums) {
		return Interval{}, false, false
	}
	a, b := nums[i], nums[i+1]
	if a.unit != b.unit && b.unit != "" {
		return Interval{}, false, false
	}
	gap := s[a.end:b.at]
	if a.unit != "" {
		gap = gap[len(reUnitTok.FindString(gap)):]
	}
	if !reRangeJoint.MatchString(gap) && !(reAndJoint.MatchString(gap) && reBetween.MatchString(s[:a.at])) {
		return Interval{}, false, false
	}
	if gap == "-" && a.Value > b.Value { // "2026-12": a date or a code, not a range
		return Interval{}, false, false
	}
	lo, hi := math.Min(a.Value, b.Value), math.Max(a.Value, b.Value)
	return Interval{Lo: lo, Hi: hi, Unit: a.unit}, true, true
}

// comparedAt is the interval of number n with the comparison written around it in s.
func comparedAt(s string, n located) Interval {
	before, after := reCurrencySym.ReplaceAllString(near(s[:n.at], true), ""), near(s[n.end:], false)
	// the unit is between the number and a word after it: "30 days or more", "95%以下"
	if n.unit != "" {
		after = after[len(reUnitTok.FindString(after)):]
	}
	v, u := n.Value, n.unit
	inf := math.Inf(1)
	// the negated comparisons first: "不超过" ends in "超过", "not less than" in "less than"
	switch {
	case reNotFull.MatchString(before): // "不满3年" is under 3 years, though it ends in "满"
		return Interval{Lo: -inf, Hi: v, HiOpen: true, Unit: u}
	case reAtMostBefore.MatchString(before), reBelowAfter.MatchString(after):
		return Interval{Lo: -inf, Hi: v, Unit: u}
	case reAtLeastBefore.MatchString(before), reAboveAfter.MatchString(after):
		return Interval{Lo: v, Hi: inf, Unit: u}
	case reBelowBefore.MatchString(before):
		return Interval{Lo: -inf, Hi: v, HiOpen: true, Unit: u}
	case reAboveBefore.MatchString(before):
		return Interval{Lo: v, Hi: inf, LoOpen: true, Unit: u}
	}
	return Interval{Lo: v, Hi: v, Unit: u}
}

// CellIntervals reads a table cell's ranges and values in unit: the cell's own ("< 95%"), or, when
// its header says the column is counted in unit ("availability (%)", "days per year", "price (USD)"),
// its numbers written without one ("< 95").
func CellIntervals(cell, header, unit string) []Interval {
	if ivs := IntervalsOf(cell, unit); len(ivs) > 0 || unit == "" {
		return ivs
	}
	h := FoldLower(header)
	hu := HeaderUnits(h)
	if strings.ContainsAny(h, "%％") && unit == "%" || hu.Time == unit || hu.Currency == unit {
		ivs := IntervalsOf(cell, "")
		for i := range ivs {
			ivs[i].Unit = unit
		}
		return ivs
	}
	return nil
}

// IntervalsOf reads the ranges and values text s states in unit ("" reads the numbers written
// without a unit). A text stating a range states only its ranges: its other numbers are what applies
// ("95%-99%: 25%").
func IntervalsOf(s, unit string) []Interval {
	if unit != "" && !mentions(s, unit) {
		return nil // most lines: no number is read
	}
	f := FoldLower(s)
	nums := numbersIn(f)
	var out []Interval
	for i := 0; i < len(nums); i++ {
		if nums[i].unit != unit {
			continue
		}
		if iv, _, ok := rangeAt(f, nums, i); ok {
			iv.Unit = unit
			out = append(out, iv)
			i++
			continue
		}
		if iv := comparedAt(f, nums[i]); !iv.Point() || !nums[i].cnYear {
			out = append(out, iv)
		}
	}
	// a line stating a range states its condition there; its values are what applies ("95%-99%:
	// 25%": 25% is the refund, not an availability)
	ranges := out[:0:0]
	for _, iv := range out {
		if !iv.Point() {
			ranges = append(ranges, iv)
		}
	}
	if len(ranges) > 0 {
		return ranges
	}
	return out
}

// FitOf says how text s meets condition c: FitMatch when one of its ranges or values in c's unit
// meets c (a value c asks about lies in the range: "93%" in "< 95%"; a compared condition holds the
// range: "below 95%" holds "< 95%" and "95%以下", not "95%-99%"), FitConflict when it states such
// numbers and none meets c, FitNone when it states none. A bare value meets a compared condition when
// it lies in it ("93%" is below 95%).
func FitOf(c Condition, s string) Fit {
	ivs := IntervalsOf(s, c.Unit)
	if len(ivs) == 0 {
		return FitNone
	}
	for _, iv := range ivs {
		if c.Meets(iv) {
			return FitMatch
		}
	}
	return FitConflict
}

// Meets reports whether a range or value iv meets the condition: holds the value asked about, or lies
// in the compared range.
func (c Condition) Meets(iv Interval) bool {
	if !c.Compared {
		// a value asked without a comparison meets a range it bounds: "did the price drop to $10"
		// is answered by "decreased to less than $10 per barrel" (SQuAD), whose bound it is
		return iv.Contains(c.Lo) || sameValue(iv.Lo, c.Lo) || sameValue(iv.Hi, c.Lo)
	}
	if iv.Point() {
		return c.Contains(iv.Lo)
	}
	return iv.within(c.Interval)
}

func sameValue(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }
