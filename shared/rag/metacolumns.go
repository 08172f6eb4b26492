package rag

import (
	"math/bits"
	"slices"
)

// MetaColumns is a column view of many prepared documents (rows 0..n-1, keys numbered by one
// MetaKeys): per key, which rows have it, the rows holding each string (a list holds each member),
// the rows holding each number, and the rows ordered by number and by date. A filter is judged over
// all rows at once (MetaMatcher.Eval) by looking values up instead of visiting every row: the
// metadata index rebuilds this view after a write and keeps it for every query until the next one.
type MetaColumns struct {
	n    int
	cols []metaColumn // by key number
}

type metaColumn struct {
	present []uint64
	strs    map[string][]int32
	nums    map[float64][]int32
	byNum   []numRow  // ascending
	byDate  []dateRow // ascending
	lists   []int32   // the rows holding a list (for Facets' type)
}

type numRow struct {
	n   float64
	row int32
}

type dateRow struct {
	sec  int64
	nsec int32
	row  int32
}

// Columns builds the column view of docs (row i is docs[i]); a row that is no longer a document
// holds the zero MetaDoc and is left out by the caller's mask.
func (k *MetaKeys) Columns(docs []MetaDoc) *MetaColumns {
	c := &MetaColumns{n: len(docs), cols: make([]metaColumn, len(k.ids))}
	words := (len(docs) + 63) / 64
	for row, d := range docs {
		for i, key := range d.keys {
			col := &c.cols[key]
			if col.present == nil {
				col.present = make([]uint64, words)
				col.strs, col.nums = map[string][]int32{}, map[float64][]int32{}
			}
			col.present[row/64] |= 1 << (row % 64)
			v, r := d.vals[i], int32(row)
			switch v.kind {
			case valString:
				col.strs[v.s] = append(col.strs[v.s], r)
				if v.isDate {
					col.byDate = append(col.byDate, dateRow{v.sec, v.nsec, r})
				}
			case valNumber:
				col.nums[v.n] = append(col.nums[v.n], r)
				col.byNum = append(col.byNum, numRow{v.n, r})
			case valList:
				col.lists = append(col.lists, r)
				for _, s := range v.list {
					col.strs[s] = append(col.strs[s], r)
				}
			}
		}
	}
	for i := range c.cols {
		col := &c.cols[i]
		slices.SortFunc(col.byNum, func(a, b numRow) int {
			switch {
			case a.n < b.n:
				return -1
			case a.n > b.n:
				return 1
			}
			return 0
		})
		slices.SortFunc(col.byDate, func(a, b dateRow) int { return compareDate(a.sec, a.nsec, b.sec, b.nsec) })
	}
	return c
}

func compareDate(as int64, an int32, bs int64, bn int32) int {
	switch {
	case as < bs || as == bs && an < bn:
		return -1
	case as > bs || an > bn:
		return 1
	}
	return 0
}

// Size estimates the bytes the view holds, for the metadata index's memory bound.
func (c *MetaColumns) Size() int {
	n := 64
	for _, col := range c.cols {
		n += len(col.present)*8 + len(col.byNum)*16 + len(col.byDate)*24 + len(col.lists)*4
		for s, rows := range col.strs {
			n += len(s) + 48 + len(rows)*4
		}
		n += len(col.nums) * 48
		for _, rows := range col.nums {
			n += len(rows) * 4
		}
	}
	return n
}

// Eval returns, as a bitset over the rows (bit i of word i/64), the rows that pass the matcher's
// filter: the same rows as Match over each row's MetaDoc (TestMatchPreparedAgrees). A nil matcher
// passes every row.
func (m *MetaMatcher) Eval(c *MetaColumns) []uint64 {
	words := (c.n + 63) / 64
	if m == nil {
		return c.all(words)
	}
	f := m.f
	switch {
	case f.And != nil:
		out := m.sub[0].Eval(c)
		for _, s := range m.sub[1:] {
			r := s.Eval(c)
			for i := range out {
				out[i] &= r[i]
			}
		}
		return out
	case f.Or != nil:
		out := m.sub[0].Eval(c)
		for _, s := range m.sub[1:] {
			r := s.Eval(c)
			for i := range out {
				out[i] |= r[i]
			}
		}
		return out
	case f.Not != nil:
		return c.complement(m.sub[0].Eval(c))
	}
	out := make([]uint64, words)
	var col *metaColumn
	if m.key >= 0 && int(m.key) < len(c.cols) && c.cols[m.key].present != nil {
		col = &c.cols[m.key]
	}
	switch {
	case f.Exists != nil:
		if col != nil {
			copy(out, col.present)
		}
		if !*f.Exists {
			return c.complement(out)
		}
		return out
	case col == nil:
		return out
	case f.Eq != nil:
		col.mark(out, f.Eq)
		return out
	case f.In != nil:
		for _, v := range f.In {
			col.mark(out, v)
		}
		return out
	}
	lo, hi := f.Lower, f.Upper
	if (lo != nil && lo.isDate) || (hi != nil && hi.isDate) {
		from, to := 0, len(col.byDate)
		if lo != nil {
			from, _ = slices.BinarySearchFunc(col.byDate, lo, func(r dateRow, b *bound) int {
				c := compareDate(r.sec, r.nsec, b.date.Unix(), int32(b.date.Nanosecond()))
				if c == 0 && !b.inclusive {
					return -1 // an exclusive lower bound skips the equal rows
				}
				return c
			})
		}
		if hi != nil {
			to, _ = slices.BinarySearchFunc(col.byDate, hi, func(r dateRow, b *bound) int {
				c := compareDate(r.sec, r.nsec, b.date.Unix(), int32(b.date.Nanosecond()))
				if c == 0 && b.inclusive {
					return -1 // an inclusive upper bound keeps the equal rows
				}
				return c
			})
		}
		for _, r := range col.byDate[from:max(from, to)] {
			out[r.row/64] |= 1 << (r.row % 64)
		}
		return out
	}
	from, to := 0, len(col.byNum)
	if lo != nil {
		from, _ = slices.BinarySearchFunc(col.byNum, lo, func(r numRow, b *bound) int {
			switch {
			case r.n < b.num || r.n == b.num && !b.inclusive:
				return -1
			case r.n > b.num:
				return 1
			}
			return 0
		})
	}
	if hi != nil {
		to, _ = slices.BinarySearchFunc(col.byNum, hi, func(r numRow, b *bound) int {
			switch {
			case r.n < b.num || r.n == b.num && b.inclusive:
				return -1
			case r.n > b.num:
				return 1
			}
			return 0
		})
	}
	for _, r := range col.byNum[from:max(from, to)] {
		out[r.row/64] |= 1 << (r.row % 64)
	}
	return out
}

// mark sets the rows holding v (a string, or a number).
func (col *metaColumn) mark(out []uint64, v any) {
	var rows []int32
	switch x := v.(type) {
	case string:
		rows = col.strs[x]
	case float64:
		rows = col.nums[x]
	}
	for _, r := range rows {
		out[r/64] |= 1 << (r % 64)
	}
}

func (c *MetaColumns) all(words int) []uint64 {
	return c.complement(make([]uint64, words))
}

// complement flips b in place over the n rows (bits past n stay clear).
func (c *MetaColumns) complement(b []uint64) []uint64 {
	for i := range b {
		b[i] = ^b[i]
	}
	if rem := c.n % 64; rem != 0 && len(b) > 0 {
		b[len(b)-1] &= 1<<rem - 1
	}
	return b
}

// Rows calls fn for each row set in b, in ascending order.
func Rows(b []uint64, fn func(row int)) {
	for i, w := range b {
		for w != 0 {
			fn(i*64 + bits.TrailingZeros64(w))
			w &= w - 1
		}
	}
}
