package rag

import (
	"slices"
	"sync"
	"unsafe"
)

// One dense numbering of document ids for the whole process, shared by the metadata index and the
// retrieval legs (issue #23). A metadata filter's passing documents reach the legs as ids
// (Filter.DocumentIDs, the form that crosses JSON, the semantic cache key and the answer state
// machine). A filter asked for the first time used to be translated by each leg id by id: a
// validation and a map look-up per id, about 2 ms of CPU per leg for 8,000 ids at 100k chunks, the
// whole of what a new filter added to retrieve. Now the metadata index, which evaluates a filter as a
// bitset over its rows, also hands out that answer as a bitset over the shared numbering
// (RegisterRestriction), and a leg turns it into its own restriction with one array read per document
// it numbers (DocBits.BitsOf), without hashing an id.
//
// Numbers are never recycled (a few bytes per document id the process has seen, like each leg's own
// id map); ids of every tenant share the numbering, tenants being kept apart by the legs' own checks.
var docNumbering = struct {
	sync.RWMutex
	ids map[string]int32
}{ids: map[string]int32{}}

// DocNumber returns id's number in the process-wide document numbering, assigning the next one on
// first sight; -1 for a malformed id (ValidateID), which is never numbered.
func DocNumber(id string) int32 {
	docNumbering.RLock()
	n, ok := docNumbering.ids[id]
	docNumbering.RUnlock()
	if ok {
		return n
	}
	if ValidateID("document id", id) != nil {
		return -1
	}
	docNumbering.Lock()
	defer docNumbering.Unlock()
	if n, ok := docNumbering.ids[id]; ok {
		return n
	}
	n = int32(len(docNumbering.ids))
	docNumbering.ids[id] = n
	return n
}

// DocNumbers is how many document numbers have been handed out.
func DocNumbers() int {
	docNumbering.RLock()
	defer docNumbering.RUnlock()
	return len(docNumbering.ids)
}

// restrictions holds the latest restrictions handed out with their bitsets over the shared
// numbering: a leg meeting one of these id lists reads the bitset instead of the ids.
var restrictions struct {
	mu      sync.Mutex
	entries [restrictionEntries]restriction
	next    int
}

// restrictionEntries is how many answers are remembered: each leg reads an answer right after the
// metadata index gives it, so a few in flight at once are enough; an answer no longer remembered is
// translated id by id, as any other restriction.
const restrictionEntries = 16

type restriction struct {
	src  *string  // the registered slice's array: registering it again is a pointer test
	ids  []string // a private copy: a caller changing its slice in place cannot change the entry
	bits []uint64 // over the shared numbering
}

// RegisterRestriction records that ids, distinct well-formed document ids, are exactly the documents
// whose shared numbers (DocNumber) are set in bits. The caller keeps neither: ids is copied, bits must
// not be changed after. Registering the same slice again (an answer served from the metadata index's
// cache) only makes sure it is still held.
func RegisterRestriction(ids []string, bits []uint64) {
	if len(ids) < MinDocBits {
		return
	}
	src := unsafe.SliceData(ids)
	restrictions.mu.Lock()
	defer restrictions.mu.Unlock()
	for i := range restrictions.entries {
		if e := &restrictions.entries[i]; e.src == src && len(e.ids) == len(ids) {
			return
		}
	}
	restrictions.entries[restrictions.next] = restriction{src: src, ids: slices.Clone(ids), bits: bits}
	restrictions.next = (restrictions.next + 1) % restrictionEntries
}

// registered returns the private copy and the bitset over the shared numbering of a restriction
// equal to ids, the latest registered first (the same strings as the caller's: a pointer test each).
func registered(ids []string) ([]string, []uint64, bool) {
	restrictions.mu.Lock()
	entries, next := restrictions.entries, restrictions.next // compared outside the lock
	restrictions.mu.Unlock()
	for k := 1; k <= restrictionEntries; k++ {
		e := &entries[(next-k+restrictionEntries)%restrictionEntries]
		if len(e.ids) == len(ids) && len(ids) > 0 && slices.Equal(e.ids, ids) {
			return e.ids, e.bits, true
		}
	}
	return nil, nil, false
}
