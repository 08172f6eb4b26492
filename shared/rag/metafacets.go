package rag

import (
	"cmp"
	"math/bits"
	"slices"
)

// MetaFacet describes one metadata key over a set of documents: for the page's filter suggestions
// (GET /api/kbs/{kb}/metadata) and for inferring a filter from a question (answer.inferFilter).
type MetaFacet struct {
	Key string `json:"key"`
	// Type is the kind of the key's values: string, number, date, list (of strings), or mixed when
	// documents disagree.
	Type string `json:"type"`
	// Documents counts the documents that have the key.
	Documents int `json:"documents"`
	// Distinct counts the key's distinct string and number values (each member of a list on its own;
	// dates are not counted: they are ranges, not values to pick).
	Distinct int `json:"distinct"`
	// Values are the most common values, most documents first (then by value), at most the number
	// asked; empty for a date key.
	Values []MetaValueCount `json:"values"`
	// Min and Max bound a number or date key's values (dates as stored); absent otherwise.
	Min any `json:"min,omitempty"`
	Max any `json:"max,omitempty"`
}

// MetaValueCount is one value of a key and how many documents hold it.
type MetaValueCount struct {
	Value     any `json:"value"` // a string or a number
	Documents int `json:"documents"`
}

// Facets describes every key present in the rows of mask (a bitset over the rows, as Eval returns),
// keys with most documents first (then by name), each with at most top values. k must be the
// numbering the view was built with.
func (c *MetaColumns) Facets(k *MetaKeys, mask []uint64, top int) []MetaFacet {
	names := make([]string, len(k.ids))
	for name, id := range k.ids {
		names[id] = name
	}
	in := func(r int32) bool { return int(r/64) < len(mask) && mask[r/64]&(1<<(r%64)) != 0 }
	count := func(rows []int32) int {
		n := 0
		for _, r := range rows {
			if in(r) {
				n++
			}
		}
		return n
	}
	var out []MetaFacet
	for id := range c.cols {
		col := &c.cols[id]
		if col.present == nil {
			continue
		}
		docs := 0
		for i, w := range col.present {
			if i < len(mask) {
				docs += bits.OnesCount64(w & mask[i])
			}
		}
		if docs == 0 {
			continue
		}
		f := MetaFacet{Key: names[id], Values: []MetaValueCount{}, Documents: docs}
		var nums, dates, lists int
		for _, r := range col.byNum {
			if in(r.row) {
				nums++
				if f.Min == nil {
					f.Min = r.n
				}
				f.Max = r.n
			}
		}
		var first, last int32 = -1, -1
		for _, r := range col.byDate {
			if in(r.row) {
				dates++
				if first < 0 {
					first = r.row
				}
				last = r.row
			}
		}
		lists = count(col.lists)
		var cands []valueCount
		if dates < docs { // a date key lists no values: skip parsing its strings again
			for s, rows := range col.strs {
				if dates > 0 {
					if _, isDate := ParseMetaDate(s); isDate {
						continue
					}
				}
				if n := count(rows); n > 0 {
					cands = append(cands, valueCount{s: s, docs: n})
				}
			}
		}
		for v, rows := range col.nums {
			if n := count(rows); n > 0 {
				cands = append(cands, valueCount{n: v, num: true, docs: n})
			}
		}
		f.Distinct = len(cands)
		for _, c := range topValues(cands, top) {
			if c.num {
				f.Values = append(f.Values, MetaValueCount{Value: c.n, Documents: c.docs})
			} else {
				f.Values = append(f.Values, MetaValueCount{Value: c.s, Documents: c.docs})
			}
		}
		switch strs := docs - nums - dates - lists; {
		case nums == docs:
			f.Type = "number"
		case dates == docs:
			f.Type, f.Min, f.Max = "date", c.dateText(col, first), c.dateText(col, last)
		case lists == docs:
			f.Type = "list"
		case strs == docs:
			f.Type = "string"
		default:
			f.Type = "mixed"
		}
		if f.Type != "number" && f.Type != "date" {
			f.Min, f.Max = nil, nil
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b MetaFacet) int {
		if a.Documents != b.Documents {
			return b.Documents - a.Documents
		}
		return cmp.Compare(a.Key, b.Key)
	})
	return out
}

// dateText is the stored text of row's date under col (the strings map holds it).
func (c *MetaColumns) dateText(col *metaColumn, row int32) any {
	for s, rows := range col.strs {
		if slices.Contains(rows, row) {
			if _, ok := ParseMetaDate(s); ok {
				return s
			}
		}
	}
	return nil
}

// valueCount is a value of a key and its documents, before it is boxed for MetaValueCount.
type valueCount struct {
	s    string
	n    float64
	num  bool
	docs int
}

// better orders values most documents first, then numbers (ascending) before strings (ascending).
func better(a, b valueCount) int {
	switch {
	case a.docs != b.docs:
		return b.docs - a.docs
	case a.num != b.num:
		if a.num {
			return -1
		}
		return 1
	case a.num:
		return cmp.Compare(a.n, b.n)
	}
	return cmp.Compare(a.s, b.s)
}

// topValues returns the best top of cands in order, sorting at most 2*top of them at a time: a key
// of 10,000 titles is not sorted whole to show ten.
func topValues(cands []valueCount, top int) []valueCount {
	top = max(top, 0)
	if len(cands) <= top {
		slices.SortFunc(cands, better)
		return cands
	}
	buf := make([]valueCount, 0, 2*top+1)
	for _, c := range cands {
		buf = append(buf, c)
		if len(buf) > 2*top {
			slices.SortFunc(buf, better)
			buf = buf[:top]
		}
	}
	slices.SortFunc(buf, better)
	return buf[:min(top, len(buf))]
}
