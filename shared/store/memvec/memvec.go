// Package memvec is the embedded vector index: a brute-force cosine search over float32 rows, persisted to
// one file in the data directory that is memory-mapped on open (start-up reads the metadata, not the
// vectors). Exact search needs no tuning and gives the recall ceiling; a flat scan of 100,000 x 1,024
// vectors runs near memory bandwidth on two cores. With int8 quantisation (Options.Quant) the scan reads
// one byte per dimension and re-scores its best candidates exactly (quant.go); with binary codes it reads
// one bit per dimension first and re-scores with the int8 codes, then exactly (binary.go).
package memvec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

var _ store.VectorIndex = (*Index)(nil)

// row is one record's metadata; strings are interned so filters compare integers during the scan.
type row struct {
	id     string
	chunk  string
	tenant int32
	kb     int32
	doc    int32
	tags   []int32
}

// Index is an exact cosine index. It is safe for concurrent use: searches share a read lock, writes take
// the write lock.
type Index struct {
	path string // snapshot file; "" keeps the index in memory only
	dim  int

	opt Options

	mu        sync.RWMutex
	vecs      seg[float32] // row i's L2-normalised vector at vecs.row(i)
	codes     seg[int8]    // its int8 code (Quant "int8" or "binary")
	scales    []float32    // and the code's scale
	bits      seg[uint64]  // its binary code against centre (Quant "binary": binary.go)
	bscales   []float32    // and that code's scale
	centre    []float32    // the mean the binary codes are taken against; nil is the origin
	use       string       // the path the last recall check chose (Quant until one runs): none, int8, binary
	binFactor int          // binary candidates per result that passed the check
	rescore   int          // int8 path: candidates re-scored, a multiple of k, that passed the check (opt.Rescore until one runs)
	recall    float64      // recall@10 of the last check; NaN before one
	sp        *postings    // the int8 codes by dimension when they are sparse (sparse.go); nil otherwise
	spDenseAt int          // rows when the codes were last found dense (sampled again at twice that)
	mapped    []byte       // the memory-mapped snapshot backing vecs.base and codes.base; nil when none
	warm      []uint64     // bit i: mapped float32 row i was re-scored since the map (prefetch); atomic
	rows      []row
	byID      map[string]int // "tenant\x00id" -> row
	names     interner

	// persistence (path != ""): writes since the last Flush, appended to the log on Flush
	flushMu  sync.Mutex // one Flush (or Close) at a time; taken before mu
	lock     *os.File
	pending  []byte
	logBytes int64 // size of the log file
	snapRows int   // rows in the snapshot file
}

// New returns an empty in-memory exact index of the given dimension.
func New(dim int) *Index {
	ix, _ := NewWith(dim, Options{})
	return ix
}

// NewWith returns an empty in-memory index with options (quantisation).
func NewWith(dim int, o Options) (*Index, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Index{dim: dim, opt: o, byID: map[string]int{}, names: newInterner(), use: o.Quant, binFactor: defaultBinFactor, rescore: o.Rescore,
		recall: math.NaN(), vecs: seg[float32]{w: dim}, codes: seg[int8]{w: dim}, bits: seg[uint64]{w: words(dim)}}, nil
}

// Open loads the exact index persisted at path; see OpenWith.
func Open(path string, dim int) (*Index, error) { return OpenWith(path, dim, Options{}) }

// OpenWith loads the index persisted at path (a missing file gives an empty index) and persists to it on
// Flush and Close. A file of another dimension is refused: mixing embedding models corrupts every score.
func OpenWith(path string, dim int, o Options) (*Index, error) {
	if dim < 1 {
		return nil, rag.Errorf("memvec.Open", rag.KindInvalid, "dimension must be positive, got %d", dim)
	}
	ix, err := NewWith(dim, o)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, rag.E("memvec.Open", rag.KindUnavailable, err)
	}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	ix.path, ix.lock = path, lock
	if err := ix.load(); err != nil {
		if lock != nil {
			lock.Close()
		}
		return nil, err
	}
	ix.maintainSparse(false) // rows replayed from the log, or a snapshot without postings built yet
	return ix, nil
}

// Dim is the vector dimension.
func (ix *Index) Dim() int { return ix.dim }

func key(tenant, id string) string { return tenant + "\x00" + id }

// Upsert implements store.VectorIndex.
func (ix *Index) Upsert(ctx context.Context, recs []rag.VectorRecord) error {
	const op = "memvec.Upsert"
	if err := ctx.Err(); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	normed := make([][]float32, len(recs))
	block := make([]float32, len(recs)*ix.dim) // one allocation for the batch: put copies each row
	for i, r := range recs {
		if err := r.Validate(ix.dim); err != nil {
			return rag.E(op, rag.KindInvalid, fmt.Errorf("record %d: %w", i, err))
		}
		normed[i] = block[i*ix.dim : (i+1)*ix.dim : (i+1)*ix.dim]
		if !normalizeInto(normed[i], r.Vector) {
			return rag.Errorf(op, rag.KindInvalid, "record %d (%s): zero or non-finite vector", i, r.ID)
		}
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.path != "" {
		ix.pending = slices.Grow(ix.pending, len(recs)*(ix.dim*4+256)) // the records below, without regrowing
	}
	for i, r := range recs {
		m := metaRow{ID: r.ID, Chunk: r.ChunkID, Tenant: r.Tenant, KB: r.KBID, Doc: r.DocumentID, Tags: r.Tags}
		ix.put(m, normed[i])
		if ix.path != "" {
			ix.pending = appendUpsert(ix.pending, m, normed[i])
		}
	}
	ix.maintainSparse(false)
	return nil
}

// put inserts or replaces one row whose vector is already normalised. Caller holds the write lock.
func (ix *Index) put(m metaRow, v []float32) {
	rw := row{id: m.ID, chunk: m.Chunk, tenant: ix.names.id(m.Tenant), kb: ix.names.id(m.KB), doc: ix.names.id(m.Doc)}
	for _, t := range m.Tags {
		rw.tags = append(rw.tags, ix.names.id("tag\x00"+t))
	}
	k := key(m.Tenant, m.ID)
	at, ok := ix.byID[k]
	if ok {
		ix.rows[at] = rw
		copy(ix.vecs.row(at), v)
	} else {
		at = len(ix.rows)
		ix.byID[k] = at
		ix.rows = append(ix.rows, rw)
		ix.vecs.push(v)
	}
	if ix.hasCodes() {
		ix.putCode(at, v)
	}
	if ix.opt.Quant == "binary" {
		ix.putBits(at, v)
	}
	if ix.sp != nil {
		ix.sp.touch(at)
	}
}

// normalize returns v scaled to unit length, or false for a zero or non-finite vector.
func normalize(v []float32) ([]float32, bool) {
	out := make([]float32, len(v))
	if !normalizeInto(out, v) {
		return nil, false
	}
	return out, true
}

// normalizeInto writes v scaled to unit length into out (len(v) long), or returns false for a zero or
// non-finite vector.
func normalizeInto(out, v []float32) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return false
	}
	inv := 1 / math.Sqrt(s)
	for i, x := range v {
		out[i] = float32(float64(x) * inv)
	}
	return true
}

// Delete implements store.VectorIndex.
func (ix *Index) Delete(ctx context.Context, tenant string, ids []string) error {
	const op = "memvec.Delete"
	if err := errors.Join(rag.ValidateID("tenant", tenant), rag.ValidateIDs("id", ids)); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, id := range ids {
		if at, ok := ix.byID[key(tenant, id)]; ok {
			ix.removeAt(at)
		}
	}
	ix.maintainSparse(false)
	return nil
}

// DeleteDocument implements store.VectorIndex.
func (ix *Index) DeleteDocument(ctx context.Context, tenant, kbID, documentID string) error {
	const op = "memvec.DeleteDocument"
	f := rag.Filter{Tenant: tenant, KBIDs: []string{kbID}, DocumentIDs: []string{documentID}}
	if err := f.Validate(); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	m, ok, err := ix.matcher(f)
	if err != nil || !ok {
		return err
	}
	for i := len(ix.rows) - 1; i >= 0; i-- {
		if m.match(&ix.rows[i]) {
			ix.removeAt(i)
		}
	}
	ix.maintainSparse(false)
	return nil
}

// removeAt swaps the last row into position at, keeping storage contiguous. Caller holds the write lock.
func (ix *Index) removeAt(at int) {
	last := len(ix.rows) - 1
	tenant := ix.names.name(ix.rows[at].tenant)
	if ix.path != "" {
		ix.pending = appendDelete(ix.pending, tenant, ix.rows[at].id)
	}
	delete(ix.byID, key(tenant, ix.rows[at].id))
	if ix.sp != nil {
		ix.sp.touch(at) // the last row moves here (or the row is gone)
	}
	if at != last {
		ix.rows[at] = ix.rows[last]
		copy(ix.vecs.row(at), ix.vecs.row(last))
		if ix.codes.n > last {
			copy(ix.codes.row(at), ix.codes.row(last))
			ix.scales[at] = ix.scales[last]
		}
		if ix.bits.n > last {
			copy(ix.bits.row(at), ix.bits.row(last))
		}
		ix.byID[key(ix.names.name(ix.rows[at].tenant), ix.rows[at].id)] = at
	}
	ix.rows = ix.rows[:last]
	ix.vecs.truncate(last)
	if ix.codes.n > last {
		ix.codes.truncate(last)
		ix.scales = ix.scales[:last]
	}
	if ix.bits.n > last {
		ix.bits.truncate(last)
	}
}

// Count implements store.VectorIndex; the embedded index is always strongly consistent.
func (ix *Index) Count(ctx context.Context, f rag.Filter) (int, error) {
	const op = "memvec.Count"
	if err := validate(f); err != nil {
		return 0, rag.E(op, rag.KindInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, rag.E(op, rag.KindUnavailable, err)
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m, ok, err := ix.matcher(f)
	if err != nil {
		return 0, rag.E(op, rag.KindInvalid, err)
	}
	if !ok {
		return 0, nil
	}
	n := 0
	for i := range ix.rows {
		if m.match(&ix.rows[i]) {
			n++
		}
	}
	return n, nil
}

// minRowsPerWorker keeps tiny scans on one goroutine, where a fan-out would cost more than it saves.
const minRowsPerWorker = 4096

// Search implements store.VectorIndex: the quantised scan when it is on and the index is large enough,
// else the exact one.
func (ix *Index) Search(ctx context.Context, query []float32, k int, f rag.Filter) ([]rag.Hit, error) {
	return ix.search(ctx, query, k, f, false)
}

// SearchExact is Search always scanning the float32 rows: the reference the quantised scan is measured
// against.
func (ix *Index) SearchExact(ctx context.Context, query []float32, k int, f rag.Filter) ([]rag.Hit, error) {
	return ix.search(ctx, query, k, f, true)
}

func (ix *Index) search(ctx context.Context, query []float32, k int, f rag.Filter, exact bool) ([]rag.Hit, error) {
	const op = "memvec.Search"
	if err := validate(f); err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	if k < 1 {
		return nil, rag.Errorf(op, rag.KindInvalid, "k must be positive, got %d", k)
	}
	if len(query) != ix.dim {
		return nil, rag.Errorf(op, rag.KindInvalid, "query has dimension %d, index has %d", len(query), ix.dim)
	}
	q, ok := normalize(query)
	if !ok {
		return nil, rag.Errorf(op, rag.KindInvalid, "zero or non-finite query vector")
	}
	if err := ctx.Err(); err != nil {
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	m, ok, err := ix.matcher(f)
	if err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	if !ok {
		return []rag.Hit{}, nil
	}
	var all []scored
	switch scheme := ix.scheme(); {
	case exact || scheme == "none":
		all = ix.searchExact(q, k, m)
	case scheme == "binary" && (ix.sp == nil || ix.sparseDims(quantizeQuery(q)) == nil): // no query code for a dense index
		all = ix.searchBinary(q, k, m, ix.binFactor)
	default:
		all = ix.searchQuant(q, k, m, ix.rescore)
	}
	slices.SortFunc(all, func(a, b scored) int { return ix.order(a, b) })
	if len(all) > k {
		all = all[:k]
	}
	hits := make([]rag.Hit, len(all))
	for i, s := range all {
		r := &ix.rows[s.row]
		hits[i] = rag.Hit{ID: r.id, ChunkID: r.chunk, DocumentID: ix.names.name(r.doc), KBID: ix.names.name(r.kb), Score: s.score}
	}
	return hits, nil
}

// searchExact fans the float32 scan out over the cores. Caller holds a read lock.
func (ix *Index) searchExact(q []float32, k int, m matcher) []scored {
	return ix.fanOut(func(lo, hi int) topK { return ix.scan(q, k, m, lo, hi) })
}

type scored struct {
	score float32
	row   int
}

// order sorts best first: higher score, then smaller id, so equal scores come back in a stable order.
func (ix *Index) order(a, b scored) int {
	if a.score != b.score {
		return cmp.Compare(b.score, a.score)
	}
	return cmp.Compare(ix.rows[a.row].id, ix.rows[b.row].id)
}

func (ix *Index) scan(q []float32, k int, m matcher, lo, hi int) topK {
	t := newTopK(ix, k, hi-lo, false)
	for i := lo; i < hi; i++ {
		if !m.match(&ix.rows[i]) {
			continue
		}
		s := dot(q, ix.vecs.row(i))
		if len(t.items) == k && s < t.items[0].score {
			continue // cheaper than a heap push for the vast majority of rows
		}
		t.offer(scored{s, i})
	}
	return t
}

// topK keeps the k best items in a min-heap whose root is the worst kept item.
type topK struct {
	ix    *Index
	k     int
	items []scored
	// rowTies orders equal scores by row instead of by id: the int8 scan's candidates are approximate
	// (re-scored and then ordered by id), and comparing ids cost a string comparison per heap step among
	// tied scores, which the offline embedder's sparse vectors give often.
	rowTies bool
}

// newTopK is a topK for a scan of rows rows, its heap allocated once at the size it can reach: grown
// by append it was a tenth of a retrieval's allocations at 100k chunks (docs/bench/million.md).
func newTopK(ix *Index, k, rows int, rowTies bool) topK {
	return topK{ix: ix, k: k, rowTies: rowTies, items: make([]scored, 0, max(0, min(k, rows)))}
}

// worse reports whether a ranks below b.
func (t *topK) worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	if t.rowTies {
		return a.row > b.row
	}
	return t.ix.order(a, b) > 0
}

// offer keeps s if it ranks among the k best so far. The heap is written out rather than driven through
// container/heap: its interface boxed every pushed item (an allocation) and called Less through an
// interface, a tenth of a retrieval's CPU at 100k chunks, where lexical vectors tie often.
func (t *topK) offer(s scored) {
	h := t.items
	if len(h) < t.k {
		h = append(h, s)
		for i := len(h) - 1; i > 0; { // sift up: a worse item moves towards the root
			p := (i - 1) / 2
			if !t.worse(h[i], h[p]) {
				break
			}
			h[i], h[p] = h[p], h[i]
			i = p
		}
		t.items = h
		return
	}
	if !t.worse(h[0], s) {
		return
	}
	h[0] = s
	for i := 0; ; { // sift down
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && t.worse(h[l], h[m]) {
			m = l
		}
		if r < len(h) && t.worse(h[r], h[m]) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// matcher is a filter translated to interned ids.
type matcher struct {
	tenant int32
	kbs    []int32
	docs   docSet
	tags   []int32
}

func (m matcher) match(r *row) bool {
	if r.tenant != m.tenant {
		return false
	}
	if len(m.kbs) > 0 && !slices.Contains(m.kbs, r.kb) {
		return false
	}
	if m.docs.any() && !m.docs.has(r.doc) {
		return false
	}
	if len(m.tags) > 0 {
		for _, t := range r.tags {
			if slices.Contains(m.tags, t) {
				return true
			}
		}
		return false
	}
	return true
}

// matcher translates f; ok is false when f can match nothing (an unknown tenant, or only unknown values
// in a list). A long document restriction (a metadata filter's passing documents) comes from the
// interner's DocBits cache, validated there once per distinct restriction; Invalid for a malformed id.
// Caller holds a lock.
func (ix *Index) matcher(f rag.Filter) (matcher, bool, error) {
	var m matcher
	var ok bool
	if m.tenant, ok = ix.names.lookup(f.Tenant); !ok {
		return m, false, nil
	}
	known := func(names []string, prefix string) ([]int32, bool) {
		if len(names) == 0 {
			return nil, true
		}
		var out []int32
		for _, n := range names {
			if id, ok := ix.names.lookup(prefix + n); ok {
				out = append(out, id)
			}
		}
		return out, len(out) > 0
	}
	if m.kbs, ok = known(f.KBIDs, ""); !ok {
		return m, false, nil
	}
	if len(f.DocumentIDs) >= rag.MinDocBits {
		// a metadata filter's answer is read from its bitset over the shared document numbering
		names := ix.names.names
		bits, any, err := ix.names.docs.BitsOf(f.DocumentIDs, len(names), ix.names.lookup, func(from int, yield func(string, int32)) {
			for n := from; n < len(names); n++ {
				yield(names[n], int32(n))
			}
		})
		if err != nil || !any {
			return m, false, err
		}
		m.docs = docSet{bits: bits}
	} else {
		docs, ok := known(f.DocumentIDs, "")
		if !ok {
			return m, false, nil
		}
		m.docs = docSet{few: docs}
	}
	if m.tags, ok = known(f.Tags, "tag\x00"); !ok {
		return m, false, nil
	}
	return m, true, nil
}

// validate checks f; a long document restriction is checked when it is translated (matcher), once per
// distinct restriction rather than on every query.
func validate(f rag.Filter) error {
	if len(f.DocumentIDs) >= rag.MinDocBits {
		return f.ValidateScope()
	}
	return f.Validate()
}

// interner maps strings to small integers for the lifetime of the index (ids are never recycled; a few
// bytes per distinct kb, document or tag).
type interner struct {
	ids   map[string]int32
	names []string
	// docs caches document restrictions as bitsets over these numbers; it lives and dies with the
	// numbering (a reload renumbers)
	docs *rag.DocBits
}

func newInterner() interner { return interner{ids: map[string]int32{}, docs: rag.NewDocBits()} }

func (in *interner) lookup(s string) (int32, bool) {
	id, ok := in.ids[s]
	return id, ok
}

func (in *interner) id(s string) int32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	id := int32(len(in.names))
	in.ids[s] = id
	in.names = append(in.names, s)
	return id
}

func (in *interner) name(id int32) string { return in.names[id] }
