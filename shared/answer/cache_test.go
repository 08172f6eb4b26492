package answer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store/memkv"
)

type versionedCatalog struct{ version int64 }

func (v *versionedCatalog) ListKBs(_ context.Context, tenant string) ([]rag.KnowledgeBase, error) {
	return []rag.KnowledgeBase{{ID: "kb_1", Tenant: tenant, Version: v.version}, {ID: "kb_2", Tenant: tenant}}, nil
}

func (v *versionedCatalog) ListDocuments(context.Context, string, string, string) ([]rag.Document, error) {
	return nil, nil
}

type countingRetriever struct {
	fakeRetriever
	calls int
}

func (c *countingRetriever) Retrieve(ctx context.Context, q retrieve.Query) (*retrieve.Result, error) {
	c.calls++
	return c.fakeRetriever.Retrieve(ctx, q)
}

func TestSemanticCache(t *testing.T) {
	good := &retrieve.Result{Evidence: []rank.Evidence{ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 0.9)},
		Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.9}}
	r := &countingRetriever{fakeRetriever: fakeRetriever{res: good}}
	cat := &versionedCatalog{version: 1}
	kv := memkv.New(nil, 1000)
	// uncalibrated: only HIGH and MEDIUM answers are cached, and this test is about the cache, not about
	// how the shipped calibration rates a one-line toy answer
	p := &Pipeline{Retriever: r, Cache: &SemanticCache{KV: kv, Embedder: embed.NewOffline(256), Catalog: cat}, Calibration: Calibrations{}}
	ask := func(tenant, q string, kbs ...string) (*Done, []string) {
		t.Helper()
		var rec recorder
		d, err := p.Run(context.Background(), Request{Tenant: tenant, KBIDs: kbs, Question: q}, rec.emit)
		if err != nil {
			t.Fatal(err)
		}
		return d, rec.names
	}
	const q = "How many days of paid annual leave do full-time employees get?"
	first, _ := ask("acme", q, "kb_1")
	if r.got.Vector == nil {
		t.Fatal("the question's cache embedding must be handed to retrieval, not computed twice")
	}
	second, _ := ask("acme", q, "kb_1")
	if first.FromCache || second.FromCache || r.calls != 2 {
		t.Fatalf("an answer is cached only once its question was asked twice (calls %d)", r.calls)
	}
	third, names := ask("acme", "how many days of PAID annual leave do full-time employees get", "kb_1")
	if !third.FromCache || r.calls != 2 || third.Answer != second.Answer || third.Confidence.Score != second.Confidence.Score || third.Confidence.Band != second.Confidence.Band || len(third.Sources) != 1 {
		t.Fatalf("hit: from_cache %v, calls %d, done %+v", third.FromCache, r.calls, third)
	}
	// the second answer was MEDIUM with a warning: the replay keeps the warning, the claims, and says
	// which turn it replays
	if seq := strings.Join(names, " "); !strings.HasPrefix(seq, "cached start token") || !strings.HasSuffix(seq, "token confidence_warning") || second.Confidence.Band != BandMedium {
		t.Fatalf("a cache hit of a %s answer streams cached start token* confidence_warning (and the edge done): %q", second.Confidence.Band, seq)
	}
	if third.Cached == nil || third.Cached.Question != q || third.Cached.AnsweredAt.IsZero() || third.Cached.StageMS["retrieval"] < 0 || len(third.Cached.StageMS) < 2 ||
		len(third.Claims) != len(second.Claims) || len(third.Claims) == 0 || len(third.StageMS) != 1 {
		t.Fatalf("replay origin %+v, claims %d (first given %d), stage_ms %v", third.Cached, len(third.Claims), len(second.Claims), third.StageMS)
	}
	// Another scope is another cache: a different KB set, another tenant.
	for _, c := range []struct {
		tenant string
		kbs    []string
	}{{"acme", []string{"kb_1", "kb_2"}}, {"acme", nil}, {"globex", []string{"kb_1"}}} {
		if d, _ := ask(c.tenant, q, c.kbs...); d.FromCache {
			t.Errorf("scope %+v hit another scope's entry", c)
		}
	}
	// Selecting documents is another scope too.
	if d, err := p.Run(context.Background(), Request{Tenant: "acme", KBIDs: []string{"kb_1"}, DocumentIDs: []string{"doc_a"}, Question: q}, (&recorder{}).emit); err != nil || d.FromCache {
		t.Fatalf("a selected-document question hit the whole knowledge base's entry: %v", err)
	}
	// A change to a knowledge base in scope invalidates its entries.
	cat.version = 2
	if d, _ := ask("acme", q, "kb_1"); d.FromCache {
		t.Fatal("a KB version bump must invalidate the cache")
	}
	// An unrelated question is a miss.
	if d, _ := ask("acme", "What is the travel policy for flights?", "kb_1"); d.FromCache {
		t.Fatal("an unrelated question hit the cache")
	}
	// CACHE-02: an answer that used one user's memories is never replayed to another, and a question
	// inside a conversation neither reads nor writes the cache.
	const personal = "Which claims forms should I use for travel insurance?"
	p.LLM, p.Memory = &fakeLLM{deltas: []string{"Use form HR-17 [1]."}}, &fakeMemory{recalled: []rag.Memory{{Kind: "role", Content: "claims adjuster"}}}
	for range 3 {
		d, err := p.Run(context.Background(), Request{Tenant: "acme", User: "alice", KBIDs: []string{"kb_1"}, Question: personal}, (&recorder{}).emit)
		if err != nil || d.FromCache || d.MemoriesUsed != 1 {
			t.Fatalf("alice: %+v %v", d, err)
		}
	}
	p.Memory = nil
	if d, _ := ask("acme", personal, "kb_1"); d.FromCache {
		t.Fatal("bob got an answer built with alice's memories")
	}
	calls := r.calls
	for range 3 {
		d, err := p.Run(context.Background(), Request{Tenant: "acme", KBIDs: []string{"kb_1"}, Question: q,
			History: []llm.Message{{Role: "user", Content: "Tell me about part-time staff."}, {Role: "assistant", Content: "They work under 30 hours."}}}, (&recorder{}).emit)
		if err != nil || d.FromCache {
			t.Fatalf("a question with history hit the cache: %+v %v", d, err)
		}
	}
	if r.calls != calls+3 {
		t.Fatalf("questions with history retrieved %d times, want 3", r.calls-calls)
	}
	p.LLM = nil
	// LOW answers are never stored.
	r.res = &retrieve.Result{Grade: rank.Grade{Tier: rank.TierLow, NoEvidence: true}}
	for range 3 {
		if d, _ := ask("acme", "quantum gravity?", "kb_1"); d.FromCache {
			t.Fatal("a fallback answer was cached")
		}
	}
}

func TestCacheable(t *testing.T) {
	grounded := []Claim{{Sentence: "s", Citations: []int{1}, Supported: true}}
	ok := Done{Confidence: Confidence{Band: BandHigh, Supported: 1}, Degraded: []string{"llm"}, Claims: grounded}
	if !cacheable(&ok) {
		t.Fatal("an offline HIGH answer is cacheable")
	}
	// A calibrated LOW says how often such answers are right; a grounded one is replayed with it.
	if low := (Done{Confidence: Confidence{Band: BandLow, Calibrated: true, Supported: 1}, Degraded: []string{"llm"}, Claims: grounded}); !cacheable(&low) {
		t.Fatal("a grounded answer with a calibrated LOW band is cacheable")
	}
	for name, d := range map[string]Done{
		"low":         {Confidence: Confidence{Band: BandLow, Supported: 1}, Claims: grounded},
		"uncited":     {Confidence: Confidence{Band: BandHigh, Supported: 1}},
		"unsupported": {Confidence: Confidence{Band: BandMedium, Calibrated: true, Supported: 0.5}, Claims: append(slices.Clone(grounded), Claim{Sentence: "t", Citations: []int{1}})},
		"fallback":    {Confidence: Confidence{Band: BandHigh}, IsFallback: true},
		"truncated":   {Confidence: Confidence{Band: BandHigh}, Truncated: true},
		"transient":   {Confidence: Confidence{Band: BandHigh}, Degraded: []string{"llm"}, FallbackReason: "Unavailable"},
		"vector":      {Confidence: Confidence{Band: BandHigh}, Degraded: []string{"vector"}},
		"short":       {ShortCircuit: ShortChitchat},
	} {
		if cacheable(&d) {
			t.Errorf("%s must not be cached", name)
		}
	}
}

func TestCacheEvictsAndSurvivesDamage(t *testing.T) {
	kv := memkv.New(nil, 1000)
	c := &SemanticCache{KV: kv, Embedder: embed.NewOffline(64), Catalog: &versionedCatalog{}, MaxEntries: 2}
	ctx := context.Background()
	req := Request{Tenant: "acme"}
	d := &Done{Answer: "a [1]", Confidence: Confidence{Band: BandHigh, Supported: 1}, Claims: []Claim{{Sentence: "a", Citations: []int{1}, Supported: true}}}
	var key string
	for _, q := range []string{"first question here", "second question here", "third question here"} {
		_, vec, k, err := c.Lookup(ctx, req, q, "g")
		if err != nil {
			t.Fatal(err)
		}
		key = k
		for range 2 {
			if err := c.Record(ctx, k, q, vec, d, Turn{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, _ := kv.HGetAll(ctx, key)
	if len(entries) != 2 {
		t.Fatalf("%d entries, want the newest 2", len(entries))
	}
	if hit, _, _, _ := c.Lookup(ctx, req, "third question here", "g"); hit == nil {
		t.Fatal("the newest entry was evicted")
	}
	if err := kv.HSet(ctx, key, map[string][]byte{"junk": []byte("{not json")}); err != nil {
		t.Fatal(err)
	}
	if hit, _, _, err := c.Lookup(ctx, req, "unrelated words entirely", "g"); err != nil || hit != nil {
		t.Fatalf("a damaged entry must be a miss, not an error: %v %v", hit, err)
	}
}

// scopeLabel returns evidence named after the scope that retrieved it, so that a replayed answer shows
// which scope it was built in.
type scopeLabel struct{}

func (scopeLabel) Retrieve(_ context.Context, q retrieve.Query) (*retrieve.Result, error) {
	label := q.Filter.Tenant + "/" + strings.Join(q.Filter.KBIDs, "+")
	// The passage restates the question, so that every answer is grounded (cacheable).
	return &retrieve.Result{Evidence: []rank.Evidence{ev(label, "The policy answers this: "+q.Text+".", 0.9)},
		Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.9}}, nil
}

// CACHE-02 at scale: 1,000 paraphrase pairs; the warming scope hits its own paraphrases, while another
// tenant, another knowledge-base set (ACL group), another model and another prompt version never get an
// answer built in another scope.
func TestCacheIsolationPairs(t *testing.T) {
	c := &SemanticCache{KV: memkv.New(nil, 100000), Embedder: embed.NewOffline(256), Catalog: &versionedCatalog{version: 1}}
	p := &Pipeline{Retriever: scopeLabel{}, Cache: c, Calibration: Calibrations{}} // uncalibrated, as above
	sameScope, crossScope, asked := 0, 0, 0
	run := func(tenant, q string, kbs ...string) {
		d, err := p.Run(context.Background(), Request{Tenant: tenant, KBIDs: kbs, Question: q}, func(string, any) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if !d.FromCache {
			return
		}
		if d.Sources[0].FileName != tenant+"/"+strings.Join(kbs, "+") {
			crossScope++
		} else {
			sameScope++
		}
	}
	const n = 1000
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango")
	topics := []string{"annual leave", "sick leave", "parental leave", "travel refunds", "laptop policy", "expense claims", "remote work", "overtime pay"}
	pair := func(i int) (string, string) {
		w1, w2 := words[i%len(words)], words[(i/len(words))%len(words)]
		a := fmt.Sprintf("What does the %s %s rule say about %s for team %s?", w1, w2, topics[i%len(topics)], words[(i*7)%len(words)])
		return a, strings.ToUpper(a[:1]) + strings.ToLower(strings.TrimSuffix(a[1:], "?"))
	}
	kb := func(i int) string { return fmt.Sprintf("kb_%d", i%20) } // 20 scopes of 50 entries
	for i := range n {
		a, _ := pair(i)
		run("acme", a, kb(i))
		run("acme", a, kb(i)) // asked twice: stored
	}
	sameScope = 0
	for i := range n {
		_, b := pair(i)
		run("acme", b, kb(i))
		for _, other := range []struct {
			tenant string
			kbs    []string
		}{{"globex", []string{kb(i)}}, {"acme", []string{kb(i), "kb_x"}}, {"acme", []string{"kb_y"}}} {
			before := sameScope
			run(other.tenant, b, other.kbs...)
			sameScope = before // a hit inside the other scope (its own earlier entry) is not the measure here
			asked++
		}
	}
	warmHits := 0
	// Another model, or changed prompts, is another generation: nothing written by the extractive answerer
	// is replayed for a model.
	p.LLM, p.Model = &fakeLLM{deltas: []string{"Twenty days [1]."}}, "main-v2"
	for i := range 50 {
		_, b := pair(i)
		d, err := p.Run(context.Background(), Request{Tenant: "acme", KBIDs: []string{kb(i)}, Question: b}, func(string, any) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if d.FromCache {
			warmHits++
		}
	}
	t.Logf("CACHE-02: same_scope_hits=%d/%d cross_scope_hits=%d/%d (rule of three: rate < %.4f at 95%%), other-generation hits %d/50",
		sameScope, n, crossScope, asked, 3.0/float64(asked), warmHits)
	if crossScope != 0 || warmHits != 0 || sameScope < n*9/10 {
		t.Fatalf("cross-scope hits %d, other-generation hits %d, same-scope hits %d/%d (the paraphrases must hit at home for the test to mean anything)",
			crossScope, warmHits, sameScope, n)
	}
}

// Issue #20 item 5: a replay is the first answer's band, warning, claims and abstention, with a short
// timeline (the cached event, then the answer) naming the turn it comes from: the asker's own
// conversation and message, never another user's.
func TestCacheReplaysTurn(t *testing.T) {
	r := &countingRetriever{fakeRetriever: fakeRetriever{res: &retrieve.Result{
		Evidence: []rank.Evidence{ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 0.9)},
		Grade:    rank.Grade{Tier: rank.TierLow, TopScore: 0.2}}}}
	p := &Pipeline{Retriever: r, Cache: &SemanticCache{KV: memkv.New(nil, 1000), Embedder: embed.NewOffline(256), Catalog: &versionedCatalog{version: 1}}}
	const q = "Who is the CEO of Globex Industries?"
	ask := func(user, conv, msg string) (*Done, *eventRecorder) {
		t.Helper()
		var rec eventRecorder
		d, err := p.Run(context.Background(), Request{Tenant: "acme", User: user, KBIDs: []string{"kb_1"}, Question: q,
			ConversationID: conv, MessageID: msg}, rec.emit)
		if err != nil {
			t.Fatal(err)
		}
		return d, &rec
	}
	ask("alice", "conv_1", "msg_1")
	second, _ := ask("alice", "conv_2", "msg_2")
	if !second.Abstained || second.FromCache {
		t.Fatalf("the question must abstain, uncached, to test its replay: %+v", second)
	}
	third, rec := ask("alice", "conv_3", "msg_3")
	if !third.FromCache || r.calls != 2 || !third.Abstained || third.Answer != second.Answer || third.Confidence != second.Confidence || len(third.Claims) != 0 {
		t.Fatalf("the abstention is not replayed as it was given: %+v", third)
	}
	var origin CacheOrigin
	if len(rec.events[EventCached]) != 1 || json.Unmarshal(rec.events[EventCached][0], &origin) != nil {
		t.Fatalf("no cached event: %v", rec.events)
	}
	if origin.MessageID != "msg_2" || origin.ConversationID != "conv_2" || !origin.Abstained || origin.Band != second.Confidence.Band ||
		origin.Question != q || origin.AnsweredAt.IsZero() || origin.StageMS["generation"] < 0 || third.Cached.MessageID != "msg_2" {
		t.Fatalf("the cached event does not name the turn it replays: %+v", origin)
	}
	var warn ConfidenceWarningEvent
	if ws := rec.events[EventConfidenceWarning]; len(ws) != 1 || json.Unmarshal(ws[0], &warn) != nil || warn.Band != second.Confidence.Band {
		t.Fatalf("the warning is not replayed: %v", rec.events)
	}
	// another user gets the shared answer and its question, not where alice keeps it
	other, rec := ask("bob", "conv_9", "msg_9")
	origin = CacheOrigin{}
	_ = json.Unmarshal(rec.events[EventCached][0], &origin)
	if !other.FromCache || origin.MessageID != "" || origin.ConversationID != "" || other.Cached.MessageID != "" || origin.Question != q {
		t.Fatalf("another user's replay names alice's turn: %+v", origin)
	}
}
