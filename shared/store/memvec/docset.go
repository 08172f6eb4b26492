package memvec

import (
	"slices"

	"github.com/docmind/docmind/shared/rag"
)

// docSet is the documents a search is restricted to. A metadata filter (issue #23) restricts a
// search to every document that passes it, thousands of ids checked against each row scanned: a
// linear look-up per row made a restricted search slower than an unrestricted one, and a bisection
// still cost a fifth of the scan at 100k rows, so beyond a few ids the set is a bitset over the
// interned document numbers, translated once per distinct restriction (rag.DocBits) and shared,
// read-only, by every search under it.
type docSet struct {
	few  []int32  // fewer than rag.MinDocBits ids; nil when bits is used
	bits []uint64 // bit id set for each id
}

// any reports whether the set restricts at all.
func (s docSet) any() bool { return len(s.few) > 0 || s.bits != nil }

func (s docSet) has(id int32) bool {
	if s.bits == nil {
		return slices.Contains(s.few, id)
	}
	return rag.HasBit(s.bits, id)
}
