package bm25

import (
	"cmp"
	"math"
	"slices"
	"sort"

	"github.com/docmind/docmind/shared/rag"
)

// MaxScore (Turtle and Flood, 1995) over the accumulator: a term's contribution is below its weighted
// idf (tf / (tf + k1 * (...)) < 1), so once the k-th best partial score among the entries inside the
// filter exceeds what the terms not yet read could still add, no entry those terms alone contain can
// reach the top k. The terms are read rarest first: in full while new entries can still enter, then
// only at the entries still in reach, found by galloping through the (entry-sorted) posting lists.
// The common terms of a question, most of its postings at a million chunks, are then never read whole.
//
// The result is exactly top's: the entries left in reach are scored again term by term in the query's
// order, so each float32 sum is the exhaustive one, and an entry is dropped only when even its bound is
// below the k-th best by more than float32 rounding could move either (pruneSlack), so a tie at the
// k-th place is never lost. TestPrunedTopIsExhaustiveTop checks it on random indexes and queries.

// pruneFrom is the postings a query's terms must hold together before top prunes: below it the whole
// read is cheaper than the bookkeeping (at 100k chunks most questions stay under it). A variable only
// so that a test can move it.
var pruneFrom int64 = 200_000

// pruneSlack is how far below the k-th best partial score an entry's bound must be to drop it: float32
// sums of a few dozen terms of at most ~15 each are off by well under 1e-3.
func pruneSlack(theta float64) float64 { return 1e-3 + 1e-4*math.Abs(theta) }

// prunable reports whether top should prune for q.
func (ix *Index) prunable(q []qterm, k int) bool {
	if len(q) < 2 || ix.p.Delta < 0 || ix.p.K1 < 0 || ix.p.B < 0 || ix.p.B > 1 {
		return false // the bound needs contributions in [0, idf (1 + delta)]
	}
	var total int64
	for _, t := range q {
		if t.w <= 0 || math.IsNaN(t.w) || math.IsInf(t.w, 0) {
			return false // the bound needs positive weights
		}
		total += int64(len(ix.postings[t.id]))
	}
	return total >= pruneFrom && int64(k)*8 < total
}

// topPruned is top by MaxScore; it also returns how many postings it read whole (the lists of the
// terms read in full). Caller holds a lock.
func (ix *Index) topPruned(q []qterm, k int, f rag.Filter, docs docBits) ([]scored, int) {
	sc := ix.scratch()
	defer ix.pool.Put(sc)
	acc, touched := sc.acc, sc.touched[:0]
	defer func() {
		if cap(touched) > cap(sc.touched) {
			sc.touched = touched[:0]
		}
	}()

	n := float64(ix.live)
	avg := ix.totalLen / n
	k1, b, delta := ix.p.K1, ix.p.B, ix.p.Delta
	a, c := k1*(1-b), k1*b/avg
	kbs := set(f.KBIDs)
	inside := func(at int32) bool {
		e := &ix.entries[at]
		return e.tenant == f.Tenant && (kbs == nil || kbs[e.kb]) && (docs == nil || docs.has(e.docN))
	}

	// the terms by bound, highest first; bound = weighted idf (1 + delta)
	type bounded struct {
		at    int // in q
		idf   float64
		bound float64
	}
	var terms []bounded
	rest := 0.0 // what the terms not yet read can still add
	for i, t := range q {
		if ix.df[t.id] == 0 {
			continue
		}
		idf := t.w * IDF(float64(ix.df[t.id]), n)
		terms = append(terms, bounded{i, idf, idf * (1 + math.Max(delta, 0))})
		rest += terms[len(terms)-1].bound
	}
	slices.SortStableFunc(terms, func(x, y bounded) int { return cmp.Compare(y.bound, x.bound) })

	// phase 1: read the rarest terms whole while an unseen entry could still reach the k-th place
	theta := math.Inf(-1)
	next, read := 0, 0
	seen := 0.0 // the bounds of the terms read: no partial score exceeds it
	for ; next < len(terms); next++ {
		if rest < theta-pruneSlack(theta) {
			break
		}
		t := terms[next]
		read += len(ix.postings[q[t.at].id])
		for _, p := range ix.postings[q[t.at].id] {
			l := ix.lens[p.doc]
			if l < 0 {
				continue
			}
			if acc[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			acc[p.doc] += termScore(t.idf, float64(p.tf), float64(l), a, c, delta)
		}
		rest -= t.bound
		if seen += t.bound; seen > rest { // else the k-th best cannot exceed what is left: not worth computing
			theta = kthBest(acc, touched, k, inside)
		}
	}
	if next < len(terms) { // stopped early: is galloping through the other lists cheaper than reading them?
		left := 0
		for _, t := range terms[next:] {
			left += len(ix.postings[q[t.at].id])
		}
		inReach := 0
		for _, at := range touched {
			if float64(acc[at])+rest >= theta-pruneSlack(theta) {
				inReach++
			}
		}
		if inReach*16 > left { // no: read everything, as top does
			for _, at := range touched {
				acc[at] = 0
			}
			sc.touched = touched[:0]
			return ix.scoreAll(sc, q, k, f, docs), read + ix.postingsOf(q)
		}
	}

	// the entries still in reach (inside the filter), in entry order; the accumulator is cleared
	reach := sc.reach[:0]
	defer func() { sc.reach = reach[:0] }()
	for _, at := range touched {
		if float64(acc[at])+rest >= theta-pruneSlack(theta) && inside(at) {
			reach = append(reach, at)
		}
	}
	slices.Sort(reach)
	part := slices.Grow(sc.part[:0], len(reach))[:len(reach)] // partial scores, for pruning only
	defer func() { sc.part = part[:0] }()
	for i, at := range reach {
		part[i] = float64(acc[at])
	}
	for _, at := range touched {
		acc[at] = 0
	}

	// phase 2: the other terms only at the entries in reach, dropping those that fall out of it
	for ; next < len(terms) && len(reach) > 0; next++ {
		t := terms[next]
		eachIn(ix.postings[q[t.at].id], reach, func(i int, at int32, tf float32) {
			part[i] += float64(termScore(t.idf, float64(tf), float64(ix.lens[at]), a, c, delta))
		})
		rest -= t.bound
		theta = kthBestOf(part, k)
		keep := 0
		for i, at := range reach {
			if part[i]+rest >= theta-pruneSlack(theta) {
				reach[keep], part[keep] = at, part[i]
				keep++
			}
		}
		reach, part = reach[:keep], part[:keep]
	}

	// the entries in reach scored again in the query's term order: the exhaustive float32 sums
	score := make([]float32, len(reach))
	for _, t := range q {
		id := t.id
		if ix.df[id] == 0 {
			continue
		}
		idf := t.w * IDF(float64(ix.df[id]), n)
		eachIn(ix.postings[id], reach, func(i int, at int32, tf float32) {
			score[i] += termScore(idf, float64(tf), float64(ix.lens[at]), a, c, delta)
		})
	}
	h := make([]scored, len(reach))
	for i, at := range reach {
		h[i] = scored{at, score[i]}
	}
	slices.SortFunc(h, func(x, y scored) int {
		if x.score != y.score {
			if x.score > y.score {
				return -1
			}
			return 1
		}
		return cmp.Compare(ix.entries[x.at].id, ix.entries[y.at].id)
	})
	return h[:min(k, len(h)):min(k, len(h))], read
}

// postingsOf is how many postings q's terms hold.
func (ix *Index) postingsOf(q []qterm) int {
	n := 0
	for _, t := range q {
		n += len(ix.postings[t.id])
	}
	return n
}

// kthBest is the k-th largest accumulated score among the touched entries inside the filter, or -Inf
// when fewer than k are.
func kthBest(acc []float32, touched []int32, k int, inside func(int32) bool) float64 {
	h := make([]float64, 0, k) // a min-heap of the k best
	for _, at := range touched {
		s := float64(acc[at])
		if len(h) == k && s <= h[0] {
			continue
		}
		if !inside(at) {
			continue
		}
		h = pushBest(h, k, s)
	}
	if len(h) < k {
		return math.Inf(-1)
	}
	return h[0]
}

// kthBestOf is kthBest over a list of scores.
func kthBestOf(scores []float64, k int) float64 {
	h := make([]float64, 0, k)
	for _, s := range scores {
		if len(h) == k && s <= h[0] {
			continue
		}
		h = pushBest(h, k, s)
	}
	if len(h) < k {
		return math.Inf(-1)
	}
	return h[0]
}

// pushBest adds s to the min-heap h of at most k scores, dropping the smallest when it is full.
func pushBest(h []float64, k int, s float64) []float64 {
	if len(h) < k {
		h = append(h, s)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[p] <= h[i] {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		return h
	}
	h[0] = s
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l] < h[m] {
			m = l
		}
		if r < len(h) && h[r] < h[m] {
			m = r
		}
		if m == i {
			return h
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// eachIn calls fn with the weighted tf of each entry of reach (sorted) that ps holds, and its place in
// reach, galloping through ps.
func eachIn(ps []posting, reach []int32, fn func(i int, at int32, tf float32)) {
	lo := 0
	for i, at := range reach {
		if lo = gallop(ps, lo, at); lo == len(ps) {
			return
		}
		if ps[lo].doc == at {
			fn(i, at, ps[lo].tf)
		}
	}
}

// gallop returns the first index at or after lo whose posting's entry is at least at (len(ps) if none):
// exponential steps, then a binary search.
func gallop(ps []posting, lo int, at int32) int {
	if lo >= len(ps) || ps[lo].doc >= at {
		return lo
	}
	step := 1
	hi := lo + 1
	for hi < len(ps) && ps[hi].doc < at {
		lo = hi
		step *= 2
		hi = lo + step
	}
	hi = min(hi, len(ps))
	// ps[lo].doc < at; the answer is in (lo, hi]
	return lo + 1 + sort.Search(hi-lo-1, func(i int) bool { return ps[lo+1+i].doc >= at })
}
