package bm25

import (
	"encoding/binary"
	"math"
	"runtime"
	"slices"
	"sync"
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

// invertBytes is about how many bytes of term lists one block of invertRange fills: the block's lists
// and its counters stay in the shared cache while the postings stream past.
var invertBytes = 8 << 20

// invertPostings gives every entry its term list (termList) from the postings, as a snapshot's load
// must (the file holds the postings only). Done term by term, each posting would append to a random
// entry's list: a cache miss per posting, 10 s of a 16 s load at a million chunks (BenchmarkSnapshot).
// Instead the entries are filled a block at a time: for each block every term's postings are read from
// a cursor that only moves forward (the postings are sorted by entry), so the reads stream through the
// postings in memory order and the writes stay within the block's lists. The entries are split into
// one range per core (at most four), each with its own cursors.
func invertPostings(entries []entry, postings [][]posting) {
	n := len(entries)
	if n == 0 {
		return
	}
	total := 0
	for _, ps := range postings {
		total += len(ps)
	}
	// a term list takes about 1.25 bytes a posting (termListB/posting in BenchmarkSnapshot)
	block := max(64, int(int64(invertBytes)*int64(n)/max(1, int64(total)*5/4)))
	parts := max(1, min(runtime.GOMAXPROCS(0), 4, n/block))
	var wg sync.WaitGroup
	for p := range parts {
		wg.Go(func() { invertRange(entries, postings, n*p/parts, n*(p+1)/parts, block) })
	}
	wg.Wait()
}

// invertRange fills the term lists of entries lo to hi, block entries at a time, in two passes per
// block: the lists' sizes, then their bytes in one exactly sized arena. next holds each term's next
// entry (the one at its cursor): a block skips the terms with nothing in it by reading that array in
// order, not each term's postings (a cache miss per term and block, most of the rebuild at a million
// chunks with millions of terms).
func invertRange(entries []entry, postings [][]posting, lo, hi, block int) {
	cur := make([]int, len(postings)) // each term's first posting at or after the block
	next := make([]int32, len(postings))
	for t, ps := range postings {
		if lo > 0 {
			cur[t], _ = slices.BinarySearchFunc(ps, int32(lo), func(p posting, at int32) int { return int(p.doc - at) })
		}
		next[t] = math.MaxInt32
		if cur[t] < len(ps) {
			next[t] = ps[cur[t]].doc
		}
	}
	size := make([]int, min(block, hi-lo))
	last := make([]int32, len(size))
	for b := lo; b < hi; b += block {
		e := min(hi, b+block)
		size, last := size[:e-b], last[:e-b]
		clear(size)
		for i := range last {
			last[i] = -1
		}
		for t, at := range next {
			if int(at) >= e {
				continue
			}
			ps := postings[t]
			for i := cur[t]; i < len(ps) && int(ps[i].doc) < e; i++ {
				d := int(ps[i].doc) - b
				size[d] += uvarintLen(uint64(int32(t) - last[d]))
				last[d] = int32(t)
			}
		}
		sum := 0
		for _, c := range size {
			sum += c
		}
		arena := make([]byte, sum)
		for d := range size {
			entries[b+d].terms, arena = termList(arena[:0:size[d]]), arena[size[d]:]
			last[d] = -1
		}
		for t, at := range next {
			if int(at) >= e {
				continue
			}
			ps := postings[t]
			i := cur[t]
			for ; i < len(ps) && int(ps[i].doc) < e; i++ {
				d := int(ps[i].doc) - b
				entries[b+d].terms = binary.AppendUvarint(entries[b+d].terms, uint64(int32(t)-last[d]))
				last[d] = int32(t)
			}
			cur[t] = i
			next[t] = math.MaxInt32
			if i < len(ps) {
				next[t] = ps[i].doc
			}
		}
	}
}
