package memvec

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/docmind/docmind/shared/rag"
)

// Quantised scan. With Options.Quant "int8" (or "binary", which scans bits first: binary.go) every vector
// also has an int8 code (each component divided by the vector's largest magnitude over 127, rounded) and
// that scale. A search scans the codes, a
// quarter of the float32 bytes, keeps the Rescore x k best approximate scores, and re-scores those
// candidates exactly in float32: the answer is the exact ranking of the candidates, so quantisation can
// only lose a result that fell out of the candidate list, never reorder what it returns. Whether that
// happens is measured (CheckRecall) when a snapshot is written or an old one converted; below
// MinRecall the index widens the binary candidates, then falls back to int8, then to the exact scan,
// and says so.

// Options tune the embedded index; the zero value is the exact float32 index.
type Options struct {
	Quant     string               // "binary", "int8" or "" / "none" (exact float32 scan); binary codes are centred at each snapshot or CheckRecall, so an index that is never persisted should call CheckRecall once filled
	Rescore   int                  // candidates re-scored exactly, as a multiple of k: the binary path's, and the deepest the int8 path's recall check may choose (it takes the shallowest of 2, 4 ... Rescore that holds MinRecall); 0 means 8
	MinRows   int                  // below this many rows every search is exact (the scan is cheap anyway); 0 means 20,000
	MinRecall float64              // recall@10 against exact below which the quantised scan is switched off; 0 means 0.99
	Logf      func(string, ...any) // warnings (a failed recall check); nil discards
}

const (
	defaultRescore   = 8
	defaultMinRows   = 20_000
	defaultMinRecall = 0.99
	recallQueries    = 32
)

func (o Options) withDefaults() (Options, error) {
	switch o.Quant {
	case "", "none":
		o.Quant = "none"
	case "int8", "binary":
	default:
		return o, rag.Errorf("memvec.Open", rag.KindInvalid, "quantisation %q is not one of none, int8, binary", o.Quant)
	}
	if o.Rescore < 0 || o.MinRows < 0 || o.MinRecall < 0 || o.MinRecall > 1 {
		return o, rag.Errorf("memvec.Open", rag.KindInvalid, "negative rescore or minimum rows, or a minimum recall outside 0..1")
	}
	if o.Rescore == 0 {
		o.Rescore = defaultRescore
	}
	if o.MinRows == 0 {
		o.MinRows = defaultMinRows
	}
	if o.MinRecall == 0 {
		o.MinRecall = defaultMinRecall
	}
	return o, nil
}

// quantize writes v's int8 code into out and returns its scale (v[i] ~ out[i]*scale).
func quantize(v []float32, out []int8) float32 {
	var m float32
	for _, x := range v {
		m = max(m, float32(math.Abs(float64(x))))
	}
	if m == 0 {
		clear(out)
		return 0
	}
	inv := 127 / m
	for i, x := range v {
		out[i] = int8(max(-127, min(127, math.Round(float64(x*inv)))))
	}
	return m / 127
}

// quantizeQuery widens the query's code to int16, the operand width of the kernel.
func quantizeQuery(q []float32) []int16 {
	c := make([]int8, len(q))
	quantize(q, c)
	out := make([]int16, len(q))
	for i, x := range c {
		out[i] = int16(x)
	}
	return out
}

// hasCodes reports whether rows keep int8 codes: the int8 scan reads them, the binary one re-scores
// with them.
func (ix *Index) hasCodes() bool { return ix.opt.Quant == "int8" || ix.opt.Quant == "binary" }

// scheme is the path a search takes now: the one the last recall check chose (ix.use), or the exact
// scan below MinRows. Caller holds a lock.
func (ix *Index) scheme() string {
	if len(ix.rows) < ix.opt.MinRows {
		return "none"
	}
	return ix.use
}

// useQuant reports whether a search takes a quantised path. Caller holds a lock.
func (ix *Index) useQuant() bool { return ix.scheme() != "none" }

// fanOut runs scan over GOMAXPROCS contiguous shards of the rows (one shard below minRowsPerWorker rows
// a worker, where starting goroutines would cost more than it saves) and merges the per-shard top lists.
// One query's latency drops with the cores; its CPU stays that of one scan plus a goroutine per core.
func (ix *Index) fanOut(scan func(lo, hi int) topK) []scored {
	n := len(ix.rows)
	workers := min(runtime.GOMAXPROCS(0), max(1, n/minRowsPerWorker))
	if workers == 1 {
		return scan(0, n).items
	}
	tops := make([]topK, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Go(func() { tops[w] = scan(lo, hi) })
	}
	wg.Wait()
	n = 0
	for _, t := range tops {
		n += len(t.items)
	}
	all := make([]scored, 0, n)
	for _, t := range tops {
		all = append(all, t.items...)
	}
	return all
}

// searchQuant is the quantised search: the rescore x k best approximate candidates from the codes,
// re-scored exactly. Caller holds a read lock.
func (ix *Index) searchQuant(q []float32, k int, m matcher, rescore int) []scored {
	return ix.rescoreExact(q, ix.quantCandidates(q, k*rescore, m))
}

// quantCandidates are the want best rows by their int8 codes' approximate score, in no set order.
// Caller holds a read lock.
func (ix *Index) quantCandidates(q []float32, want int, m matcher) []scored {
	q16 := quantizeQuery(q)
	var cand []scored
	if dims := ix.sparseDims(q16); dims != nil {
		cand = ix.fanOut(func(lo, hi int) topK { return ix.scanSparse(q16, dims, want, m, lo, hi) })
	} else {
		cand = ix.fanOut(func(lo, hi int) topK { return ix.scanCodes(q16, want, m, lo, hi) })
	}
	if len(cand) > want { // keep the best want approximate scores over all workers
		slices.SortFunc(cand, ix.order)
		cand = cand[:want]
	}
	return cand
}

// rescoreExact replaces cand's approximate scores by the exact float32 ones, in place. Caller holds a
// read lock.
func (ix *Index) rescoreExact(q []float32, cand []scored) []scored {
	ix.prefetch(cand)
	for i := range cand {
		cand[i].score = dot(q, ix.vecs.row(cand[i].row))
	}
	return cand
}

// prefetch asks the kernel to read, all at once, the mapped float32 rows of cand that no search has
// re-scored since the snapshot was mapped. The snapshot's writer drops those rows from the page cache
// (the quantised search touches few of them), so after a start the re-score of 400 candidates was up
// to 400 page faults read from disk one after another: at 100k rows the first thousand questions had a
// p99 of 20 ms against 7 ms once the rows were cached (docs/bench/million.md). A row's first re-score
// now waits for one round of reads issued together; a row already re-scored costs a bit test. Caller
// holds a read lock.
func (ix *Index) prefetch(cand []scored) {
	if ix.mapped == nil || len(ix.warm) == 0 {
		return
	}
	base, rowBytes, nb := float32Bytes(ix.vecs.base), ix.dim*4, min(ix.vecs.baseRows(), len(ix.warm)*64)
	for _, c := range cand {
		r := c.row
		if r >= nb {
			continue
		}
		w, bit := &ix.warm[r>>6], uint64(1)<<(uint(r)&63)
		if atomic.LoadUint64(w)&bit != 0 {
			continue
		}
		atomic.OrUint64(w, bit)
		lo := (r * rowBytes) &^ (pageSize - 1) // the map starts on a page (headerSize is one)
		willNeed(base[lo : (r+1)*rowBytes])
	}
}

// scanCodes is the int8 twin of scan: the approximate score is the code dot product times the row's
// scale (the query's own scale is one constant factor and does not change the order).
func (ix *Index) scanCodes(q16 []int16, k int, m matcher, lo, hi int) topK {
	t := newTopK(ix, k, hi-lo, true)
	scales := ix.scales[:hi]
	for i := lo; i < hi; i++ {
		if !m.match(&ix.rows[i]) {
			continue
		}
		s := float32(dotI8(q16, ix.codes.row(i))) * scales[i]
		if len(t.items) == k && s <= t.items[0].score {
			// A tie with the worst candidate is not taken either: the candidates are approximate, and
			// the ties' order (by id) cost a string comparison per row where scores tie a lot (sparse
			// lexical vectors: every row without a query word scores 0), a tenth of a retrieval.
			continue
		}
		t.offer(scored{s, i})
	}
	return t
}

// checkRecall measures recall@10 of the quantised search against the exact scan on recallQueries
// queries, each the normalised midpoint of two stored vectors of one tenant (a query lands between
// documents, as real ones do; a stored vector alone would find itself first for free), and chooses the
// path searches take (ix.use). Binary codes start at defaultBinFactor candidates per result and double
// while recall@10 is below MinRecall, up to maxBinFactor; then int8 is measured, and below MinRecall
// too the search is exact. Every widening and fallback is logged. Caller holds the write lock.
func (ix *Index) checkRecall() float64 {
	n := len(ix.rows)
	if ix.opt.Quant == "none" || n < ix.opt.MinRows {
		return math.NaN()
	}
	type probe struct {
		q     []float32
		m     matcher
		exact []scored
	}
	var probes []probe
	for j := range recallQueries {
		a := int(uint64(j*2+1) * 0x9E3779B97F4A7C15 % uint64(n))
		b := int(uint64(j*2+2) * 0xC2B2AE3D27D4EB4F % uint64(n))
		if ix.rows[a].tenant != ix.rows[b].tenant {
			b = a
		}
		mid := make([]float32, ix.dim)
		for d, x := range ix.vecs.row(a) {
			mid[d] = x + ix.vecs.row(b)[d]
		}
		q, ok := normalize(mid)
		if !ok {
			continue
		}
		m := matcher{tenant: ix.rows[a].tenant}
		probes = append(probes, probe{q, m, ix.best(ix.searchExact(q, 10, m), 10)})
	}
	measure := func(search func(i int, p probe) []scored) float64 {
		var found, total int
		for i, p := range probes {
			approx := ix.best(search(i, p), 10)
			for _, e := range p.exact {
				total++
				if slices.ContainsFunc(approx, func(s scored) bool { return s.row == e.row }) {
					found++
				}
			}
		}
		if total == 0 {
			return 1
		}
		return float64(found) / float64(total)
	}
	logf := func(format string, args ...any) {
		if ix.opt.Logf != nil {
			ix.opt.Logf(format, args...)
		}
	}
	if ix.opt.Quant == "binary" {
		var r float64
		for f := defaultBinFactor; f <= maxBinFactor; f *= 2 {
			r = measure(func(_ int, p probe) []scored { return ix.searchBinary(p.q, 10, p.m, f) })
			if r >= ix.opt.MinRecall {
				if f > defaultBinFactor {
					logf("memvec: binary recall@10 at %d rows was below %.2f with %d candidates per result: widened to %d (recall@10 %.3f)", n, ix.opt.MinRecall, defaultBinFactor, f, r)
				}
				ix.use, ix.binFactor, ix.recall, ix.rescore = "binary", f, r, ix.opt.Rescore
				return r
			}
		}
		logf("memvec: binary recall@10 %.3f is below %.2f at %d rows even with %d candidates per result: falling back to the int8 scan", r, ix.opt.MinRecall, n, maxBinFactor)
	}
	// int8: the shallowest re-score depth that holds. One scan per probe gives every depth's candidates
	// (a deeper list only adds rows to a shallower one's).
	cands := make([][]scored, len(probes))
	for i, p := range probes {
		cands[i] = ix.quantCandidates(p.q, 10*ix.opt.Rescore, p.m)
		slices.SortFunc(cands[i], ix.order)
	}
	var r float64
	for _, f := range rescoreDepths(ix.opt.Rescore) {
		r = measure(func(i int, p probe) []scored {
			return ix.rescoreExact(p.q, slices.Clone(cands[i][:min(len(cands[i]), 10*f)]))
		})
		ix.rescore = f
		if r >= ix.opt.MinRecall {
			break
		}
	}
	ix.recall = r
	if r >= ix.opt.MinRecall {
		ix.use = "int8"
		if ix.opt.Quant == "binary" {
			logf("memvec: int8 recall@10 %.3f at %d rows: searching with int8 codes", r, n)
		}
		return r
	}
	ix.use = "none"
	logf("memvec: int8 recall@10 %.3f is below %.2f at %d rows: searching exactly in float32 (raise DOCMIND_VECTOR_RESCORE or set DOCMIND_VECTOR_QUANT=none)", r, ix.opt.MinRecall, n)
	return r
}

// depth is the float32 re-score depth of the path searches take now. Caller holds a lock.
func (ix *Index) depth() int {
	if ix.scheme() == "int8" {
		return ix.rescore
	}
	return ix.opt.Rescore
}

// rescoreDepths are the int8 re-score depths the recall check tries, shallowest first: 2, 4, 8 ... up
// to the setting, which is always tried last. Never below twice k: at k alone the re-score could only
// reorder the codes' own list, and 32 probes passing at 0.99 would be thin evidence for that.
func rescoreDepths(most int) []int {
	var ds []int
	for f := 2; f < most; f *= 2 {
		ds = append(ds, f)
	}
	return append(ds, most)
}

// best sorts the workers' merged candidates and keeps the first k.
func (ix *Index) best(s []scored, k int) []scored {
	slices.SortFunc(s, ix.order)
	return s[:min(k, len(s))]
}

// QuantStatus describes the quantised path for status pages and benchmarks.
type QuantStatus struct {
	Mode      string  // the setting: none, int8 or binary
	Use       string  // the path searches of this index size take now: none, int8 or binary
	Active    bool    // Use is a quantised path
	Recall    float64 // recall@10 of the last check, for the path it chose (NaN: not checked yet)
	BinFactor int     // binary candidates per result (Use binary)
	Rescore   int     // candidates re-scored in float32, a multiple of k: the depth the check chose (Use int8), else the setting
}

func (s QuantStatus) String() string {
	if s.Use == "binary" {
		return fmt.Sprintf("%s (active %t, using binary at %dx candidates, recall@10 %.3f)", s.Mode, s.Active, s.BinFactor, s.Recall)
	}
	return fmt.Sprintf("%s (active %t, using %s, re-scoring %dx, recall@10 %.3f)", s.Mode, s.Active, s.Use, s.Rescore, s.Recall)
}

// Quant reports the quantisation mode, whether it is in use and the last measured recall.
func (ix *Index) Quant() QuantStatus {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return QuantStatus{Mode: ix.opt.Quant, Use: ix.scheme(), Active: ix.useQuant(), Recall: ix.recall, BinFactor: ix.binFactor, Rescore: ix.depth()}
}

// CheckRecall runs the recall check now (it also runs on every snapshot, binary codes recentred first)
// and returns recall@10 of the path it chose; NaN when the index is exact or smaller than MinRows.
func (ix *Index) CheckRecall() float64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.opt.Quant == "binary" {
		ix.recentre()
	}
	return ix.checkRecall()
}

// putCode writes row at's code and scale (at is an existing row or the one just appended). Caller holds
// the write lock.
func (ix *Index) putCode(at int, v []float32) {
	if at == ix.codes.n {
		ix.codes.push(make([]int8, ix.dim))
		ix.scales = append(ix.scales, 0)
	}
	ix.scales[at] = quantize(v, ix.codes.row(at))
}

// buildCodes quantises every row that has no code yet (an index opened from a snapshot without codes, or
// switched to int8 or binary); binary codes are recentred when any row lacks one. Caller holds the write
// lock.
func (ix *Index) buildCodes() {
	for i := ix.codes.n; i < len(ix.rows); i++ {
		ix.putCode(i, ix.vecs.row(i))
	}
	if ix.opt.Quant == "binary" && ix.bits.n < len(ix.rows) {
		ix.recentre()
	}
}
