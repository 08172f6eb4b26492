package milvuslite

import "time"

// SetClock replaces the clock that paces a Late index's looks for its collection.
func SetClock(ix *Index, now func() time.Time) { ix.now = now }
