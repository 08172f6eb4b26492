package memvec

import "slices"

// inSorted reports whether id is in the sorted ids. A metadata filter (issue #23) restricts a search to
// every document that passes it, thousands of ids checked against each row scanned: a linear look-up
// per row made a restricted search slower than an unrestricted one.
func inSorted(ids []int32, id int32) bool {
	if len(ids) <= 16 {
		return slices.Contains(ids, id)
	}
	_, ok := slices.BinarySearch(ids, id)
	return ok
}
