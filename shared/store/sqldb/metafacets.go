package sqldb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// MetadataFacets describes the metadata of the live documents of the tenant's knowledge bases kbIDs:
// every key with its type, how many documents have it and its top most common values
// (rag.MetaColumns.Facets), keys with most documents first. Empty when no document has metadata.
// kbIDs must not be empty: the caller has already resolved which knowledge bases the principal may
// read. Read from the in-memory metadata index (as MatchDocuments), or by a scan where the index is
// off or the tenant too big for it.
func (s *DB) MetadataFacets(ctx context.Context, tenant string, kbIDs []string, top int) ([]rag.MetaFacet, error) {
	const op = "sqldb.MetadataFacets"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	if len(kbIDs) == 0 {
		return nil, rag.Errorf(op, rag.KindInvalid, "no knowledge bases to describe")
	}
	if err := rag.ValidateIDs("kb id", kbIDs); err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	var out []rag.MetaFacet
	ok, err := s.withMetaIndex(ctx, tenant, func(e *tenantMeta) {
		if e.facetsOf != e.cols || len(e.facets) >= maxFacetSets {
			e.facets, e.facetsOf = map[string][]rag.MetaFacet{}, e.cols
		}
		key := strings.Join(slices.Compact(slices.Sorted(slices.Values(kbIDs))), ",") + "|" + strconv.Itoa(top)
		cached, ok := e.facets[key]
		if !ok {
			cached = e.cols.Facets(e.keys, e.liveMask(kbIDs, (len(e.rows)+63)/64), top)
			e.facets[key] = cached
		}
		out = cloneFacets(cached)
	})
	if err != nil || ok {
		return nonNil(out), s.classify(op, err)
	}
	return s.facetsScan(ctx, tenant, kbIDs, top, nil)
}

// MetadataFacetsExcept is MetadataFacets over the live documents of kbIDs other than except (ids):
// what a caller whose access lists deny those documents (shared/access) may see, so that a value only
// a denied document holds is neither suggested nor counted. With nothing excepted it is
// MetadataFacets. Otherwise the same column view is described under a narrower mask; the answer is
// kept beside MetadataFacets' by the set of documents excepted (every member outside HR is denied the
// same HR pages: one description serves them all), dropped with the view on any change.
func (s *DB) MetadataFacetsExcept(ctx context.Context, tenant string, kbIDs []string, top int, except []string) ([]rag.MetaFacet, error) {
	if len(except) == 0 {
		return s.MetadataFacets(ctx, tenant, kbIDs, top)
	}
	return s.facetsNarrowed(ctx, tenant, kbIDs, top, except, false)
}

// MetadataFacetsOf is MetadataFacets over the live documents of kbIDs among only (ids): for filter
// inference, the documents a question may read (its restriction, which already leaves out what the
// caller's access lists deny). An empty only describes no document. Kept as MetadataFacetsExcept's
// answers are, by the set of documents.
func (s *DB) MetadataFacetsOf(ctx context.Context, tenant string, kbIDs []string, top int, only []string) ([]rag.MetaFacet, error) {
	return s.facetsNarrowed(ctx, tenant, kbIDs, top, only, true)
}

// facetsNarrowed describes the live documents of kbIDs among ids (only) or other than ids.
func (s *DB) facetsNarrowed(ctx context.Context, tenant string, kbIDs []string, top int, ids []string, only bool) ([]rag.MetaFacet, error) {
	const op = "sqldb.MetadataFacets"
	if err := validIDs(op, "tenant", tenant); err != nil {
		return nil, err
	}
	if len(kbIDs) == 0 {
		return nil, rag.Errorf(op, rag.KindInvalid, "no knowledge bases to describe")
	}
	if err := rag.ValidateIDs("kb id", kbIDs); err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	mode := "except"
	if only {
		mode = "only"
	}
	var out []rag.MetaFacet
	ok, err := s.withMetaIndex(ctx, tenant, func(e *tenantMeta) {
		if e.facetsOf != e.cols || len(e.facets) >= maxFacetSets {
			e.facets, e.facetsOf = map[string][]rag.MetaFacet{}, e.cols
		}
		key := strings.Join(slices.Compact(slices.Sorted(slices.Values(kbIDs))), ",") + "|" + strconv.Itoa(top) + "|" + mode + ":" + idsKey(ids)
		cached, ok := e.facets[key]
		if !ok {
			words := (len(e.rows) + 63) / 64
			mask := e.liveMask(kbIDs, words)
			sel := make([]uint64, words)
			for _, id := range ids {
				if i, ok := e.pos[id]; ok && int(i) < len(e.rows) {
					sel[i/64] |= 1 << (i % 64)
				}
			}
			for i := range mask {
				if only {
					mask[i] &= sel[i]
				} else {
					mask[i] &^= sel[i]
				}
			}
			cached = e.cols.Facets(e.keys, mask, top)
			e.facets[key] = cached
		}
		out = cloneFacets(cached)
	})
	if err != nil || ok {
		return nonNil(out), s.classify(op, err)
	}
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[id] = true
	}
	return s.facetsScan(ctx, tenant, kbIDs, top, func(id string) bool { return set[id] == only })
}

// idsKey names a set of document ids in a facet set's key: a digest of the sorted ids, without a
// copy when they come sorted (a restriction is in id order).
func idsKey(ids []string) string {
	if !slices.IsSorted(ids) {
		ids = slices.Sorted(slices.Values(ids))
	}
	n := 0
	for _, id := range ids {
		n += len(id) + 1
	}
	buf := make([]byte, 0, n)
	for i, id := range ids {
		if i == 0 || ids[i-1] != id {
			buf = append(append(buf, id...), 0)
		}
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// maxFacetSets bounds the facet sets kept per tenant (one per set of knowledge bases asked).
const maxFacetSets = 64

// cloneFacets copies what a caller may change (the slices), so the kept set stays as computed.
func cloneFacets(f []rag.MetaFacet) []rag.MetaFacet {
	out := slices.Clone(f)
	for i := range out {
		out[i].Values = slices.Clone(out[i].Values)
	}
	return out
}

func nonNil(f []rag.MetaFacet) []rag.MetaFacet {
	if f == nil {
		return []rag.MetaFacet{}
	}
	return f
}

// facetsScan is MetadataFacets over a column view built for this call from a scan of the rows, of the
// documents keep lets through (nil: all).
func (s *DB) facetsScan(ctx context.Context, tenant string, kbIDs []string, top int, keep func(id string) bool) ([]rag.MetaFacet, error) {
	const op = "sqldb.MetadataFacets"
	args := []any{tenant}
	for _, id := range kbIDs {
		args = append(args, id)
	}
	args = append(args, rag.StatusDeleted)
	rows, err := s.db.QueryContext(ctx, `SELECT d.id, COALESCE(m.metadata, '') FROM documents d
		LEFT JOIN document_metadata m ON m.tenant_id = d.tenant_id AND m.document_id = d.id
		WHERE d.tenant_id = ? AND d.kb_id IN (?`+strings.Repeat(", ?", len(kbIDs)-1)+`) AND d.status <> ?`, args...)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer rows.Close()
	keys := rag.NewMetaKeys()
	var docs []rag.MetaDoc
	for rows.Next() {
		var id, raw string
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, s.classify(op, err)
		}
		if keep != nil && !keep(id) {
			continue
		}
		docs = append(docs, keys.Prepare(decodeMetadata(raw)))
	}
	if err := rows.Err(); err != nil {
		return nil, s.classify(op, err)
	}
	mask := make([]uint64, (len(docs)+63)/64)
	for i := range docs {
		mask[i/64] |= 1 << (i % 64)
	}
	return nonNil(keys.Columns(docs).Facets(keys, mask, top)), nil
}

// withMetaIndex runs fn over the tenant's current index, its view ready, with the tenant's lock held;
// ok is false (fn not run) when the index is off or the tenant too big for it.
func (s *DB) withMetaIndex(ctx context.Context, tenant string, fn func(e *tenantMeta)) (ok bool, err error) {
	e := s.meta.entry(tenant)
	if e == nil {
		return false, nil
	}
	gen, err := metaGeneration(ctx, s.db, tenant)
	if err != nil {
		return false, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.gen != gen {
		if err := s.buildMeta(ctx, tenant, gen, e); err != nil {
			return false, err
		}
	}
	if e.tooBig {
		return false, nil
	}
	e.view()
	fn(e)
	return true, nil
}

// liveMask is the live rows of the knowledge bases asked, as a bitset of words words. Called after
// view.
func (e *tenantMeta) liveMask(kbIDs []string, words int) []uint64 {
	mask := make([]uint64, words)
	for _, kb := range slices.Compact(slices.Sorted(slices.Values(kbIDs))) {
		if n, ok := e.kbs[kb]; ok && e.live[n] != nil {
			for i, w := range e.live[n] {
				mask[i] |= w
			}
		}
	}
	return mask
}
