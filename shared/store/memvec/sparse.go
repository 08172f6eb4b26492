package memvec

import (
	"encoding/binary"
	"runtime"
	"slices"
	"sync"
)

// Sparse postings. The offline embedder's vectors are hashed lexical features: a chunk sets about a tenth
// of its dimensions and a question a handful (three to six words of a quoted phrase). Their binary codes
// fail the recall check (a sign bit says little about a mostly-zero vector), so such an index scans int8
// codes, and at a million rows that scan reads 512 MB per question for a dot product whose every term
// but a handful is zero.
//
// When the stored codes are sparse (sampled density at most sparseMaxDensity), the index also keeps, for
// each dimension, the rows whose int8 code is not zero there, with that code: postings. A question
// whose few dimensions have short postings adds code times query code into one accumulator per row and
// reads those accumulators back in row order; the sum is exactly the int8 scan's dot product (a zero
// query component adds nothing), and the rows are offered to the candidate heap in the same order under
// the same rules, so both paths return the same candidates (TestSparseMatchesDenseScan), which are then
// re-scored in float32 as before. A dense question (a real embedding model's, or many words) costs more
// in postings than in the scan and takes the scan: the choice is made per question by counting postings.
//
// Writes do not edit the postings. Rows appended since the build are scanned with the int8 kernel, rows
// changed since (an update, or a delete moving the last row into the hole) are marked dirty and scanned
// the same way, and the postings are rebuilt when those exceed an eighth of the built rows, at a
// snapshot, and at open.

const (
	// sparseMaxDensity is the share of non-zero codes above which postings are not kept (they would
	// hold most of the codes again, at five bytes each).
	sparseMaxDensity = 0.25
	// sparseSample rows are read to estimate the density.
	sparseSample = 1024
	// sparseCost is what one posting costs against one code byte of the SIMD scan: a question takes the
	// postings when its postings times sparseCost are fewer than the codes the scan reads.
	sparseCost = 16
)

// postings are the non-zero int8 codes of rows [0, built), per dimension, rows ascending.
type postings struct {
	rows   [][]uint32
	codes  [][]int8
	built  int
	dirty  []uint64 // bit i: row i (< built) changed since the build
	ndirty int
}

// isDirty reports whether row i's postings are stale.
func (p *postings) isDirty(i int) bool { return p.dirty[i>>6]&(1<<(uint(i)&63)) != 0 }

// touch marks row i changed. Caller holds the write lock.
func (p *postings) touch(i int) {
	if i < p.built && !p.isDirty(i) {
		p.dirty[i>>6] |= 1 << (uint(i) & 63)
		p.ndirty++
	}
}

// stale is how many rows the postings do not describe: appended or changed since the build.
func (p *postings) stale(n int) int { return max(0, n-p.built) + p.ndirty }

// sparseDensity estimates the share of non-zero int8 codes from up to sparseSample rows spread over the
// index. Caller holds a lock.
func (ix *Index) sparseDensity() float64 {
	n := min(len(ix.rows), ix.codes.n)
	if n == 0 {
		return 1
	}
	step := max(1, n/sparseSample)
	var nz, all int
	for i := 0; i < n; i += step {
		for _, c := range ix.codes.row(i) {
			if c != 0 {
				nz++
			}
		}
		all += ix.dim
	}
	return float64(nz) / float64(all)
}

// maintainSparse keeps the postings in step with the rows after writes: built once the index is large
// enough for the quantised scan and its codes are sparse, rebuilt when the rows they do not describe
// exceed an eighth of them (or minRowsPerWorker), dropped when the codes are dense. A dense verdict is
// sampled again only after the index doubles. force rebuilds whatever is stale (a snapshot, an open).
// Caller holds the write lock.
func (ix *Index) maintainSparse(force bool) {
	n := len(ix.rows)
	if !ix.hasCodes() || n < ix.opt.MinRows || ix.codes.n < n {
		ix.sp = nil
		return
	}
	if p := ix.sp; p != nil {
		s := p.stale(n)
		if s == 0 || (!force && s <= max(minRowsPerWorker, p.built/8)) {
			return
		}
	} else if ix.spDenseAt > 0 && n < 2*ix.spDenseAt {
		return
	}
	if ix.sparseDensity() > sparseMaxDensity {
		ix.sp, ix.spDenseAt = nil, n
		return
	}
	ix.sp, ix.spDenseAt = ix.buildPostings(n), 0
}

// buildPostings reads the codes of rows [0, n) twice: once to size each dimension's list, once to fill
// them (two flat arrays, no growth slack). The rows are split into one range per core (at most four):
// each range counts, then fills its own part of every dimension's list, so the lists come out sorted
// by row as one pass would write them. Eight zero codes are skipped at a time, since the postings
// exist because most codes are zero.
func (ix *Index) buildPostings(n int) *postings {
	parts := max(1, min(runtime.GOMAXPROCS(0), 4, n/minRowsPerWorker))
	counts := make([][]int, parts)
	var wg sync.WaitGroup
	for w := range parts {
		counts[w] = make([]int, ix.dim)
		wg.Go(func() {
			c := counts[w]
			for i := n * w / parts; i < n*(w+1)/parts; i++ {
				eachNonZero(ix.codes.row(i), func(d int, _ int8) { c[d]++ })
			}
		})
	}
	wg.Wait()
	total := 0
	for _, c := range counts {
		for _, x := range c {
			total += x
		}
	}
	allRows, allCodes := make([]uint32, total), make([]int8, total)
	p := &postings{rows: make([][]uint32, ix.dim), codes: make([][]int8, ix.dim), built: n, dirty: make([]uint64, (n+63)/64)}
	// at[w][d]: where range w writes dimension d's next posting
	at := make([][]int, parts)
	for w := range at {
		at[w] = make([]int, ix.dim)
	}
	off := 0
	for d := range ix.dim {
		start := off
		for w := range parts {
			at[w][d] = off
			off += counts[w][d]
		}
		p.rows[d], p.codes[d] = allRows[start:off:off], allCodes[start:off:off]
	}
	for w := range parts {
		wg.Go(func() {
			next := at[w]
			for i := n * w / parts; i < n*(w+1)/parts; i++ {
				eachNonZero(ix.codes.row(i), func(d int, c int8) {
					allRows[next[d]], allCodes[next[d]] = uint32(i), c
					next[d]++
				})
			}
		})
	}
	wg.Wait()
	return p
}

// eachNonZero calls fn with each non-zero code of row and its dimension, in order, testing eight codes
// at a time for zero.
func eachNonZero(row []int8, fn func(d int, c int8)) {
	b := int8Bytes(row)
	d := 0
	for ; d+8 <= len(b); d += 8 {
		if binary.LittleEndian.Uint64(b[d:]) == 0 {
			continue
		}
		for j := d; j < d+8; j++ {
			if row[j] != 0 {
				fn(j, row[j])
			}
		}
	}
	for ; d < len(row); d++ {
		if row[d] != 0 {
			fn(d, row[d])
		}
	}
}

// sparseDims returns the query code's non-zero dimensions when the postings are cheaper than the scan
// for this question, else nil. Caller holds a read lock.
func (ix *Index) sparseDims(q16 []int16) []int {
	p := ix.sp
	if p == nil {
		return nil
	}
	var dims []int
	cost := 0
	for d, x := range q16 {
		if x != 0 {
			dims = append(dims, d)
			cost += len(p.rows[d])
		}
	}
	n := len(ix.rows)
	cost += p.stale(n) * ix.dim / sparseCost // the rows scanned with the kernel
	if len(dims) == 0 || cost*sparseCost >= n*ix.dim {
		return nil
	}
	return dims
}

// accPool recycles the per-shard accumulators (4 bytes a row: 4 MB a shard at a million rows).
var accPool sync.Pool

func getAcc(n int) []int32 {
	if p, ok := accPool.Get().(*[]int32); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]int32, n)
}

func putAcc(a []int32) {
	clear(a)
	accPool.Put(&a)
}

// scanSparse is scanCodes over rows [lo, hi) through the postings: the same scores (rows the postings
// do not describe are scored with the kernel), offered in the same order under the same rules.
func (ix *Index) scanSparse(q16 []int16, dims []int, k int, m matcher, lo, hi int) topK {
	p := ix.sp
	t := newTopK(ix, k, hi-lo, true)
	bhi := min(hi, p.built) // rows the postings cover in this shard
	var acc []int32
	if bhi > lo {
		acc = getAcc(bhi - lo)
		defer putAcc(acc)
		for _, d := range dims {
			rows, codes := p.rows[d], p.codes[d]
			from, _ := slices.BinarySearch(rows, uint32(lo))
			to, _ := slices.BinarySearch(rows, uint32(bhi))
			qd := int32(q16[d])
			codes = codes[from:to]
			for j, r := range rows[from:to] {
				acc[int(r)-lo] += qd * int32(codes[j])
			}
		}
	}
	scales := ix.scales[:hi]
	for i := lo; i < hi; i++ {
		var s float32
		if i < bhi && !p.isDirty(i) {
			s = float32(acc[i-lo]) * scales[i]
		} else {
			s = float32(dotI8(q16, ix.codes.row(i))) * scales[i]
		}
		// scanCodes tests the filter first and the score second; a row is skipped when either fails,
		// so testing the score first (cheaper, and failing for almost every row once the heap is full)
		// keeps the same candidates
		if len(t.items) == k && s <= t.items[0].score {
			continue
		}
		if !m.match(&ix.rows[i]) {
			continue
		}
		t.offer(scored{s, i})
	}
	return t
}
