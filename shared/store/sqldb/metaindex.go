package sqldb

import (
	"context"
	"database/sql"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/docmind/docmind/shared/rag"
)

// DefaultMetaIndexBytes bounds the memory of the in-memory metadata index across tenants (about
// 250,000 documents of typical metadata). A tenant whose documents alone exceed it is filtered by
// the SQL scan instead.
const DefaultMetaIndexBytes = 256 << 20

// metaIndex keeps, per tenant, every document's knowledge base, liveness and prepared metadata, so
// that MatchDocuments judges a filter in memory instead of scanning and decoding every row per query
// (issue #23: the scan made a filtered retrieve 5x slower than an unfiltered one at 100k chunks).
//
// Correctness across processes rests on metadata_generations: every write that can change which
// documents a filter selects increments the tenant's generation in its own transaction, and each
// query reads that one row; an index built at another generation is rebuilt from SQL. Writes made
// through this DB are applied in place when the index was current just before them, so a process's
// own writes do not cost a rebuild. Tenants are built lazily on their first filtered query and
// evicted least recently used beyond the byte bound.
type metaIndex struct {
	mu       sync.Mutex
	tenants  map[string]*tenantMeta
	maxBytes int
	tick     uint64
	builds   atomic.Int64
}

type tenantMeta struct {
	mu     sync.Mutex
	gen    int64 // -1: not built
	tooBig bool  // the tenant alone exceeds the bound at gen: use the SQL scan
	// rows in id order while sorted (a filter's answer comes out in id order without a sort); a
	// document added in place is appended and the order restored before the next query
	rows []metaRow
	pos  map[string]int32 // id -> index in rows
	kbs  map[string]int32 // knowledge base id -> small number, so a row compares an int
	keys *rag.MetaKeys    // the numbering of the rows' metadata keys
	// the column view of rows and, per knowledge base, its live rows: built on the first query after
	// a change (nil until then), shared by every query until the next change
	cols *rag.MetaColumns
	live [][]uint64
	// facets described from cols, by knowledge bases and top (MetadataFacets): filter inference asks
	// on every question, and the answer changes only with cols
	facets   map[string][]rag.MetaFacet
	facetsOf *rag.MetaColumns
	// answers holds the filters answered since the column view was built, by knowledge bases and
	// filter (rag.MetaFilter.CacheKey): the same filter asked again returns the same slice, so the
	// retrieval legs, which cache their translation of a restriction by its ids (rag.DocBits), find
	// it at once, and nothing is allocated per query. Dropped with the column view on any change.
	answers map[string]metaAnswer
	cached  int // ids held by answers
	sorted  bool
	dead    int    // removed rows still in rows
	size    int    // bytes of rows, guarded by mu
	bytes   int    // size as last accounted, guarded by metaIndex.mu
	lastUse uint64 // guarded by metaIndex.mu
}

type metaRow struct {
	id      string
	num     int32 // the id's process-wide document number (rag.DocNumber), -1 for a malformed id
	kb      int32
	live    bool // not being deleted
	removed bool // no longer a document (a tombstone until the rows are compacted)
	meta    rag.MetaDoc
}

// bytes estimates a row's share of the index: the row, and about as much again in the column view.
func (r *metaRow) bytes() int { return len(r.id) + 16 + 2*r.meta.Size() }

// reset empties e for a build at gen.
func (e *tenantMeta) reset(gen int64) {
	e.gen, e.tooBig, e.rows, e.pos, e.kbs, e.keys, e.sorted, e.dead, e.size = gen, false, nil, map[string]int32{}, map[string]int32{}, rag.NewMetaKeys(), true, 0, 0
	e.cols, e.live = nil, nil
}

// kb returns the knowledge base's number, assigning one.
func (e *tenantMeta) kb(id string) int32 {
	n, ok := e.kbs[id]
	if !ok {
		n = int32(len(e.kbs))
		e.kbs[id] = n
	}
	return n
}

// get returns a document's row.
func (e *tenantMeta) get(id string) (*metaRow, bool) {
	p, ok := e.pos[id]
	if !ok {
		return nil, false
	}
	return &e.rows[p], true
}

// put adds or replaces a document's row.
func (e *tenantMeta) put(r metaRow) {
	e.cols = nil
	r.num = rag.DocNumber(r.id)
	if old, ok := e.get(r.id); ok {
		e.size += r.bytes() - old.bytes()
		*old = r
		return
	}
	if n := len(e.rows); n > 0 && e.rows[n-1].id > r.id {
		e.sorted = false
	}
	e.pos[r.id] = int32(len(e.rows))
	e.rows = append(e.rows, r)
	e.size += r.bytes()
}

// remove drops a document's row, if any.
func (e *tenantMeta) remove(id string) {
	if r, ok := e.get(id); ok {
		e.cols = nil
		e.size -= r.bytes()
		r.removed, r.live, r.meta = true, false, rag.MetaDoc{}
		delete(e.pos, id)
		e.dead++
	}
}

// view readies the rows for a query: id order restored, tombstones dropped once they are a quarter
// of the rows, and the column view and live masks rebuilt if a change dropped them.
func (e *tenantMeta) view() {
	if !e.sorted || e.dead > len(e.rows)/4 {
		e.rows = slices.DeleteFunc(e.rows, func(r metaRow) bool { return r.removed })
		slices.SortFunc(e.rows, func(a, b metaRow) int { return strings.Compare(a.id, b.id) })
		for i := range e.rows {
			e.pos[e.rows[i].id] = int32(i)
		}
		e.sorted, e.dead, e.cols = true, 0, nil
	}
	if e.cols != nil {
		return
	}
	e.answers, e.cached = map[string]metaAnswer{}, 0
	docs := make([]rag.MetaDoc, len(e.rows))
	words := (len(e.rows) + 63) / 64
	e.live = make([][]uint64, len(e.kbs))
	for i := range e.rows {
		r := &e.rows[i]
		docs[i] = r.meta
		if r.live {
			if e.live[r.kb] == nil {
				e.live[r.kb] = make([]uint64, words)
			}
			e.live[r.kb][i/64] |= 1 << (i % 64)
		}
	}
	e.cols = e.keys.Columns(docs)
}

func newMetaIndex(maxBytes int) *metaIndex {
	return &metaIndex{tenants: map[string]*tenantMeta{}, maxBytes: maxBytes}
}

// SetMetaIndexLimit sets the metadata index's memory bound in bytes (DefaultMetaIndexBytes unless
// set); 0 turns the index off, so every filter is judged by the SQL scan.
func (s *DB) SetMetaIndexLimit(bytes int) {
	s.meta.mu.Lock()
	defer s.meta.mu.Unlock()
	s.meta.maxBytes = bytes
	s.meta.tenants = map[string]*tenantMeta{}
}

// MetaIndexBuilds counts the metadata index's builds from SQL since the DB was opened (a build per
// tenant on first use and after another process wrote; a write through this DB updates in place).
func (s *DB) MetaIndexBuilds() int64 { return s.meta.builds.Load() }

// entry returns the tenant's index entry, creating an unbuilt one; nil when the index is off.
func (ix *metaIndex) entry(tenant string) *tenantMeta {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.maxBytes <= 0 {
		return nil
	}
	e := ix.tenants[tenant]
	if e == nil {
		e = &tenantMeta{gen: -1}
		ix.tenants[tenant] = e
	}
	ix.tick++
	e.lastUse = ix.tick
	return e
}

// peek returns the tenant's entry if there is one (writes never create one).
func (ix *metaIndex) peek(tenant string) *tenantMeta {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.tenants[tenant]
}

// account records e's new size and evicts the least recently used other tenants while the total
// exceeds the bound.
func (ix *metaIndex) account(keep *tenantMeta, size int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	keep.bytes = size
	total := 0
	for _, e := range ix.tenants {
		total += e.bytes
	}
	for total > ix.maxBytes {
		var victim string
		var oldest *tenantMeta
		for t, e := range ix.tenants {
			if e != keep && e.bytes > 0 && (oldest == nil || e.lastUse < oldest.lastUse) {
				victim, oldest = t, e
			}
		}
		if oldest == nil {
			return
		}
		total -= oldest.bytes
		delete(ix.tenants, victim)
	}
}

// metaGeneration reads the tenant's generation (0 before the first write).
func metaGeneration(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, tenant string) (int64, error) {
	var g int64
	err := q.QueryRowContext(ctx, `SELECT generation FROM metadata_generations WHERE tenant_id = ?`, tenant).Scan(&g)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	return g, err
}

// bumpMetaGeneration increments the tenant's generation inside tx and returns the new value. Call it
// last in a transaction (after any knowledge-base row locks) so that writers lock in one order.
func (s *DB) bumpMetaGeneration(ctx context.Context, tx *sql.Tx, tenant string) (int64, error) {
	q := `INSERT INTO metadata_generations (tenant_id, generation) VALUES (?, 1)
		ON CONFLICT (tenant_id) DO UPDATE SET generation = generation + 1`
	if s.dialect.Name == "mysql" {
		q = `INSERT INTO metadata_generations (tenant_id, generation) VALUES (?, 1)
		ON DUPLICATE KEY UPDATE generation = generation + 1`
	}
	if _, err := tx.ExecContext(ctx, q, tenant); err != nil {
		return 0, err
	}
	return metaGeneration(ctx, tx, tenant)
}

// metaChange is a committed write applied in place to a current index.
type metaChange func(e *tenantMeta)

// applyMeta applies a write committed at generation gen: in place when the index was built at
// gen-1 (nothing else wrote in between), nothing when it already reflects gen, otherwise the entry
// is marked unbuilt and the next query rebuilds it.
func (s *DB) applyMeta(tenant string, gen int64, change metaChange) {
	e := s.meta.peek(tenant)
	if e == nil {
		return
	}
	e.mu.Lock()
	switch {
	case e.gen == gen:
	case e.gen == gen-1 && !e.tooBig:
		change(e)
		e.gen = gen
		size := e.size
		e.mu.Unlock()
		s.meta.account(e, size)
		return
	default:
		e.reset(-1)
	}
	e.mu.Unlock()
}

// matchIndexed judges f with the tenant's index; ok is false when the index is off or the tenant is
// too big for it (the caller scans in SQL).
func (s *DB) matchIndexed(ctx context.Context, tenant string, kbIDs []string, f *rag.MetaFilter) (ids []string, ok bool, err error) {
	ok, err = s.withMetaIndex(ctx, tenant, func(e *tenantMeta) {
		key := strings.Join(slices.Compact(slices.Sorted(slices.Values(kbIDs))), ",") + "\x00" + f.CacheKey()
		if cached, hit := e.answers[key]; hit {
			ids = cached.ids
			if cached.shared != nil {
				rag.RegisterRestriction(cached.ids, cached.shared) // again: the legs may miss it by now
			}
			return
		}
		pass := f.Compile(e.keys).Eval(e.cols)
		mask := e.liveMask(kbIDs, len(pass))
		for i := range pass {
			pass[i] &= mask[i]
		}
		a := e.answer(pass)
		// bounded: at most 64 answers holding four ids per document, then the cache starts over
		if len(e.answers) >= 64 || e.cached+len(a.ids) > 4*len(e.rows)+1024 {
			e.answers, e.cached = map[string]metaAnswer{}, 0
		}
		e.answers[key], e.cached = a, e.cached+len(a.ids)
		ids = a.ids
	})
	return ids, ok, err
}

// metaAnswer is a filter's passing documents: their ids in id order and, when every one is a
// well-formed id, the same set as a bitset over the process-wide document numbering, registered with
// rag.RegisterRestriction so that the retrieval legs translate it without reading the ids.
type metaAnswer struct {
	ids    []string
	shared []uint64
}

// answer lists the rows set in pass and registers them as a restriction.
func (e *tenantMeta) answer(pass []uint64) metaAnswer {
	n := 0
	for _, w := range pass {
		n += bits.OnesCount64(w)
	}
	a := metaAnswer{ids: make([]string, 0, n), shared: make([]uint64, rag.DocNumbers()/64+1)}
	rag.Rows(pass, func(row int) {
		r := &e.rows[row]
		a.ids = append(a.ids, r.id)
		if r.num < 0 || int(r.num/64) >= len(a.shared) {
			a.shared = nil // a malformed id: the legs refuse it, id by id
		}
		if a.shared != nil {
			a.shared[r.num/64] |= 1 << (r.num % 64)
		}
	})
	if a.shared != nil {
		rag.RegisterRestriction(a.ids, a.shared)
	}
	return a
}

// buildMeta loads the tenant's documents and metadata into e, recording gen, the generation read
// before the rows: a write committed in between is then either in the rows or seen as a newer
// generation by the next query, never lost. Called with e.mu held.
func (s *DB) buildMeta(ctx context.Context, tenant string, gen int64, e *tenantMeta) error {
	s.meta.builds.Add(1)
	rows, err := s.db.QueryContext(ctx, `SELECT d.id, d.kb_id, d.status, COALESCE(m.metadata, '') FROM documents d
		LEFT JOIN document_metadata m ON m.tenant_id = d.tenant_id AND m.document_id = d.id
		WHERE d.tenant_id = ?`, tenant)
	if err != nil {
		return err
	}
	defer rows.Close()
	s.meta.mu.Lock()
	limit := s.meta.maxBytes
	s.meta.mu.Unlock()
	e.reset(-1) // unusable until complete
	for rows.Next() {
		var id, kb, status, raw string
		if err := rows.Scan(&id, &kb, &status, &raw); err != nil {
			return err
		}
		e.put(metaRow{id: id, kb: e.kb(kb), live: status != rag.StatusDeleted, meta: e.keys.Prepare(decodeMetadata(raw))})
		if e.size > limit {
			e.reset(gen)
			e.tooBig = true
			s.meta.account(e, 0)
			return nil
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	e.gen = gen
	s.meta.account(e, e.size)
	return nil
}
