package reader

import (
	"github.com/docmind/docmind/shared/answer/lang"
)

// numeric.go compares the question's numeric condition (lang.ConditionOf: "below 95%", "超过30天",
// "availability of 93%") with the ranges and values of each candidate line and table row, as numbers:
// the row whose range meets the condition is the question's row even when it shares no word with it
// ("< 95%" for "availability of 93%"), and a line or row whose numbers in the condition's unit all
// miss it ("95.0% 至 99.0%" for "低于95%") ranks below one that meets it.

// Score factors for a line whose numbers meet, or all miss, the question's condition.
const (
	numericMatch    = 1.4
	numericConflict = 0.6
)

// rowFit is how a table row meets the condition: its cells stating a range in the condition's unit
// ("< 95%", "95.0% 至 99.0%", under a header "availability (%)" with the unit in the header) decide, or,
// in a row without ranges, its cells' values; the cell that meets it is the row's key (-1: none).
// A row's other numbers are what applies to it ("50%" refunded), never its condition.
func rowFit(cond *lang.Condition, header, cells []string) (lang.Fit, int) {
	if cond == nil {
		return lang.FitNone, -1
	}
	type cellIvs struct {
		col int
		ivs []lang.Interval
	}
	var ranged, valued []cellIvs
	for c, cell := range cells {
		h := ""
		if c < len(header) {
			h = header[c]
		}
		ivs := lang.CellIntervals(cell, h, cond.Unit)
		if len(ivs) == 0 {
			continue
		}
		if !ivs[0].Point() { // CellIntervals keeps only ranges when a cell holds one
			ranged = append(ranged, cellIvs{c, ivs})
		} else {
			valued = append(valued, cellIvs{c, ivs})
		}
	}
	decide := ranged
	if len(decide) == 0 {
		decide = valued
	}
	if len(decide) == 0 {
		return lang.FitNone, -1
	}
	for _, ci := range decide {
		for _, iv := range ci.ivs {
			if cond.Meets(iv) {
				return lang.FitMatch, ci.col
			}
		}
	}
	return lang.FitConflict, -1
}

// weighNumbers marks each line with how its numbers meet the question's condition and scales its
// score by it.
func weighNumbers(units []unit, cond *lang.Condition) {
	if cond == nil {
		return
	}
	// the lines that rank (a score) and the line after each, which next may add: the others are
	// never quoted, and reading their numbers cost as much as the rest of the reader
	need := make([]bool, len(units))
	for i, u := range units {
		if u.score > 0 {
			need[i] = true
			if i+1 < len(units) && units[i+1].src == u.src {
				need[i+1] = true
			}
		}
	}
	for i := range units {
		if !need[i] {
			continue
		}
		u := &units[i]
		fit := lang.FitNone
		if u.row != nil {
			fit = u.row.fit
		} else {
			fit = lang.FitOf(*cond, u.show)
		}
		u.fit = fit
		switch fit {
		case lang.FitMatch:
			u.score *= numericMatch
		case lang.FitConflict:
			u.score *= numericConflict
		}
	}
}
