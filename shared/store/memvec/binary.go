package memvec

import (
	"math/bits"
	"slices"
)

// Binary codes (Options.Quant "binary"): one bit per dimension, scanned before the int8 codes.
//
// A row's bit d is set when its component d lies above the index's centre (the mean of the stored
// vectors) in that dimension; the query's bits are taken against the same centre. Centring is what makes
// one bit carry information: embedding models' outputs all lean one way (a shared mean direction), so
// uncentred signs agree across most rows in the dimensions that dominate, and the Hamming distance would
// measure mostly that shared lean. Centred, the bits are the sign pattern of each row's own deviation,
// the part that tells rows apart, and the Hamming distance between two sign patterns estimates the angle
// between the deviations (one bit per coordinate hyperplane).
//
// The approximate score is dim - 2*hamming(q, x), the agreeing signs minus the disagreeing ones. A
// per-row weight (the row's mean absolute deviation from the centre, the least-squares scale of
// sign(x - c) as an estimate of x - c) was tried and measured worse: on the clustered 1,024-dimension
// vectors of the benchmark it kept 0.63 of the exact top-10 among 32 x k candidates against 0.77 for
// the plain count, and equal (1.00) from 64 x k on; taking the query's bits without the centre kept
// 0.51. The Hamming count finds the query's neighbourhood (its cluster); the int8 and float32
// re-scores order it.
//
// The scan reads dim/8 bytes per row (128 at 1,024 dimensions, an eighth of the int8 codes and a
// thirty-second of the float32 rows), keeps BinaryFactor x k candidates, re-scores them with the int8
// codes, keeps Rescore x k of those and re-scores these exactly in float32: the returned scores are exact
// and only a row that fell out of a candidate list can be lost. How often that happens is measured by
// the recall check (checkRecall), which widens the binary candidate list until recall@10 holds and falls
// back to int8, and then to the exact scan, when it does not.

const (
	defaultBinFactor = 64  // binary candidates per result before the int8 re-score
	maxBinFactor     = 512 // widest the recall check goes before falling back to int8
)

// words is the number of uint64 words of a binary code.
func words(dim int) int { return (dim + 63) / 64 }

// encodeBits writes the sign bits of v - centre into out (padding bits stay zero, in the query too, so
// they never differ).
func encodeBits(v, centre []float32, out []uint64) {
	clear(out)
	for d, x := range v {
		if centre != nil {
			x -= centre[d]
		}
		if x > 0 {
			out[d>>6] |= 1 << (d & 63)
		}
	}
}

// hamming counts the differing bits of two codes of equal length. Four accumulators let the popcounts
// of neighbouring words overlap; math/bits.OnesCount64 compiles to POPCNT on amd64 (behind a feature
// check unless GOAMD64 >= v2) and to the NEON count on arm64.
func hamming(a, b []uint64) int {
	b = b[:len(a)]
	var h0, h1, h2, h3 int
	i := 0
	for ; i+4 <= len(a); i += 4 {
		aa, bb := a[i:i+4:i+4], b[i:i+4:i+4]
		h0 += bits.OnesCount64(aa[0] ^ bb[0])
		h1 += bits.OnesCount64(aa[1] ^ bb[1])
		h2 += bits.OnesCount64(aa[2] ^ bb[2])
		h3 += bits.OnesCount64(aa[3] ^ bb[3])
	}
	for ; i < len(a); i++ {
		h0 += bits.OnesCount64(a[i] ^ b[i])
	}
	return h0 + h1 + h2 + h3
}

// hammingRowsGeneric is the portable hammingRows.
func hammingRowsGeneric(q, codes []uint64, w int, out []int32) {
	for r := range out {
		out[r] = int32(hamming(q[:w], codes[r*w:(r+1)*w]))
	}
}

// hammingBlock is how many rows one hammingRows call scores: the call and the per-row bookkeeping after
// it stay out of the kernel's loop, and the counts (a kilobyte) stay in the L1 cache.
const hammingBlock = 256

// putBits writes row at's binary code against the current centre. Caller holds the write lock.
func (ix *Index) putBits(at int, v []float32) {
	if at == ix.bits.n {
		ix.bits.push(make([]uint64, words(ix.dim)))
	}
	encodeBits(v, ix.centre, ix.bits.row(at))
}

// recentre sets the centre to the mean of the stored vectors and re-encodes every row's bits against it.
// Rows added later are encoded against this centre until the next snapshot recentres: any fixed centre
// gives valid codes, a stale one only weaker ones, and the recall check measures what they give. Caller
// holds the write lock.
func (ix *Index) recentre() {
	n := len(ix.rows)
	sum := make([]float64, ix.dim)
	for i := range n {
		for d, x := range ix.vecs.row(i) {
			sum[d] += float64(x)
		}
	}
	c := make([]float32, ix.dim)
	if n > 0 {
		for d := range c {
			c[d] = float32(sum[d] / float64(n))
		}
	}
	ix.centre = c
	// The codes are rewritten on the heap: writing them through a map of the snapshot would copy every
	// page of it anyway (the map is private).
	ix.bits = seg[uint64]{w: words(ix.dim)}
	for i := range n {
		ix.putBits(i, ix.vecs.row(i))
	}
}

// queryBits is the query's code against the centre.
func (ix *Index) queryBits(q []float32) []uint64 {
	out := make([]uint64, words(ix.dim))
	encodeBits(q, ix.centre, out)
	return out
}

// searchBinary is the binary path: Hamming scan, int8 re-score, float32 re-score. Caller holds a read lock.
func (ix *Index) searchBinary(q []float32, k int, m matcher, binFactor int) []scored {
	qb := ix.queryBits(q)
	dim := ix.dim
	cand := ix.fanOut(func(lo, hi int) topK {
		t := newTopK(ix, k*binFactor, hi-lo, true)
		var counts [hammingBlock]int32
		for i := lo; i < hi; {
			// a run of consecutive rows, all in the map or all in one block of the heap tail
			codes, j := ix.bits.span(i, min(hi, i+hammingBlock))
			hammingRows(qb, codes, ix.bits.w, counts[:j-i])
			for r := i; r < j; r++ {
				s := float32(dim - 2*int(counts[r-i]))
				if len(t.items) == t.k && s <= t.items[0].score {
					continue // ties with the worst candidate are not taken (see scanCodes)
				}
				if !m.match(&ix.rows[r]) { // after the score: most rows fail the threshold first
					continue
				}
				t.offer(scored{s, r})
			}
			i = j
		}
		return t
	})
	if want := k * binFactor; len(cand) > want {
		// every shard kept its own want best: cut the merged list back before the int8 re-score, or a
		// fanned-out query would re-score a list per core
		slices.SortFunc(cand, byScoreThenRow)
		cand = cand[:want]
	}
	// int8 re-score: the candidates' codes are scattered single rows, a kilobyte each at 1,024 dimensions
	q16 := quantizeQuery(q)
	for i := range cand {
		r := cand[i].row
		cand[i].score = float32(dotI8(q16, ix.codes.row(r))) * ix.scales[r]
	}
	if want := k * ix.opt.Rescore; len(cand) > want {
		slices.SortFunc(cand, byScoreThenRow)
		cand = cand[:want]
	}
	ix.prefetch(cand)
	for i := range cand {
		cand[i].score = dot(q, ix.vecs.row(cand[i].row))
	}
	return cand
}

// byScoreThenRow orders approximate candidates best first without the id comparison (see topK.rowTies).
func byScoreThenRow(a, b scored) int {
	switch {
	case a.score > b.score:
		return -1
	case a.score < b.score:
		return 1
	}
	return a.row - b.row
}
