package bm25

import (
	"encoding/binary"
	"slices"
)

// termList is an entry's distinct term ids in ascending order, each as the uvarint of its distance from
// the previous one. Only removal (the document frequencies to decrement) and RM3 (a few feedback
// chunks' terms) read it, never the scoring loop; packed it takes one or two bytes a term where the
// analyzer's []int32 took four, plus the slack of its growth (docs/bench/million.md, BM25 memory).
type termList []byte

// packTerms packs ids (sorted in place).
func packTerms(ids []int32) termList {
	slices.Sort(ids)
	n, prev := 0, int32(-1)
	for _, id := range ids {
		n += uvarintLen(uint64(id - prev))
		prev = id
	}
	out, prev := make(termList, 0, n), -1
	for _, id := range ids {
		out = binary.AppendUvarint(out, uint64(id-prev))
		prev = id
	}
	return out
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// each calls fn with every term id, ascending.
func (l termList) each(fn func(id int32)) {
	id := int32(-1)
	for len(l) > 0 {
		d, n := binary.Uvarint(l)
		if n <= 0 {
			return // written by packTerms or the snapshot decoder: never malformed
		}
		id += int32(d)
		fn(id)
		l = l[n:]
	}
}
