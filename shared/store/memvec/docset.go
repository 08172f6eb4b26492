package memvec

import "slices"

// docSet is the documents a search is restricted to. A metadata filter (issue #23) restricts a
// search to every document that passes it, thousands of ids checked against each row scanned: a
// linear look-up per row made a restricted search slower than an unrestricted one, and a bisection
// still cost a fifth of the scan at 100k rows, so beyond a few ids the set is a bitset over the
// interned document numbers.
type docSet struct {
	few  []int32  // at most smallDocSet ids; nil when bits is used
	bits []uint64 // bit id set for each id
}

const smallDocSet = 16

func newDocSet(ids []int32) docSet {
	if len(ids) <= smallDocSet {
		return docSet{few: ids}
	}
	bits := make([]uint64, slices.Max(ids)/64+1)
	for _, id := range ids {
		bits[id/64] |= 1 << (id % 64)
	}
	return docSet{bits: bits}
}

// any reports whether the set restricts at all.
func (s docSet) any() bool { return len(s.few) > 0 || s.bits != nil }

func (s docSet) has(id int32) bool {
	if s.bits == nil {
		return slices.Contains(s.few, id)
	}
	w := int(id / 64)
	return w < len(s.bits) && s.bits[w]&(1<<(id%64)) != 0
}
