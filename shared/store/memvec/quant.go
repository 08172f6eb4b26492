package memvec

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/docmind/docmind/shared/rag"
)

// Quantised scan. With Options.Quant "int8" every vector also has an int8 code (each component divided
// by the vector's largest magnitude over 127, rounded) and that scale. A search scans the codes, a
// quarter of the float32 bytes, keeps the Rescore x k best approximate scores, and re-scores those
// candidates exactly in float32: the answer is the exact ranking of the candidates, so quantisation can
// only lose a result that fell out of the candidate list, never reorder what it returns. Whether that
// happens is measured (CheckRecall) when a snapshot is written or an old one converted; below
// MinRecall the index falls back to the exact scan and says so.

// Options tune the embedded index; the zero value is the exact float32 index.
type Options struct {
	Quant     string               // "int8" or "" / "none" (exact float32 scan)
	Rescore   int                  // candidates re-scored exactly, as a multiple of k; 0 means 8
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
	case "int8":
	default:
		return o, rag.Errorf("memvec.Open", rag.KindInvalid, "quantisation %q is not one of none, int8", o.Quant)
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

// useQuant reports whether a search over n rows takes the quantised path. Caller holds a lock.
func (ix *Index) useQuant() bool {
	return ix.opt.Quant == "int8" && ix.quantOK && len(ix.rows) >= ix.opt.MinRows
}

// searchQuant is the quantised search: approximate top candidates from the codes, re-scored exactly.
// Caller holds a read lock.
func (ix *Index) searchQuant(q []float32, k int, m matcher) []scored {
	n := len(ix.rows)
	want := k * ix.opt.Rescore
	q16 := quantizeQuery(q)
	workers := min(runtime.GOMAXPROCS(0), max(1, n/minRowsPerWorker))
	tops := make([]topK, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Go(func() { tops[w] = ix.scanCodes(q16, want, m, lo, hi) })
	}
	wg.Wait()
	var cand []scored
	for _, t := range tops {
		cand = append(cand, t.items...)
	}
	if len(cand) > want { // keep the best want approximate scores over all workers
		slices.SortFunc(cand, ix.order)
		cand = cand[:want]
	}
	for i := range cand {
		cand[i].score = dot(q, ix.vecs.row(cand[i].row))
	}
	return cand
}

// scanCodes is the int8 twin of scan: the approximate score is the code dot product times the row's
// scale (the query's own scale is one constant factor and does not change the order).
func (ix *Index) scanCodes(q16 []int16, k int, m matcher, lo, hi int) topK {
	t := topK{ix: ix, k: k, rowTies: true}
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
// documents, as real ones do; a stored vector alone would find itself first for free). It switches the
// quantised path off below MinRecall. Caller holds the write lock.
func (ix *Index) checkRecall() float64 {
	n := len(ix.rows)
	if ix.opt.Quant != "int8" || n < ix.opt.MinRows {
		return math.NaN()
	}
	var found, total int
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
		exact, approx := ix.best(ix.searchExact(q, 10, m), 10), ix.best(ix.searchQuant(q, 10, m), 10)
		for _, e := range exact {
			total++
			if slices.ContainsFunc(approx, func(s scored) bool { return s.row == e.row }) {
				found++
			}
		}
	}
	r := 1.0
	if total > 0 {
		r = float64(found) / float64(total)
	}
	ix.recall = r
	ix.quantOK = r >= ix.opt.MinRecall
	if !ix.quantOK && ix.opt.Logf != nil {
		ix.opt.Logf("memvec: int8 recall@10 %.3f is below %.2f at %d rows: searching exactly in float32 (raise DOCMIND_VECTOR_RESCORE or set DOCMIND_VECTOR_QUANT=none)", r, ix.opt.MinRecall, n)
	}
	return r
}

// best sorts the workers' merged candidates and keeps the first k.
func (ix *Index) best(s []scored, k int) []scored {
	slices.SortFunc(s, ix.order)
	return s[:min(k, len(s))]
}

// QuantStatus describes the quantised path for status pages and benchmarks.
type QuantStatus struct {
	Mode   string  // none or int8
	Active bool    // searches of this index size take the quantised path now
	Recall float64 // recall@10 of the last check (NaN: not checked yet)
}

func (s QuantStatus) String() string {
	return fmt.Sprintf("%s (active %t, recall@10 %.3f)", s.Mode, s.Active, s.Recall)
}

// Quant reports the quantisation mode, whether it is in use and the last measured recall.
func (ix *Index) Quant() QuantStatus {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return QuantStatus{Mode: ix.opt.Quant, Active: ix.useQuant(), Recall: ix.recall}
}

// CheckRecall runs the recall check now (it also runs on every snapshot) and returns recall@10; NaN when
// the index is exact or smaller than MinRows.
func (ix *Index) CheckRecall() float64 {
	ix.mu.Lock()
	defer ix.mu.Unlock()
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
// switched to int8). Caller holds the write lock.
func (ix *Index) buildCodes() {
	for i := ix.codes.n; i < len(ix.rows); i++ {
		ix.putCode(i, ix.vecs.row(i))
	}
}
