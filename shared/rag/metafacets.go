package rag

import (
	"cmp"
	"math/bits"
	"slices"
	"strconv"
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
		for s, rows := range col.strs {
			if _, isDate := ParseMetaDate(s); isDate {
				continue
			}
			if n := count(rows); n > 0 {
				f.Values = append(f.Values, MetaValueCount{Value: s, Documents: n})
			}
		}
		for v, rows := range col.nums {
			if n := count(rows); n > 0 {
				f.Values = append(f.Values, MetaValueCount{Value: v, Documents: n})
			}
		}
		f.Distinct = len(f.Values)
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
		slices.SortFunc(f.Values, func(a, b MetaValueCount) int {
			if a.Documents != b.Documents {
				return b.Documents - a.Documents
			}
			return cmp.Compare(valueText(a.Value), valueText(b.Value))
		})
		if len(f.Values) > top {
			f.Values = f.Values[:max(top, 0)]
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

func valueText(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	s, _ := v.(string)
	return s
}
