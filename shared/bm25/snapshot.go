package bm25

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/text"
)

// The snapshot is the index written to a file beside the database, so that start-up reads it instead of
// analysing every chunk of SQL again (369 s of a 383 s start-up at a million chunks:
// docs/bench/million.md). Layout, little-endian:
//
//	header  magic "DMBM25SN" | version uint32 | CRC-32C of the body uint32 | body length uint64
//	body    analyzer fingerprint, field weights, tenant, then the tables below, integers as uvarints
//
// The body holds one tenant's live entries renumbered from 0 in index order, the knowledge-base and
// document tables they point into, the distinct term frequencies (weighted frequencies are float32 sums
// of 1, TitleWeight and ContextWeight: a few hundred distinct values), and every term's postings as
// entry-number deltas and indexes into the frequency table (two or three bytes a posting instead of
// eight in memory). Each document also carries the stamp of its SQL row (stamp) as read before the
// index was written, so that loading can tell which documents changed since.
const (
	snapMagic   = "DMBM25SN"
	snapVersion = 1
	snapHeader  = 24
)

// ErrSnapshot classes a snapshot that cannot be used: missing, truncated, corrupt, of another version,
// or written for another tenant, other field weights or another analyzer. The index is rebuilt from SQL.
var ErrSnapshot = errors.New("bm25 snapshot unusable")

func snapErr(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrSnapshot, fmt.Sprintf(format, a...))
}

// analyzerProbe is text that exercises the analyzer's rules (case, stemming, stop words, numbers,
// versions, CJK bigrams): its terms' hash goes into the snapshot, and a build whose analyzer splits it
// differently rebuilds instead of serving postings its queries would not match.
const analyzerProbe = "The Running runners ran 3.14 v1.2.3 e-mail O'Neil's naïve CAFÉ 安心保的投保年龄 ありがとう 한국어 x86_64 HTTP/2"

func analyzerFingerprint() uint64 {
	h := fnv.New64a()
	for _, t := range text.Analyze(analyzerProbe) {
		h.Write([]byte(t))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// stamp identifies a document row's indexed state: the ingestion that changes its chunks commits a new
// row (updated_at, chunk count, content hash), after the keyword index took the new chunks.
func stamp(d rag.Document) string {
	return d.KBID + "|" + strconv.FormatInt(d.UpdatedAt.UnixMilli(), 10) + "|" + strconv.Itoa(d.ChunkCount) + "|" + d.ContentHash + "|" + d.DocVersion
}

// row is a ready document's stamp and the time its row was last written (Unix ms).
type row struct {
	stamp   string
	updated int64
}

// stamps are the tenant's ready documents by id, as Load would index them.
func stamps(ctx context.Context, src Source, tenant string) (map[string]row, error) {
	kbs, err := src.ListKBs(ctx, tenant)
	if err != nil {
		return nil, err
	}
	out := map[string]row{}
	for _, kb := range kbs {
		docs, err := src.ListDocuments(ctx, tenant, kb.ID, rag.StatusReady)
		if err != nil {
			return nil, err
		}
		for _, d := range docs {
			out[d.ID] = row{stamp(d), d.UpdatedAt.UnixMilli()}
		}
	}
	return out, nil
}

// known is what the index knows of a document's SQL row: the stamp of the row it was indexed from
// (Load, LoadSnapshot), or, once this process indexed or removed its chunks, when that happened (Unix
// ms): its stamp is then read from SQL at save, and trusted only if the row was written since (ingestion
// commits the row after it updates the index; an older row means the change was not committed, or
// failed and was taken back, and the next start re-indexes the document).
type known struct {
	stamp   string
	touched int64
}

// touch records that this process changed documents' chunks. Caller holds the write lock.
func (ix *Index) touch(docs ...string) {
	if ix.known == nil {
		ix.known = map[string]known{}
	}
	now := time.Now().UnixMilli()
	for _, d := range docs {
		ix.known[d] = known{touched: now}
	}
}

// learn records the stamps of the rows documents were just indexed from.
func (ix *Index) learn(st map[string]string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.known == nil {
		ix.known = map[string]known{}
	}
	for d, s := range st {
		ix.known[d] = known{stamp: s}
	}
}

// stampFor is the stamp the snapshot records for a document whose SQL row is r (zero when not ready).
// Caller holds a lock.
// pending is true for a document this process changed whose row was not written since: its commit may
// still come (ingestion updates the index, then commits the row), so a later save can record it.
func (ix *Index) stampFor(doc string, r row) (stamp string, pending bool) {
	k, ok := ix.known[doc]
	switch {
	case ok && k.touched == 0:
		return k.stamp, false
	case ok && r.updated >= k.touched:
		return r.stamp, false
	default: // changed here and not committed since, or never learnt: re-index at the next load
		return "", ok
	}
}

// Version counts the index's changes (adds and removals): a saver compares it to the version it last
// wrote.
func (ix *Index) Version() uint64 { return ix.version.Load() }

// SaveSnapshot writes tenant's part of the index to path: the document rows are listed from src first,
// then the index is encoded under its read lock to a temporary file in the same directory, which is
// synced, renamed over path and the directory synced, so that path is always a whole snapshot, the old
// one or the new one. Only the encoding runs under the lock (its bytes go to the page cache; the sync
// runs after it): a writer arriving meanwhile waits, and searches behind it. Each document's stamp is
// the one it was indexed from, or for a document this process changed, the row listed here if it was
// written since (known): a document changed by another process keeps its old stamp, and one whose
// change was not committed gets none, so the next start re-indexes both.
func (ix *Index) SaveSnapshot(ctx context.Context, src Source, tenant, path string) (err error) {
	st, err := stamps(ctx, src, tenant)
	if err != nil {
		return fmt.Errorf("bm25 snapshot: list documents: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("bm25 snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(make([]byte, snapHeader)); err != nil {
		return fmt.Errorf("bm25 snapshot: %w", err)
	}
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	bw := bufio.NewWriterSize(io.MultiWriter(tmp, crc), 1<<20)
	w := &snapWriter{w: bw}
	ix.mu.RLock()
	version := ix.version.Load()
	ix.encode(w, tenant, st)
	ix.mu.RUnlock()
	if err = w.flush(); err != nil {
		return fmt.Errorf("bm25 snapshot: write: %w", err)
	}
	var head [snapHeader]byte
	copy(head[:8], snapMagic)
	binary.LittleEndian.PutUint32(head[8:], snapVersion)
	binary.LittleEndian.PutUint32(head[12:], crc.Sum32())
	binary.LittleEndian.PutUint64(head[16:], uint64(w.n))
	if _, err = tmp.WriteAt(head[:], 0); err != nil {
		return fmt.Errorf("bm25 snapshot: write header: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("bm25 snapshot: sync: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("bm25 snapshot: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("bm25 snapshot: %w", err)
	}
	syncDir(filepath.Dir(path))
	ix.saved.Store(version)
	ix.pending.Store(int64(w.pending))
	return nil
}

// Pending is how many documents the last snapshot written records without a stamp because this
// process changed them and their rows were not committed yet: a save after their commit records them
// (Saver retries once the index settles, and at Close), so the next start need not re-index them.
func (ix *Index) Pending() int64 { return ix.pending.Load() }

// syncDir makes a rename in dir durable; best effort (some file systems cannot sync a directory, and
// the snapshot is a cache of SQL: losing it costs a rebuild, never data).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

type snapWriter struct {
	w       *bufio.Writer
	n       int64
	pending int // documents written without a stamp while their commit may still come (stampFor)
	buf     [binary.MaxVarintLen64]byte
	err     error
}

func (w *snapWriter) bytes(b []byte) {
	if w.err != nil {
		return
	}
	var n int
	n, w.err = w.w.Write(b)
	w.n += int64(n)
}

func (w *snapWriter) uvarint(v uint64) { w.bytes(w.buf[:binary.PutUvarint(w.buf[:], v)]) }
func (w *snapWriter) u64(v uint64)     { w.bytes(binary.LittleEndian.AppendUint64(w.buf[:0], v)) }
func (w *snapWriter) u32(v uint32)     { w.bytes(binary.LittleEndian.AppendUint32(w.buf[:0], v)) }

func (w *snapWriter) str(s string) {
	w.uvarint(uint64(len(s)))
	if w.err == nil {
		var n int
		n, w.err = w.w.WriteString(s)
		w.n += int64(n)
	}
}

func (w *snapWriter) flush() error {
	if w.err != nil {
		return w.err
	}
	return w.w.Flush()
}

// encode writes the body. Caller holds a lock.
func (ix *Index) encode(w *snapWriter, tenant string, st map[string]row) {
	w.u64(analyzerFingerprint())
	w.u64(math.Float64bits(ix.p.TitleWeight))
	w.u64(math.Float64bits(ix.p.ContextWeight))
	w.str(tenant)
	// the tenant's live entries, renumbered in index order (postings stay sorted by entry)
	renum := make([]int32, len(ix.entries))
	kbs, docs := map[string]uint64{}, map[string]uint64{}
	var kbList, docList []string
	n := 0
	for i := range ix.entries {
		e := &ix.entries[i]
		if e.dead || e.tenant != tenant {
			renum[i] = -1
			continue
		}
		renum[i] = int32(n)
		n++
		if _, ok := kbs[e.kb]; !ok {
			kbs[e.kb] = uint64(len(kbList))
			kbList = append(kbList, e.kb)
		}
		if _, ok := docs[e.doc]; !ok {
			docs[e.doc] = uint64(len(docList))
			docList = append(docList, e.doc)
		}
	}
	w.uvarint(uint64(len(kbList)))
	for _, s := range kbList {
		w.str(s)
	}
	w.uvarint(uint64(len(docList)))
	for _, d := range docList {
		w.str(d)
		stamp, pending := ix.stampFor(d, st[d]) // "": the next load re-indexes it
		if pending {
			w.pending++
		}
		w.str(stamp)
	}
	w.uvarint(uint64(n))
	for i := range ix.entries {
		if renum[i] < 0 {
			continue
		}
		e := &ix.entries[i]
		w.str(e.id)
		w.uvarint(kbs[e.kb])
		w.uvarint(docs[e.doc])
		w.u32(math.Float32bits(e.length))
	}
	// distinct frequencies, most used first so that their indexes take one byte
	use := newFreqs()
	terms, total := 0, 0
	for t, ps := range ix.postings {
		live := 0
		for _, p := range ps {
			if renum[p.doc] >= 0 {
				use.vals[use.slot(p.tf)]++
				live++
			}
		}
		if live > 0 && ix.df[t] > 0 {
			terms++
			total += live
		}
	}
	tfs := use.byUse()
	w.uvarint(uint64(len(tfs)))
	for i, f := range tfs {
		use.vals[use.slot(f)] = i // from here on, vals are indexes
		w.u32(math.Float32bits(f))
	}
	names := make([]string, len(ix.postings))
	for t, id := range ix.dict {
		names[id] = t
	}
	w.uvarint(uint64(terms))
	w.uvarint(uint64(total))
	for id, ps := range ix.postings {
		live := 0
		for _, p := range ps {
			if renum[p.doc] >= 0 {
				live++
			}
		}
		if live == 0 || ix.df[id] == 0 {
			continue
		}
		w.str(names[id])
		w.uvarint(uint64(live))
		prev := int32(-1)
		for _, p := range ps {
			r := renum[p.doc]
			if r < 0 {
				continue
			}
			w.uvarint(uint64(r - prev))
			w.uvarint(uint64(use.vals[use.slot(p.tf)]))
			prev = r
		}
	}
}

// freqs maps the distinct weighted frequencies to a count, then an index: an open-addressed table on
// the float32's bits, looked up once or twice per posting (a Go map there was most of a save's CPU).
type freqs struct {
	keys []float32
	vals []int
	used []bool
	n    int
}

func newFreqs() *freqs {
	return &freqs{keys: make([]float32, 1024), vals: make([]int, 1024), used: make([]bool, 1024)}
}

// slot is f's slot, added with value 0 when new.
func (t *freqs) slot(f float32) int {
	mask := uint32(len(t.keys) - 1)
	for i := (math.Float32bits(f) * 0x9e3779b1 >> 7) & mask; ; i = (i + 1) & mask {
		switch {
		case !t.used[i]:
			if 2*(t.n+1) > len(t.keys) {
				t.grow()
				return t.slot(f)
			}
			t.used[i], t.keys[i], t.vals[i] = true, f, 0
			t.n++
			return int(i)
		case t.keys[i] == f:
			return int(i)
		}
	}
}

func (t *freqs) grow() {
	old := *t
	*t = freqs{keys: make([]float32, 2*len(old.keys)), vals: make([]int, 2*len(old.keys)), used: make([]bool, 2*len(old.keys))}
	for i, u := range old.used {
		if u {
			t.vals[t.slot(old.keys[i])] = old.vals[i]
		}
	}
}

// byUse lists the frequencies by count descending, then value (independent of insertion order).
func (t *freqs) byUse() []float32 {
	type fc struct {
		f float32
		c int
	}
	var all []fc
	for i, u := range t.used {
		if u {
			all = append(all, fc{t.keys[i], t.vals[i]})
		}
	}
	slices.SortFunc(all, func(a, b fc) int {
		if a.c != b.c {
			return b.c - a.c
		}
		return cmp.Compare(a.f, b.f)
	})
	out := make([]float32, len(all))
	for i, x := range all {
		out[i] = x.f
	}
	return out
}

// LoadReport says what LoadSnapshot did.
type LoadReport struct {
	// Snapshot is true when the snapshot was used; Reason says why it was not (and was rebuilt).
	Snapshot bool
	Reason   string
	// Kept documents came from the snapshot; Reindexed were read from SQL (changed or new since it was
	// written); Removed were in it but are no longer ready.
	Kept, Reindexed, Removed int
}

// LoadSnapshot fills an empty index from the snapshot at path and brings it up to date with src: every
// ready document whose stamp differs from the snapshot's (or that the snapshot lacks) is indexed again
// from SQL, and every document of the snapshot that is no longer ready is removed. An unusable snapshot
// (ErrSnapshot: missing, truncated, corrupt, another version, tenant, field weights or analyzer) is
// reported by logf and the index is rebuilt from src as Load does. The file is only read. Errors are
// src's.
func (ix *Index) LoadSnapshot(ctx context.Context, src Source, tenant, path string, logf func(string, ...any)) (LoadReport, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	nx, docStamps, err := readSnapshot(path, ix.p, tenant)
	if err != nil {
		rep := LoadReport{Reason: err.Error()}
		if !errors.Is(err, os.ErrNotExist) {
			logf("bm25: %v (%s); rebuilding the keyword index from SQL", err, path)
		}
		return rep, ix.Load(ctx, src, tenant)
	}
	cur, err := stamps(ctx, src, tenant)
	if err != nil {
		return LoadReport{}, err
	}
	ix.adopt(nx)
	rep := LoadReport{Snapshot: true}
	for doc, s := range docStamps {
		if c, ok := cur[doc]; !ok || c.stamp != s || s == "" {
			ix.RemoveDocument(tenant, doc)
			if !ok {
				rep.Removed++
			}
		}
	}
	learnt := make(map[string]string, len(cur))
	var batch []Doc
	for doc, c := range cur {
		learnt[doc] = c.stamp // read before the chunks: a change in between makes the next start look again
		if old, ok := docStamps[doc]; ok && old == c.stamp && old != "" {
			rep.Kept++
			continue
		}
		rows, err := src.ListChunks(ctx, tenant, doc)
		if err != nil {
			return rep, err
		}
		rep.Reindexed++
		if batch = append(batch, childDocs(tenant, doc, rows)...); len(batch) >= loadBatch {
			ix.Add(batch...)
			batch = batch[:0]
		}
	}
	ix.Add(batch...)
	ix.learn(learnt)
	if rep.Reindexed == 0 && rep.Removed == 0 {
		ix.saved.Store(ix.version.Load()) // the file is this index: nothing to write
	}
	return rep, nil
}

// adopt moves a decoded index's content into ix (empty, as New returned it).
func (ix *Index) adopt(nx *Index) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.dict, ix.postings, ix.df, ix.entries, ix.lens = nx.dict, nx.postings, nx.df, nx.entries, nx.lens
	ix.byID, ix.docNums, ix.byDoc = nx.byID, nx.docNums, nx.byDoc
	ix.live, ix.totalLen, ix.dead = nx.live, nx.totalLen, 0
	ix.restrictions = rag.NewDocBits()
	ix.version.Add(1)
}

// readSnapshot maps and decodes the file; the mapping is dropped before it returns (every string and
// table is copied into the heap, exactly sized), so the file's pages are page cache that the kernel can
// drop, never a second copy of the index in the process.
func readSnapshot(path string, p Params, tenant string) (*Index, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("%w: %w", ErrSnapshot, err)
		}
		return nil, nil, snapErr("open: %v", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, snapErr("stat: %v", err)
	}
	if fi.Size() < snapHeader {
		return nil, nil, snapErr("truncated: %d bytes, shorter than the header", fi.Size())
	}
	data, release, err := mapRead(f, fi.Size())
	if err != nil {
		return nil, nil, snapErr("read: %v", err)
	}
	defer release()
	if string(data[:8]) != snapMagic {
		return nil, nil, snapErr("not a BM25 snapshot (magic %q)", data[:8])
	}
	if v := binary.LittleEndian.Uint32(data[8:]); v != snapVersion {
		return nil, nil, snapErr("format version %d, this build reads %d", v, snapVersion)
	}
	body := data[snapHeader:]
	if n := binary.LittleEndian.Uint64(data[16:]); n != uint64(len(body)) {
		return nil, nil, snapErr("truncated or extended: body of %d bytes, header says %d", len(body), n)
	}
	if sum := crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)); sum != binary.LittleEndian.Uint32(data[12:]) {
		return nil, nil, snapErr("checksum mismatch (corrupt file)")
	}
	return decode(body, p, tenant)
}

type snapReader struct {
	b   []byte
	err error
}

func (r *snapReader) fail(what string) {
	if r.err == nil {
		r.err = snapErr("malformed body at %s", what)
	}
	r.b = nil
}

func (r *snapReader) uvarint(what string) uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count is a table's length, which cannot exceed the bytes left (every item takes one at least).
func (r *snapReader) count(what string) int {
	v := r.uvarint(what)
	if v > uint64(len(r.b)) {
		r.fail(what)
		return 0
	}
	return int(v)
}

func (r *snapReader) fixed(n int, what string) []byte {
	if len(r.b) < n {
		r.fail(what)
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *snapReader) u64(what string) uint64 { return binary.LittleEndian.Uint64(r.fixed(8, what)) }
func (r *snapReader) u32(what string) uint32 { return binary.LittleEndian.Uint32(r.fixed(4, what)) }

func (r *snapReader) str(what string) string {
	n := r.count(what)
	return string(r.fixed(n, what))
}

// decode builds an index from a verified body. Postings and the entries' term lists are each one
// exactly sized array, sliced per term and per entry (capacity = length, so a later append copies the
// list out instead of writing over its neighbour).
func decode(body []byte, p Params, tenant string) (*Index, map[string]string, error) {
	r := &snapReader{b: body}
	if fp := r.u64("analyzer"); r.err == nil && fp != analyzerFingerprint() {
		return nil, nil, snapErr("written by another text analyzer")
	}
	tw, cw := math.Float64frombits(r.u64("weights")), math.Float64frombits(r.u64("weights"))
	if r.err == nil && (tw != p.TitleWeight || cw != p.ContextWeight) {
		return nil, nil, snapErr("field weights title %v context %v, the index uses %v and %v", tw, cw, p.TitleWeight, p.ContextWeight)
	}
	if t := r.str("tenant"); r.err == nil && t != tenant {
		return nil, nil, snapErr("written for tenant %q, not %q", t, tenant)
	}
	nx := New(p)
	kbList := make([]string, r.count("knowledge bases"))
	for i := range kbList {
		kbList[i] = r.str("knowledge base")
	}
	docList := make([]string, r.count("documents"))
	docStamps := make(map[string]string, len(docList))
	nx.byDoc = make([][]int32, len(docList))
	for i := range docList {
		docList[i] = r.str("document")
		docStamps[docList[i]] = r.str("stamp")
		nx.docNums[docList[i]] = int32(i)
	}
	n := r.count("entries")
	nx.entries = make([]entry, n)
	nx.lens = make([]float32, n)
	nx.byID = make(map[string]int32, n)
	perDoc := make([]int32, len(docList))
	for i := range nx.entries {
		e := &nx.entries[i]
		e.id, e.tenant = r.str("chunk id"), tenant
		kb, doc := r.uvarint("entry"), r.uvarint("entry")
		e.length = math.Float32frombits(r.u32("length"))
		if r.err != nil || kb >= uint64(len(kbList)) || doc >= uint64(len(docList)) {
			r.fail("entry")
			return nil, nil, r.err
		}
		e.kb, e.doc, e.docN = kbList[kb], docList[doc], int32(doc)
		nx.lens[i] = e.length
		nx.byID[tenant+"\x00"+e.id] = int32(i)
		nx.totalLen += float64(e.length)
		perDoc[doc]++
	}
	nx.live = n
	arena := make([]int32, n)
	for d, c := range perDoc {
		nx.byDoc[d], arena = arena[:0:c], arena[c:]
	}
	for i := range nx.entries {
		d := nx.entries[i].docN
		nx.byDoc[d] = append(nx.byDoc[d], int32(i))
	}
	tfs := make([]float32, r.count("frequencies"))
	for i := range tfs {
		tfs[i] = math.Float32frombits(r.u32("frequency"))
	}
	terms := r.count("terms")
	total := r.uvarint("postings")
	if r.err != nil || total > uint64(len(r.b)) {
		r.fail("postings")
		return nil, nil, r.err
	}
	all := make([]posting, total)
	nx.postings = make([][]posting, 0, terms)
	nx.df = make([]int32, 0, terms)
	nx.dict = make(map[string]int32, terms)
	for range terms {
		t := r.str("term")
		c := r.count("term postings")
		if r.err != nil || c == 0 || c > len(all) {
			r.fail("term postings")
			return nil, nil, r.err
		}
		ps := all[:c:c]
		all = all[c:]
		at := int64(-1)
		for j := range ps {
			at += int64(r.uvarint("posting"))
			k := r.uvarint("posting")
			if r.err != nil || at >= int64(n) || k >= uint64(len(tfs)) || (j > 0 && at <= int64(ps[j-1].doc)) {
				r.fail("posting")
				return nil, nil, r.err
			}
			ps[j] = posting{int32(at), tfs[k]}
		}
		if _, dup := nx.dict[t]; dup {
			r.fail("duplicate term")
			return nil, nil, r.err
		}
		nx.dict[t] = int32(len(nx.postings))
		nx.postings = append(nx.postings, ps)
		nx.df = append(nx.df, int32(c))
	}
	if r.err == nil && (len(all) != 0 || len(r.b) != 0) {
		r.fail("end")
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	invertPostings(nx.entries, nx.postings)
	return nx, docStamps, nil
}

// snapshotSuffix names the snapshot beside a database file.
const snapshotSuffix = ".bm25"

// SnapshotPath is the snapshot's file for a database at dbPath ("docmind.db" -> "docmind.db.bm25").
func SnapshotPath(dbPath string) string { return dbPath + snapshotSuffix }
