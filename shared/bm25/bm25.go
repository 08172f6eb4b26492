// Package bm25 is keyword retrieval over child chunks: Okapi BM25 with Lucene's idf and length
// normalisation, terms from text.Analyze, and the heading path weighted as a title field (BM25F-style:
// title term frequencies and length count TitleWeight times). Index is the embedded adapter, kept in
// memory, built from the SQL chunk table or read from its snapshot file (snapshot.go); the MySQL adapter scores FULLTEXT candidates with the same
// Scorer, so both rank alike.
package bm25

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/text"
)

// Params are the BM25 parameters.
type Params struct {
	K1          float64 // term frequency saturation (default 0.9, Anserini's BEIR setting)
	B           float64 // length normalisation (default 0.4)
	TitleWeight float64 // weight of heading-path terms (default 2)
	// Delta is BM25+'s lower bound (Lv and Zhai): every chunk holding a term gets at least idf * Delta
	// for it, whatever its length (0, plain BM25, is the default: docs/eval/retrieval.md)
	Delta float64
	// RM3 is pseudo-relevance feedback for queries not written in CJK, RM3CJK for those that are
	// (IsCJKQuery); the zero value is off.
	RM3, RM3CJK RM3
	// ContextWeight is the weight of the parent chunk's text around the child (0 ignores it): a
	// child of a long section still matches terms its neighbours carry.
	ContextWeight float64
}

// DefaultParams are the defaults (measured on the train splits: docs/eval/retrieval.md).
func DefaultParams() Params { return Params{K1: 0.9, B: 0.4, TitleWeight: 2, ContextWeight: 0.3} }

// Doc is one child chunk to index.
type Doc struct {
	ID         string // chunk id
	Tenant     string
	KBID       string
	DocumentID string
	Content    string // the chunk text as stored: heading path lines, a blank line, the body
	Context    string // the parent chunk's text (optional; weighted by ContextWeight)
}

// SplitHeading separates the heading-path lines a chunk starts with from its body.
func SplitHeading(content string) (title, body string) {
	rest := content
	var heads []string
	for {
		line, after, found := strings.Cut(rest, "\n")
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "#") {
			break
		}
		heads = append(heads, strings.TrimSpace(strings.TrimLeft(t, "#")))
		if !found {
			rest = ""
			break
		}
		rest = after
	}
	return strings.Join(heads, " "), rest
}

type posting struct {
	doc int32
	tf  float32 // weighted: body tf + TitleWeight * title tf
}

type entry struct {
	id, tenant, kb, doc string
	docN                int32 // doc's number in Index.docNums
	length              float32
	terms               termList
	dead                bool
}

// Index is the in-memory BM25 index. Safe for concurrent use.
type Index struct {
	p Params

	mu       sync.RWMutex
	dict     map[string]int32
	postings [][]posting
	df       []int32
	entries  []entry
	lens     []float32        // entries[i].length, or -1 when dead: the scoring loop's only per-entry read
	byID     map[string]int32 // "tenant\x00chunk id" -> entry
	// docNums numbers document ids (never recycled: a few bytes per document ever indexed), so that a
	// search restricted to thousands of documents (a metadata filter) tests a bit per candidate
	// instead of hashing its document id
	docNums map[string]int32
	// restrictions caches long document restrictions as bitsets over docNums
	restrictions *rag.DocBits
	// byDoc lists each document's entries by its number (dead ones too, until the next compaction), so
	// that replacing a document touches its own chunks: a scan of every entry per document made loading
	// and ingesting n chunks quadratic (minutes at a million chunks; docs/bench/million.md)
	byDoc    [][]int32
	live     int
	totalLen float64
	dead     int
	pool     sync.Pool
	// version counts changes; saved is the version the snapshot file holds (snapshot.go)
	version, saved atomic.Uint64
	pending        atomic.Int64     // Pending
	known          map[string]known // by document id (snapshot.go)
}

// New returns an empty index.
func New(p Params) *Index {
	if p.K1 <= 0 {
		p.K1 = 0.9
	}
	if p.B < 0 || p.B > 1 {
		p.B = 0.4
	}
	if p.TitleWeight <= 0 {
		p.TitleWeight = 1
	}
	return &Index{p: p, dict: map[string]int32{}, byID: map[string]int32{}, docNums: map[string]int32{}, restrictions: rag.NewDocBits()}
}

// Fields are a chunk's analyzed terms per BM25 field.
type Fields struct {
	Body, Title, Context []string
}

// Analyze splits a chunk into its fields and analyzes each (context is the parent's text; its
// heading lines are the child's title again and are dropped).
func Analyze(content, context string) Fields {
	title, body := SplitHeading(content)
	f := Fields{Body: text.Analyze(body), Title: text.Analyze(title)}
	if context != "" {
		_, cbody := SplitHeading(context)
		f.Context = text.Analyze(cbody)
	}
	return f
}

// Weighted returns the weighted term frequencies and length of the fields under p.
func (f Fields) Weighted(p Params) (map[string]float32, float32) {
	tf := map[string]float32{}
	var n float32
	add := func(terms []string, w float32) {
		if w <= 0 {
			return
		}
		for _, t := range terms {
			tf[t] += w
			n += w
		}
	}
	add(f.Body, 1)
	add(f.Title, float32(p.TitleWeight))
	add(f.Context, float32(p.ContextWeight))
	return tf, n
}

// IDF is Lucene's BM25 idf: ln(1 + (N - df + 0.5) / (df + 0.5)).
func IDF(df, n float64) float64 { return math.Log(1 + (n-df+0.5)/(df+0.5)) }

// Score is one term's BM25 contribution, idf * tf / (tf + k1 * (1 - b + b * len / avglen)), written as
// the embedded index computes it so that both adapters produce the same float32 sums. Callers add the
// float32 of each term's score.
func Score(p Params, tf, df, n, length, avg float64) float32 {
	return termScore(IDF(df, n), tf, length, p.K1*(1-p.B), p.K1*p.B/avg, p.Delta)
}

// termScore is Score with the idf and the length norm's terms (norm = a + c * length) worked out: the
// one expression every scoring loop uses, so that each computes the same float32.
func termScore(idf, tf, length, a, c, delta float64) float32 {
	s := idf * tf / (tf + a + c*length)
	if delta != 0 {
		s += idf * delta
	}
	return float32(s)
}

// weighted is one chunk's analysis: its distinct terms (numbered by the analyzer that read it) in
// order of first occurrence, each term's weighted frequency, and the weighted length.
type weighted struct {
	terms  []int32
	tf     []float32
	length float32
}

// analyzer turns chunks into weighted terms in one pass per field: each term, numbered by the text
// analyzer, goes straight into the chunk's frequency list, found there through slices indexed by
// the term's number (no per-chunk map, no term strings). Sums are in Fields.Weighted's order (body,
// title, context), so the float32 frequencies and lengths are those of Analyze + Weighted.
type analyzer struct {
	p    Params
	a    *text.Analyzer
	seen []int32 // term number -> serial of the last chunk that had it
	pos  []int32 // term number -> its index in that chunk's list
	n    int32   // serial of the current chunk
	cur  *weighted
	w    float32
	// global maps the analyzer's term numbers to the index's term ids (-1: not looked up yet); filled
	// under the index lock, once per distinct term of the batch.
	global []int32
}

func newAnalyzer(p Params) *analyzer { return &analyzer{p: p, a: text.NewAnalyzer()} }

func (z *analyzer) add(_ string, id int32) {
	for int(id) >= len(z.seen) {
		z.seen = append(z.seen, 0)
		z.pos = append(z.pos, 0)
	}
	if z.seen[id] == z.n {
		z.cur.tf[z.pos[id]] += z.w
	} else {
		z.seen[id], z.pos[id] = z.n, int32(len(z.cur.terms))
		z.cur.terms = append(z.cur.terms, id)
		z.cur.tf = append(z.cur.tf, z.w)
	}
	z.cur.length += z.w
}

func (z *analyzer) field(s string, w float64, out *weighted) {
	if w <= 0 || s == "" {
		return
	}
	z.cur, z.w = out, float32(w)
	z.a.Each(s, z.add)
}

func (z *analyzer) chunk(d Doc) weighted {
	z.n++
	var out weighted
	title, body := SplitHeading(d.Content)
	z.field(body, 1, &out)
	z.field(title, z.p.TitleWeight, &out)
	if d.Context != "" {
		_, cbody := SplitHeading(d.Context)
		z.field(cbody, z.p.ContextWeight, &out)
	}
	return out
}

// globalIDs rewrites the chunk's term numbers as index term ids, adding terms the index lacks. Caller
// holds the write lock.
func (z *analyzer) globalIDs(ix *Index, w *weighted) {
	for len(z.global) < z.a.Terms() {
		z.global = append(z.global, -1)
	}
	for j, l := range w.terms {
		id := z.global[l]
		if id < 0 {
			t := z.a.Term(l)
			var ok bool
			if id, ok = ix.dict[t]; !ok {
				id = int32(len(ix.postings))
				ix.dict[t] = id
				ix.postings = append(ix.postings, nil)
				ix.df = append(ix.df, 0)
			}
			z.global[l] = id
		}
		w.terms[j] = id
	}
}

// parallelFrom is the batch size from which Add analyzes on every core: below it the goroutines cost
// more than they save (ingestion adds one document's chunks at a time).
const parallelFrom = 512

// analyzeAll analyzes docs, on every core for a large batch; by[i] is the analyzer of docs[i].
func (ix *Index) analyzeAll(docs []Doc) (ws []weighted, by []*analyzer) {
	ws, by = make([]weighted, len(docs)), make([]*analyzer, len(docs))
	workers := max(1, min(runtime.GOMAXPROCS(0), len(docs)/parallelFrom))
	per := (len(docs) + workers - 1) / workers
	var wg sync.WaitGroup
	for from := 0; from < len(docs); from += per {
		to := min(from+per, len(docs))
		z := newAnalyzer(ix.p)
		run := func() {
			for i := from; i < to; i++ {
				ws[i], by[i] = z.chunk(docs[i]), z
			}
		}
		if workers == 1 {
			run()
			continue
		}
		wg.Go(run)
	}
	wg.Wait()
	return ws, by
}

// Add indexes docs, replacing any with the same (tenant, id). Analysis runs outside the lock (on
// every core for a large batch); under it each distinct term of the batch is looked up once, and for a
// large batch every posting list is first grown to its final size, so no list is copied more than
// once per batch.
func (ix *Index) Add(docs ...Doc) {
	ws, by := ix.analyzeAll(docs)
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for i := range ws {
		by[i].globalIDs(ix, &ws[i])
	}
	if len(docs) >= parallelFrom {
		grow := make([]int32, len(ix.postings))
		for i := range ws {
			for _, id := range ws[i].terms {
				grow[id]++
			}
		}
		for id, n := range grow {
			if n > 0 {
				ix.postings[id] = slices.Grow(ix.postings[id], int(n))
			}
		}
	}
	ix.entries = slices.Grow(ix.entries, len(docs))
	ix.lens = slices.Grow(ix.lens, len(docs))
	for i, d := range docs {
		k := d.Tenant + "\x00" + d.ID
		if at, ok := ix.byID[k]; ok {
			ix.kill(at)
		}
		at := int32(len(ix.entries))
		w := &ws[i]
		for j, id := range w.terms {
			ix.postings[id] = append(ix.postings[id], posting{at, w.tf[j]})
			ix.df[id]++
		}
		docN := ix.docNum(d.DocumentID)
		ix.entries = append(ix.entries, entry{id: d.ID, tenant: d.Tenant, kb: d.KBID, doc: d.DocumentID, docN: docN,
			length: w.length, terms: packTerms(w.terms)})
		ix.byDoc[docN] = append(ix.byDoc[docN], at)
		ix.lens = append(ix.lens, w.length)
		ix.byID[k] = at
		ix.live++
		ix.totalLen += float64(w.length)
	}
	for i := range docs {
		if i == 0 || docs[i].DocumentID != docs[i-1].DocumentID {
			ix.touch(docs[i].DocumentID)
		}
	}
	ix.version.Add(1)
	ix.maybeCompact()
}

// kill marks an entry deleted and updates the statistics. Caller holds the write lock.
func (ix *Index) kill(at int32) {
	e := &ix.entries[at]
	if e.dead {
		return
	}
	e.dead = true
	ix.lens[at] = -1
	e.terms.each(func(t int32) { ix.df[t]-- })
	delete(ix.byID, e.tenant+"\x00"+e.id)
	ix.live--
	ix.totalLen -= float64(e.length)
	ix.dead++
}

// maybeCompact compacts when deleted entries pass a quarter of the live ones. Caller holds the write lock.
func (ix *Index) maybeCompact() {
	if ix.dead > 1024 && ix.dead > ix.live/4 {
		ix.compact()
	}
}

// compact drops deleted entries from the postings. Caller holds the write lock.
func (ix *Index) compact() {
	remap := make([]int32, len(ix.entries))
	var kept []entry
	for i, e := range ix.entries {
		if e.dead {
			remap[i] = -1
			continue
		}
		remap[i] = int32(len(kept))
		kept = append(kept, e)
	}
	for t, ps := range ix.postings {
		out := ps[:0]
		for _, p := range ps {
			if r := remap[p.doc]; r >= 0 {
				out = append(out, posting{r, p.tf})
			}
		}
		ix.postings[t] = out
	}
	ix.entries = kept
	ix.lens = ix.lens[:0]
	for _, e := range kept {
		ix.lens = append(ix.lens, e.length)
	}
	for n := range ix.byDoc {
		ix.byDoc[n] = ix.byDoc[n][:0]
	}
	for i, e := range kept {
		ix.byID[e.tenant+"\x00"+e.id] = int32(i)
		ix.byDoc[e.docN] = append(ix.byDoc[e.docN], int32(i))
	}
	ix.dead = 0
}

// Remove deletes chunks by id; unknown ids are ignored.
func (ix *Index) Remove(tenant string, ids ...string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, id := range ids {
		if at, ok := ix.byID[tenant+"\x00"+id]; ok {
			ix.touch(ix.entries[at].doc)
			ix.kill(at)
		}
	}
	ix.version.Add(1)
	ix.maybeCompact()
}

// RemoveDocument deletes every chunk of a document.
func (ix *Index) RemoveDocument(tenant, documentID string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n, ok := ix.docNums[documentID]
	if !ok {
		return
	}
	kept := ix.byDoc[n][:0] // another tenant's document of the same id keeps its entries
	for _, at := range ix.byDoc[n] {
		e := &ix.entries[at]
		switch {
		case e.dead:
		case e.tenant == tenant:
			ix.kill(at)
		default:
			kept = append(kept, at)
		}
	}
	ix.byDoc[n] = kept
	ix.touch(documentID)
	ix.version.Add(1)
	ix.maybeCompact()
}

// Len is the number of live chunks.
func (ix *Index) Len() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.live
}

// scratch is a search's reusable memory: a score per entry (all zero between searches) and the entries
// touched. A common term touches most of the index, and allocating both per search made the
// collector's work land in the latency tail.
type scratch struct {
	acc     []float32
	touched []int32
	reach   []int32   // MaxScore: the entries still in reach
	part    []float64 // and their partial scores
}

type scored struct {
	at    int32
	score float32
}

// Search returns at most k chunks inside f for the query, best first (score descending, ties by chunk
// id). Filters narrow candidates; statistics are those of the whole index. Invalid for k < 1 or a bad
// filter; an empty result (no query term is indexed) is an empty slice.
func (ix *Index) Search(ctx context.Context, query string, k int, f rag.Filter) ([]rag.Hit, error) {
	const op = "bm25.Search"
	// a long document restriction is validated once per distinct restriction, when docSet translates it
	validate := f.Validate
	if len(f.DocumentIDs) >= rag.MinDocBits {
		validate = f.ValidateScope
	}
	if err := validate(); err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	if k < 1 {
		return nil, rag.Errorf(op, rag.KindInvalid, "k must be positive, got %d", k)
	}
	if err := ctx.Err(); err != nil {
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	terms := text.Analyze(query)
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	docs, err := ix.docSet(f.DocumentIDs)
	if err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	if ix.live == 0 || len(terms) == 0 {
		return []rag.Hit{}, nil
	}
	q := make([]qterm, 0, len(terms))
	for _, t := range terms {
		if id, ok := ix.dict[t]; ok {
			q = append(q, qterm{id, 1}) // a repeated term counts again, as in the query's text
		}
	}
	if fb := ix.p.feedback(query); fb.On() {
		// the feedback chunks come from the same filter: another tenant's text never shapes the query
		q = ix.expand(q, ix.top(q, fb.Docs, f, docs), fb)
	}
	cands := ix.top(q, k, f, docs)
	hits := make([]rag.Hit, len(cands))
	for i, c := range cands {
		e := &ix.entries[c.at]
		hits[i] = rag.Hit{ID: e.id, ChunkID: e.id, DocumentID: e.doc, KBID: e.kb, Score: c.score}
	}
	return hits, nil
}

// top scores the weighted query terms and returns the k best entries inside f (docs: f's document
// restriction as translated by docSet), best first (ties by chunk id). A query whose terms hold many
// postings is answered by MaxScore (maxscore.go), with the same result. Caller holds a lock.
func (ix *Index) top(q []qterm, k int, f rag.Filter, docs docBits) []scored {
	if ix.prunable(q, k) {
		h, _ := ix.topPruned(q, k, f, docs)
		return h
	}
	return ix.topExhaustive(q, k, f, docs)
}

// topExhaustive is top scoring every posting of every term. Caller holds a lock.
func (ix *Index) topExhaustive(q []qterm, k int, f rag.Filter, docs docBits) []scored {
	sc := ix.scratch()
	defer ix.pool.Put(sc)
	return ix.scoreAll(sc, q, k, f, docs)
}

// scratch takes a search's memory from the pool, its accumulator as long as the entries.
func (ix *Index) scratch() *scratch {
	sc, _ := ix.pool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{}
	}
	if len(sc.acc) < len(ix.entries) {
		sc.acc = make([]float32, len(ix.entries))
	}
	return sc
}

// scoreAll is topExhaustive in sc (its accumulator all zero). Caller holds a lock.
func (ix *Index) scoreAll(sc *scratch, q []qterm, k int, f rag.Filter, docs docBits) []scored {
	acc, touched := sc.acc, sc.touched[:0]
	defer func() { sc.touched = touched[:0] }() // keep the grown list for the next search
	n := float64(ix.live)
	avg := ix.totalLen / n
	k1, b, delta := ix.p.K1, ix.p.B, ix.p.Delta
	for _, t := range q {
		id := t.id
		if ix.df[id] == 0 {
			continue
		}
		idf := t.w * IDF(float64(ix.df[id]), n)
		a, c := k1*(1-b), k1*b/avg // norm = a + c*length
		for _, p := range ix.postings[id] {
			l := ix.lens[p.doc]
			if l < 0 {
				continue
			}
			if acc[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			acc[p.doc] += termScore(idf, float64(p.tf), float64(l), a, c, delta)
		}
	}
	kbs := set(f.KBIDs)
	// keep the k best in a min-heap (worst at the root): a common term touches most of the index, and
	// sorting every candidate would dominate the search
	worse := func(a, b scored) bool { // a ranks below b
		if a.score != b.score {
			return a.score < b.score
		}
		return ix.entries[a.at].id > ix.entries[b.at].id
	}
	h := make([]scored, 0, k)
	for _, at := range touched {
		s := acc[at]
		acc[at] = 0
		c := scored{at, s}
		if len(h) == k && !worse(h[0], c) {
			continue // cannot enter the heap: no need to test the filter (string compares and a map look-up)
		}
		e := &ix.entries[at]
		if e.tenant != f.Tenant || (kbs != nil && !kbs[e.kb]) || (docs != nil && !docs.has(e.docN)) {
			continue
		}
		if len(h) < k {
			h = append(h, c)
			for i := len(h) - 1; i > 0; { // sift up
				p := (i - 1) / 2
				if !worse(h[i], h[p]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			continue
		}
		h[0] = c
		for i := 0; ; { // sift down
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && worse(h[l], h[m]) {
				m = l
			}
			if r < len(h) && worse(h[r], h[m]) {
				m = r
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	slices.SortFunc(h, func(a, b scored) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	return h
}

// docNum returns a document id's number, assigning one. Caller holds the write lock.
func (ix *Index) docNum(id string) int32 {
	n, ok := ix.docNums[id]
	if !ok {
		n = int32(len(ix.docNums))
		ix.docNums[id] = n
		ix.byDoc = append(ix.byDoc, nil)
	}
	return n
}

// docBits is a set of document numbers.
type docBits []uint64

func (b docBits) has(n int32) bool { return rag.HasBit(b, n) }

// docSet is the restriction to ids as document numbers; nil for no restriction. An id never indexed
// matches nothing (a restriction to only such ids has no bit set). A long restriction (a metadata
// filter's passing documents) is translated once and shared while it stays valid (rag.DocBits), so a
// filtered search neither looks up each id nor allocates; Invalid for a malformed id. Caller holds a
// lock.
func (ix *Index) docSet(ids []string) (docBits, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) >= rag.MinDocBits {
		// a metadata filter's answer is read from its bitset over the shared document numbering; the
		// map is walked only for numbers handed out since the last such restriction
		bits, _, err := ix.restrictions.BitsOf(ids, len(ix.docNums), func(id string) (int32, bool) {
			n, ok := ix.docNums[id]
			return n, ok
		}, func(from int, yield func(string, int32)) {
			for id, n := range ix.docNums {
				if int(n) >= from {
					yield(id, n)
				}
			}
		})
		return bits, err
	}
	b := make(docBits, len(ix.docNums)/64+1)
	for _, id := range ids {
		if n, ok := ix.docNums[id]; ok {
			b[n/64] |= 1 << (n % 64)
		}
	}
	return b, nil
}

func set(ids []string) map[string]bool {
	if len(ids) == 0 {
		return nil
	}
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// IndexDocument replaces a document's chunks with its current child rows (parents give the context
// field): the hook ingestion calls after a document's rows are swapped.
func (ix *Index) IndexDocument(tenant, documentID string, rows []rag.Chunk) {
	ix.RemoveDocument(tenant, documentID)
	ix.Add(childDocs(tenant, documentID, rows)...)
}

// childDocs are a document's child rows as index documents, each with its parent's text as context.
func childDocs(tenant, documentID string, rows []rag.Chunk) []Doc {
	parents := map[string]string{}
	for _, c := range rows {
		if c.Level == rag.LevelParent {
			parents[c.ID] = c.Content
		}
	}
	var docs []Doc
	for _, c := range rows {
		if c.Level == rag.LevelChild {
			docs = append(docs, Doc{ID: c.ID, Tenant: tenant, KBID: c.KBID, DocumentID: documentID, Content: c.Content, Context: parents[c.ParentID]})
		}
	}
	return docs
}

// Source lists what Load reads: every knowledge base, document and chunk of a tenant.
type Source interface {
	ListKBs(ctx context.Context, tenant string) ([]rag.KnowledgeBase, error)
	ListDocuments(ctx context.Context, tenant, kbID, status string) ([]rag.Document, error)
	ListChunks(ctx context.Context, tenant, docID string) ([]rag.Chunk, error)
}

// Load indexes every ready document of the tenant from the SQL record (the embedded mode builds its
// keyword index at start this way).
func (ix *Index) Load(ctx context.Context, src Source, tenant string) error {
	kbs, err := src.ListKBs(ctx, tenant)
	if err != nil {
		return err
	}
	for _, kb := range kbs {
		docs, err := src.ListDocuments(ctx, tenant, kb.ID, rag.StatusReady)
		if err != nil {
			return err
		}
		var batch []Doc
		learnt := make(map[string]string, len(docs))
		for _, d := range docs {
			rows, err := src.ListChunks(ctx, tenant, d.ID)
			if err != nil {
				return err
			}
			ix.RemoveDocument(tenant, d.ID)
			learnt[d.ID] = stamp(d) // the row listed before its chunks were read (snapshot.go, known)
			if batch = append(batch, childDocs(tenant, d.ID, rows)...); len(batch) >= loadBatch {
				ix.Add(batch...)
				batch = batch[:0]
			}
		}
		ix.Add(batch...)
		ix.learn(learnt)
	}
	return nil
}

// loadBatch is how many chunks Load indexes at a time: a large batch is analyzed on every core and
// grows each posting list once, where a document at a time (its fifty-odd chunks) ran on one core.
const loadBatch = 20_000

// Token encodes a term as a FULLTEXT-safe token: "t" and the term's UTF-8 bytes in hex (or a hash for
// long terms). Any MySQL tokenizer keeps such a token whole, whatever its minimum token size, stop
// word list or treatment of punctuation, so FULLTEXT matches exactly the analyzer's terms ("v1.2.3",
// "how", "安心").
func Token(term string) string {
	if len(term) <= 31 {
		return "t" + hex.EncodeToString([]byte(term))
	}
	sum := sha256.Sum256([]byte(term))
	return "h" + hex.EncodeToString(sum[:20])
}
