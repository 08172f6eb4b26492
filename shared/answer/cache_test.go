package answer

import (
	"context"
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
	p := &Pipeline{Retriever: r, Cache: &SemanticCache{KV: kv, Embedder: embed.NewOffline(256), Catalog: cat}}
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
	if !third.FromCache || r.calls != 2 || third.Answer != second.Answer || third.Confidence != second.Confidence || len(third.Sources) != 1 {
		t.Fatalf("hit: from_cache %v, calls %d, done %+v", third.FromCache, r.calls, third)
	}
	if seq := strings.Join(names, " "); !strings.HasPrefix(seq, "start token") || !strings.HasSuffix(seq, "token done") {
		t.Fatalf("a cache hit streams start token* done: %q", seq)
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
	ok := Done{Confidence: Confidence{Band: BandHigh}, Degraded: []string{"llm"}}
	if !cacheable(&ok) {
		t.Fatal("an offline HIGH answer is cacheable")
	}
	for name, d := range map[string]Done{
		"low":       {Confidence: Confidence{Band: BandLow}},
		"fallback":  {Confidence: Confidence{Band: BandHigh}, IsFallback: true},
		"truncated": {Confidence: Confidence{Band: BandHigh}, Truncated: true},
		"transient": {Confidence: Confidence{Band: BandHigh}, Degraded: []string{"llm"}, FallbackReason: "Unavailable"},
		"vector":    {Confidence: Confidence{Band: BandHigh}, Degraded: []string{"vector"}},
		"short":     {ShortCircuit: ShortChitchat},
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
	d := &Done{Answer: "a [1]", Confidence: Confidence{Band: BandHigh}}
	var key string
	for _, q := range []string{"first question here", "second question here", "third question here"} {
		_, vec, k, err := c.Lookup(ctx, req, q)
		if err != nil {
			t.Fatal(err)
		}
		key = k
		for range 2 {
			if err := c.Record(ctx, k, q, vec, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, _ := kv.HGetAll(ctx, key)
	if len(entries) != 2 {
		t.Fatalf("%d entries, want the newest 2", len(entries))
	}
	if hit, _, _, _ := c.Lookup(ctx, req, "third question here"); hit == nil {
		t.Fatal("the newest entry was evicted")
	}
	if err := kv.HSet(ctx, key, map[string][]byte{"junk": []byte("{not json")}); err != nil {
		t.Fatal(err)
	}
	if hit, _, _, err := c.Lookup(ctx, req, "unrelated words entirely"); err != nil || hit != nil {
		t.Fatalf("a damaged entry must be a miss, not an error: %v %v", hit, err)
	}
}
