package rag

import (
	"slices"
	"sync"
)

// DocBits caches a search index's translation of a document restriction (Filter.DocumentIDs) into a
// bitset over the index's own document numbers (issue #23). A metadata filter restricts a search to
// every document that passes it, thousands of ids; validating each id and looking each one up in the
// index's id map on every query cost a filtered retrieve 10-20% over an unfiltered one at 100k chunks,
// and the garbage it made landed in the p99. The same filter asked again hands the legs the same ids
// (the metadata index caches its answer per filter and generation), so the translation is kept and a
// query pays one comparison of the ids with the kept copy (the same strings: a pointer test each),
// then tests a bit per row.
//
// The key is the ids' content, not the slice's identity: a caller may reuse or change its slice, and a
// hit is a comparison with a private copy, so a cached set is never applied to other ids. (A hash of
// the ids cost more than the comparison it would save: ids of different restrictions differ early.) A translation
// stays valid while the index numbers no new document (version) or when every id already had a number
// (numbers are never recycled). Safe for concurrent use; the returned bits are shared and read-only.
type DocBits struct {
	mu      sync.Mutex
	entries [docBitsEntries]docBitsEntry
	next    int
	// shared maps the index's document numbers to the process-wide ones (DocNumber; -1 for a number
	// that is not a well-formed document id), extended as the index numbers more (BitsOf)
	shared []int32
}

// docBitsEntries is how many restrictions an index keeps: a handful of filters in use at once per
// process; each entry holds a bitset of numbered/8 bytes and a reference to the ids it was made from.
const docBitsEntries = 8

// MinDocBits is the smallest restriction worth a cached bitset: fewer ids are tested directly.
const MinDocBits = 17

type docBitsEntry struct {
	ids      []string
	version  int
	complete bool // every id had a number
	bits     []uint64
	known    bool // some id had a number
}

// NewDocBits returns an empty cache.
func NewDocBits() *DocBits { return &DocBits{} }

// Bits returns ids as a bitset over the index's document numbers (number maps an id to its number;
// version is how many numbers the index has handed out), and whether any id is numbered (false: the
// restriction matches nothing in this index). Invalid when an id is malformed (checked once per
// translation). The caller holds whatever lock makes number safe to call, and must not modify bits.
func (c *DocBits) Bits(ids []string, version int, number func(string) (int32, bool)) (bits []uint64, known bool, err error) {
	return c.BitsOf(ids, version, number, nil)
}

// BitsOf is Bits for an index that can list its numbers: numbered(from, yield) calls yield with each
// number from from on that it has handed out and its id. A restriction the metadata index answered
// (RegisterRestriction: a filter's passing documents, as a bitset over the process-wide numbering) is
// then translated without looking up or validating a single id: the index's numbers are mapped to
// the shared ones once each (kept in c), and a number is in the set when its shared number's bit is.
// Any other restriction is translated id by id, as by Bits.
func (c *DocBits) BitsOf(ids []string, version int, number func(string) (int32, bool), numbered func(from int, yield func(id string, n int32))) (bits []uint64, known bool, err error) {
	c.mu.Lock()
	entries := c.entries // compared outside the lock: concurrent searches do not queue behind it
	c.mu.Unlock()
	for i := range entries {
		e := &entries[i]
		if e.ids != nil && len(e.ids) == len(ids) && (e.complete || e.version == version) && slices.Equal(e.ids, ids) {
			return e.bits, e.known, nil
		}
	}
	if numbered != nil {
		if kept, shared, ok := registered(ids); ok {
			return c.fromShared(kept, shared, version, numbered)
		}
	}
	if err := ValidateIDs("document id", ids); err != nil {
		return nil, false, E("rag.DocBits", KindInvalid, err)
	}
	// a copy of the slice (the strings are shared): a caller changing its slice in place cannot change
	// what the entry was made from
	e := docBitsEntry{ids: slices.Clone(ids), version: version, complete: true, bits: make([]uint64, version/64+1)}
	for _, id := range ids {
		if n, ok := number(id); ok {
			e.bits[n/64] |= 1 << (n % 64)
			e.known = true
		} else {
			e.complete = false
		}
	}
	c.mu.Lock()
	c.entries[c.next] = e
	c.next = (c.next + 1) % docBitsEntries
	c.mu.Unlock()
	return e.bits, e.known, nil
}

// fromShared translates a registered restriction (kept: its private copy of the ids, distinct and
// well formed; shared: its bitset over the process-wide numbering) and caches it like Bits.
func (c *DocBits) fromShared(kept []string, shared []uint64, version int, numbered func(int, func(string, int32))) ([]uint64, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if from := len(c.shared); from < version {
		c.shared = slices.Grow(c.shared, version-from)[:version]
		for n := from; n < version; n++ {
			c.shared[n] = -1
		}
		numbered(from, func(id string, n int32) {
			if int(n) >= from && int(n) < version {
				c.shared[n] = DocNumber(id)
			}
		})
	}
	e := docBitsEntry{ids: kept, version: version, bits: make([]uint64, version/64+1)}
	count := 0
	for n, s := range c.shared[:version] {
		if s >= 0 && HasBit(shared, s) {
			e.bits[n/64] |= 1 << (n % 64)
			count++
		}
	}
	// the ids are distinct: every one has a number here when as many numbers are set
	e.known, e.complete = count > 0, count == len(kept)
	c.entries[c.next] = e
	c.next = (c.next + 1) % docBitsEntries
	return e.bits, e.known, nil
}

// HasBit reports whether bit n is set in bits.
func HasBit(bits []uint64, n int32) bool {
	w := int(n / 64)
	return w < len(bits) && bits[w]&(1<<(n%64)) != 0
}
