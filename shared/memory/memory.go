// Package memory is long-term memory per user (DESIGN.md section 11, seed #34): facts the understanding
// step noticed about the user ("role: claims adjuster", "preference: short answers") that later answers
// may use. SQL is the record (soft delete, a supersede chain, an atomic access counter); the key-value
// store caches each user's active memories and is dropped on every change; a vector index (separate from
// the documents') holds copies for recall by similarity, and every hit is reconciled with the active set,
// so a memory invalidated in SQL is never recalled whatever the vector index still holds.
package memory

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/store"
)

// Records is the system of record (sqldb.DB).
type Records interface {
	AddMemory(ctx context.Context, m *rag.Memory, supersedes ...string) error
	ListMemories(ctx context.Context, tenant, user string) ([]rag.Memory, error)
	InvalidateMemories(ctx context.Context, tenant, user string, ids []string) (int, error)
	TouchMemories(ctx context.Context, tenant, user string, ids []string) error
}

// Embedder embeds memories and questions.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Store remembers and recalls.
type Store struct {
	Records  Records
	Vectors  store.VectorIndex // never the documents' index: a memory must not surface as a source
	Embedder Embedder
	KV       store.KV // the active-memory cache (nil: SQL on every recall)
	// Max is how many active memories a user keeps (default 200); above it the lowest-scored are evicted.
	Max int
	// K is how many memories a recall returns at most (default 5); MinScore the cosine a similar memory
	// needs (default 0.25). Profile memories (single-valued kinds) are always recalled.
	K        int
	MinScore float64
	CacheTTL time.Duration // default 10 minutes
	Now      func() time.Time
}

// Kinds. A single-valued kind (a user has one role) supersedes its previous memory; the others
// accumulate.
var (
	singleKinds = []string{"role", "product", "team", "language"}
	multiKinds  = []string{"preference", "fact"}
)

// maxContentRunes bounds what is kept of one hint (the SQL column allows 500).
const maxContentRunes = 300

// ParseHint splits "kind: content"; an unknown or missing kind is "fact".
func ParseHint(h string) (kind, content string) {
	h = strings.Join(strings.Fields(h), " ")
	kind = "fact"
	for _, sep := range []string{":", "："} { // a full-width colon, as Chinese replies write it
		if k, rest, ok := strings.Cut(h, sep); ok {
			k = strings.ToLower(strings.TrimSpace(k))
			if slices.Contains(singleKinds, k) || slices.Contains(multiKinds, k) {
				kind, h = k, strings.TrimSpace(rest)
				break
			}
		}
	}
	if r := []rune(h); len(r) > maxContentRunes {
		h = string(r[:maxContentRunes])
	}
	return kind, h
}

func (s *Store) defaults() (maxN, k int, minScore float64, ttl time.Duration, now time.Time) {
	maxN, k, minScore, ttl = s.Max, s.K, s.MinScore, s.CacheTTL
	if maxN <= 0 {
		maxN = 200
	}
	if k <= 0 {
		k = 5
	}
	if minScore <= 0 {
		minScore = 0.25
	}
	if ttl <= 0 {
		ttl = 10 * time.Minute
	}
	now = time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	return
}

func cacheKey(tenant, user string) string { return "mem:" + tenant + ":" + user }

// active returns the user's active memories: from the cache, else SQL (then cached).
func (s *Store) active(ctx context.Context, tenant, user string) ([]rag.Memory, error) {
	_, _, _, ttl, _ := s.defaults()
	if s.KV != nil {
		if b, err := s.KV.Get(ctx, cacheKey(tenant, user)); err == nil {
			var list []rag.Memory
			if json.Unmarshal(b, &list) == nil {
				return list, nil
			}
		}
	}
	list, err := s.Records.ListMemories(ctx, tenant, user)
	if err != nil {
		return nil, err
	}
	if s.KV != nil {
		if b, err := json.Marshal(list); err == nil {
			_ = s.KV.Set(ctx, cacheKey(tenant, user), b, ttl) // a cache failure only costs a query
		}
	}
	return list, nil
}

// changed drops the user's cached active set (after any write).
func (s *Store) changed(ctx context.Context, tenant, user string) error {
	if s.KV == nil {
		return nil
	}
	return s.KV.Delete(ctx, cacheKey(tenant, user))
}

// Remember stores up to 5 hints and returns how many became memories: a hint equal or nearly equal
// (bigram Jaccard >= 0.85) to an active memory of its kind is skipped; a single-valued kind supersedes
// the user's previous memory of that kind. Eviction runs afterwards.
func (s *Store) Remember(ctx context.Context, tenant, user string, hints []string) (int, error) {
	if len(hints) == 0 {
		return 0, nil
	}
	active, err := s.active(ctx, tenant, user)
	if err != nil {
		return 0, err
	}
	written := 0
	var errs []error
	for _, h := range hints[:min(5, len(hints))] {
		kind, content := ParseHint(h)
		if content == "" || !utf8.ValidString(content) {
			continue
		}
		dup := false
		var supersedes []string
		for _, m := range active {
			if m.Kind != kind {
				continue
			}
			if strings.EqualFold(m.Content, content) || rank.Jaccard(strings.ToLower(m.Content), strings.ToLower(content)) >= 0.85 {
				dup = true
				break
			}
			if slices.Contains(singleKinds, kind) {
				supersedes = append(supersedes, m.ID)
			}
		}
		if dup {
			continue
		}
		m := rag.Memory{Tenant: tenant, User: user, Kind: kind, Content: content}
		if err := s.Records.AddMemory(ctx, &m, supersedes...); err != nil {
			errs = append(errs, err)
			continue
		}
		written++
		active = slices.DeleteFunc(active, func(x rag.Memory) bool { return slices.Contains(supersedes, x.ID) })
		active = append([]rag.Memory{m}, active...)
		// The vector copy: a failure leaves the memory unrecalled by similarity, never wrong.
		if err := s.index(ctx, m); err != nil {
			errs = append(errs, err)
		}
		if len(supersedes) > 0 {
			if err := s.Vectors.Delete(ctx, tenant, supersedes); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if written > 0 {
		if err := s.changed(ctx, tenant, user); err != nil {
			errs = append(errs, err)
		}
		if _, err := s.Evict(ctx, tenant, user); err != nil {
			errs = append(errs, err)
		}
	}
	return written, errors.Join(errs...)
}

// index writes a memory's vector copy. The user id stands in the record's knowledge-base field, so
// that a search is filtered to one user's memories by the same validated filter the documents use.
func (s *Store) index(ctx context.Context, m rag.Memory) error {
	text := m.Content
	if r := []rune(text); len(r) > 200 {
		text = string(r[:200]) // a truncated copy: SQL holds the text
	}
	v, err := s.Embedder.Embed(ctx, []string{m.Kind + ": " + text})
	if err != nil {
		return err
	}
	if err := s.Vectors.Upsert(ctx, []rag.VectorRecord{{ID: m.ID, Tenant: m.Tenant, KBID: m.User, DocumentID: m.ID, ChunkID: m.ID, Vector: v[0]}}); err != nil {
		return err
	}
	return s.Vectors.Flush(ctx)
}

// Score is the seed's retention score: recency (two-week e-folding) plus use.
func Score(m rag.Memory, now time.Time) float64 {
	ageDays := max(0, now.Sub(m.CreatedAt).Hours()/24)
	return math.Exp(-ageDays/14) + 0.5*math.Log1p(float64(m.AccessCount))
}

// Evict invalidates the user's lowest-scored active memories above Max (read from SQL, not the cache,
// for current access counts) and returns how many.
func (s *Store) Evict(ctx context.Context, tenant, user string) (int, error) {
	maxN, _, _, _, now := s.defaults()
	list, err := s.Records.ListMemories(ctx, tenant, user)
	if err != nil || len(list) <= maxN {
		return 0, err
	}
	sort.SliceStable(list, func(i, j int) bool { return Score(list[i], now) > Score(list[j], now) })
	var ids []string
	for _, m := range list[maxN:] {
		ids = append(ids, m.ID)
	}
	n, err := s.Records.InvalidateMemories(ctx, tenant, user, ids)
	if err != nil {
		return 0, err
	}
	return n, errors.Join(s.Vectors.Delete(ctx, tenant, ids), s.changed(ctx, tenant, user))
}

// Recall returns the memories to put in the prompt for question q: the profile (single-valued kinds)
// and up to K others similar to q. Each vector hit is checked against the active set; a hit that is no
// longer active (invalidated or superseded in SQL) is never returned and its stale copy is removed.
// Recalled memories have their access counters raised.
func (s *Store) Recall(ctx context.Context, tenant, user, q string) ([]rag.Memory, error) {
	_, k, minScore, _, _ := s.defaults()
	active, err := s.active(ctx, tenant, user)
	if err != nil || len(active) == 0 {
		return nil, err
	}
	byID := map[string]rag.Memory{}
	var out []rag.Memory
	for _, m := range active {
		byID[m.ID] = m
		if slices.Contains(singleKinds, m.Kind) {
			out = append(out, m)
		}
	}
	v, err := s.Embedder.Embed(ctx, []string{q})
	if err != nil {
		return out, err
	}
	hits, err := s.Vectors.Search(ctx, v[0], 2*k, rag.Filter{Tenant: tenant, KBIDs: []string{user}})
	if err != nil {
		return out, err
	}
	var stale []string
	similar := 0
	for _, h := range hits {
		m, ok := byID[h.ID]
		switch {
		case !ok:
			stale = append(stale, h.ID)
		case float64(h.Score) >= minScore && similar < k && !slices.Contains(singleKinds, m.Kind):
			out = append(out, m)
			similar++
		}
	}
	var errs []error
	if len(stale) > 0 {
		errs = append(errs, s.Vectors.Delete(ctx, tenant, stale))
	}
	if len(out) > 0 {
		ids := make([]string, len(out))
		for i, m := range out {
			ids[i] = m.ID
		}
		errs = append(errs, s.Records.TouchMemories(ctx, tenant, user, ids))
	}
	return out, errors.Join(errs...)
}

// List returns the user's active memories, newest first.
func (s *Store) List(ctx context.Context, tenant, user string) ([]rag.Memory, error) {
	return s.Records.ListMemories(ctx, tenant, user)
}

// Forget invalidates one of the user's memories; NotFound when it is not an active memory of theirs.
func (s *Store) Forget(ctx context.Context, tenant, user, id string) error {
	const op = "memory.Forget"
	if err := rag.ValidateID("memory id", id); err != nil {
		return rag.Errorf(op, rag.KindNotFound, "no memory %q", id)
	}
	n, err := s.Records.InvalidateMemories(ctx, tenant, user, []string{id})
	if err != nil {
		return err
	}
	if n == 0 {
		return rag.Errorf(op, rag.KindNotFound, "no memory %q", id)
	}
	return errors.Join(s.changed(ctx, tenant, user), s.Vectors.Delete(ctx, tenant, []string{id}))
}
