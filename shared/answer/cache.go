package answer

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store"
)

// SemanticCache replays an earlier answer to the same question (DESIGN.md steps 4 and 15). Its scope is
// the tenant, the exact set of knowledge bases the question may read, and each one's version: any change
// to a knowledge base bumps its version, so every entry built from the old text becomes unreachable (and
// expires with its TTL). An answer is stored only once its question has been asked at least twice in
// the scope, and only when it is grounded (not a fallback, not degraded, band above LOW).
type SemanticCache struct {
	KV       store.KV
	Embedder retrieve.Embedder
	Catalog  Catalog
	// Threshold is the cosine similarity for a hit (default 0.92); TTL bounds an entry's life (default
	// 24 h); MaxEntries bounds one scope (default 200, oldest evicted).
	Threshold  float64
	TTL        time.Duration
	MaxEntries int
}

type cacheEntry struct {
	Question string    `json:"q"`
	Vector   []float32 `json:"v"`
	Done     Done      `json:"done"`
	At       int64     `json:"at"` // unix nanoseconds
	// StageMS is the first answer's timeline, replayed as the origin's (Done.StageMS is the replay's own).
	StageMS map[string]int64 `json:"stage_ms,omitempty"`
	// Turn is where the first answer was stored: the asker, the conversation and the message.
	Turn Turn `json:"turn,omitzero"`
}

// Turn is where an answer was first given: its asker, and the conversation and message it was stored
// as (empty when it was not stored, as for docmind ask).
type Turn struct {
	User           string `json:"user,omitempty"`
	ConversationID string `json:"conversation_id,omitempty"`
	MessageID      string `json:"message_id,omitempty"`
}

// TurnOf is where req's answer will be stored.
func TurnOf(req Request) Turn {
	return Turn{User: req.User, ConversationID: req.ConversationID, MessageID: req.MessageID}
}

func (c *SemanticCache) defaults() (float64, time.Duration, int) {
	th, ttl, n := c.Threshold, c.TTL, c.MaxEntries
	if th <= 0 || th > 1 {
		th = 0.92
	}
	if ttl <= 0 {
		ttl = 24 * time.Hour
	}
	if n <= 0 {
		n = 200
	}
	return th, ttl, n
}

// scope returns the cache key of the request's scope: tenant, sorted KB ids and their versions, the
// selected documents, and the generation (model and prompts).
func (c *SemanticCache) scope(ctx context.Context, req Request, generation string) (string, error) {
	kbs, err := c.Catalog.ListKBs(ctx, req.Tenant)
	if err != nil {
		return "", err
	}
	// The scope names the requested ids themselves (every KB of the tenant when none is named), so two
	// different sets can never share a key, even if one names an id the catalog does not list.
	versions := map[string]string{}
	var ids []string
	for _, kb := range kbs {
		versions[kb.ID] = fmt.Sprint(kb.Version)
		ids = append(ids, kb.ID)
	}
	if len(req.KBIDs) > 0 {
		ids = req.KBIDs
	}
	var parts []string
	for _, id := range ids {
		v, ok := versions[id]
		if !ok {
			v = "unknown"
		}
		parts = append(parts, id+"@"+v)
	}
	slices.Sort(parts)
	parts = slices.Compact(parts)
	// Selected documents narrow the scope: their answers must never serve the whole set, nor the reverse.
	docs := slices.Clone(req.DocumentIDs)
	slices.Sort(docs)
	docs = append(docs, "restrict:"+restrictKey(req)) // a filtered answer never serves an unfiltered question
	h := sha256.Sum256([]byte(req.Tenant + "\x00" + strings.Join(parts, ",") + "\x00" + strings.Join(docs, ",") + "\x00" + generation))
	return "semcache:" + req.Tenant + ":" + hex.EncodeToString(h[:16]), nil
}

func normalise(q string) string { return strings.ToLower(lang.OneLine(q)) }

// Lookup returns the cached answer for q, or nil. vec is the question's embedding, kept for Store.
// generation names what writes answers (RELIABILITY SR-05): a cached answer is replayed only to the
// same model and prompt templates that wrote it.
func (c *SemanticCache) Lookup(ctx context.Context, req Request, q, generation string) (*Done, []float32, string, error) {
	th, _, _ := c.defaults()
	key, err := c.scope(ctx, req, generation)
	if err != nil {
		return nil, nil, "", err
	}
	vecs, err := c.Embedder.Embed(ctx, []string{q})
	if err != nil || len(vecs) != 1 {
		return nil, nil, key, fmt.Errorf("answer: cache embedding: %w", err)
	}
	entries, err := c.KV.HGetAll(ctx, key)
	if err != nil {
		return nil, vecs[0], key, err
	}
	var best *cacheEntry
	bestSim := th
	for _, raw := range entries {
		var e cacheEntry
		if json.Unmarshal(raw, &e) != nil {
			continue // a damaged entry is a miss, never an error
		}
		if sim := cosine(vecs[0], e.Vector); sim >= bestSim {
			best, bestSim = &e, sim
		}
	}
	if best == nil {
		return nil, vecs[0], key, nil
	}
	best.Done.Cached = &CacheOrigin{Question: best.Question, AnsweredAt: time.Unix(0, best.At).UTC(), StageMS: best.StageMS,
		Path: best.Done.Path, Band: best.Done.Confidence.Band, Abstained: best.Done.Abstained}
	if t := best.Turn; t.MessageID != "" && t.User != "" && t.User == req.User {
		// the asker's own earlier turn is named, so that it can be opened; another user's turn is theirs:
		// its question is the shared answer's, where it was asked is not
		best.Done.Cached.ConversationID, best.Done.Cached.MessageID = t.ConversationID, t.MessageID
	}
	return &best.Done, vecs[0], key, nil
}

// CacheOrigin says which earlier turn a cached answer replays: the question it answered, when, that
// turn's steps with their milliseconds (the replay itself has one step, the cache lookup), its path,
// confidence band and abstention, and, when the asker asked it, the conversation and message it is
// stored as. It is done's cached field and the payload of the cached event, the replay's timeline.
type CacheOrigin struct {
	Question       string           `json:"question"`
	AnsweredAt     time.Time        `json:"answered_at"`
	StageMS        map[string]int64 `json:"stage_ms"`
	Path           string           `json:"path,omitempty"`
	Band           string           `json:"band,omitempty"`
	Abstained      bool             `json:"abstained,omitempty"`
	ConversationID string           `json:"conversation_id,omitempty"`
	MessageID      string           `json:"message_id,omitempty"`
}

// Record counts the question in its scope and stores the answer when it qualifies.
func (c *SemanticCache) Record(ctx context.Context, key, q string, vec []float32, d *Done, turn Turn) error {
	_, ttl, maxN := c.defaults()
	if key == "" || vec == nil {
		return nil
	}
	h := sha256.Sum256([]byte(normalise(q)))
	asked, err := c.KV.IncrBy(ctx, key+":asked:"+hex.EncodeToString(h[:12]), 1, ttl)
	if err != nil {
		return err
	}
	if asked < 2 || !cacheable(d) {
		return nil
	}
	stored := *d
	stored.ConversationID, stored.MessageID, stored.StageMS = "", "", nil
	b, err := json.Marshal(cacheEntry{Question: q, Vector: vec, Done: stored, At: time.Now().UnixNano(), StageMS: d.StageMS, Turn: turn})
	if err != nil {
		return err
	}
	if err := c.KV.HSet(ctx, key, map[string][]byte{hex.EncodeToString(h[:12]): b}); err != nil {
		return err
	}
	if err := c.KV.Expire(ctx, key, ttl); err != nil && !rag.Is(err, rag.KindNotFound) {
		return err
	}
	return c.evict(ctx, key, maxN)
}

// evict keeps the newest maxN entries of a scope.
func (c *SemanticCache) evict(ctx context.Context, key string, maxN int) error {
	entries, err := c.KV.HGetAll(ctx, key)
	if err != nil || len(entries) <= maxN {
		return err
	}
	type aged struct {
		field string
		at    int64
	}
	var all []aged
	for f, raw := range entries {
		var e cacheEntry
		_ = json.Unmarshal(raw, &e)
		all = append(all, aged{f, e.At})
	}
	slices.SortFunc(all, func(a, b aged) int { // newest first
		return cmp.Or(cmp.Compare(b.at, a.at), strings.Compare(a.field, b.field))
	})
	var drop []string
	for _, a := range all[maxN:] {
		drop = append(drop, a.field)
	}
	return c.KV.HDel(ctx, key, drop...)
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// cacheable: a grounded (every cited sentence supported), complete, impersonal answer made the usual way. The offline answerer ("llm" degraded with
// no fallback reason) is the configured state and may be cached; a transient failure may not.
func cacheable(d *Done) bool {
	// An answer that used what is remembered about its asker is theirs alone: never shared.
	if d.IsFallback || d.Truncated || d.Partial || d.ShortCircuit != "" || d.FallbackReason != "" || d.FromCache || d.MemoriesUsed > 0 {
		return false
	}
	// Grounded: every cited sentence is supported and no citation points nowhere. A calibrated band says
	// how often answers like this are right, not whether this one is grounded, and the replay carries
	// the same band; the uncalibrated score still stands for grounding and keeps its gate.
	if d.Abstained {
		// "the documents do not say" holds until a knowledge base changes (its version is in the key),
		// and is replayed as an abstention, citing nothing
		return d.Answerer == "extractive" && onlyOffline(d)
	}
	if len(d.Claims) == 0 || d.Confidence.Supported < 1 || d.Confidence.Invalid > 0 {
		return false
	}
	if !d.Confidence.Calibrated && d.Confidence.Band != BandHigh && d.Confidence.Band != BandMedium {
		return false
	}
	return onlyOffline(d)
}

// onlyOffline reports whether nothing failed but the model's absence (the configured offline state).
func onlyOffline(d *Done) bool {
	for _, c := range d.Degraded {
		if c != "llm" {
			return false
		}
	}
	return true
}
