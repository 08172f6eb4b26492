package answer

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"

	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/store/memkv"
)

func TestScopeDocs(t *testing.T) {
	for _, c := range []struct {
		sel, restrict, want []string
	}{
		{nil, nil, nil},
		{[]string{"a"}, nil, []string{"a"}},
		{nil, []string{"b", "c"}, []string{"b", "c"}},
		{[]string{"a", "b"}, []string{"b", "c"}, []string{"b"}},
		{[]string{"a"}, []string{"b", "c"}, []string{"b", "c"}}, // never outside the filter
	} {
		if got := scopeDocs(Request{DocumentIDs: c.sel, Restrict: c.restrict}); !slices.Equal(got, c.want) {
			t.Errorf("scopeDocs(%v, %v) = %v; want %v", c.sel, c.restrict, got, c.want)
		}
	}
}

// A filtered question and the same question unfiltered, or under another filter, never share a
// semantic-cache entry.
func TestCacheKeyIncludesTheRestriction(t *testing.T) {
	c := &SemanticCache{KV: memkv.New(nil, 1000), Embedder: embed.NewOffline(64), Catalog: &versionedCatalog{version: 1}}
	key := func(restrict ...string) string {
		k, err := c.scope(context.Background(), Request{Tenant: "t1", Question: "q", Restrict: restrict}, "g")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	plain, one, other := key(), key("d1", "d2"), key("d3")
	if plain == one || one == other || plain == other {
		t.Fatalf("keys %q %q %q; want three different", plain, one, other)
	}
	if key("d2", "d1") != one {
		t.Fatal("the restriction's order changed the key")
	}
}

// The filter a restriction was resolved from reaches retrieval beside its documents (for Milvus), and
// with an inferred filter the and of both; never with selected documents, and never after the
// inferred filter fell back. The cache key is the documents' (the filter adds nothing to them).
func TestRetrievalFilterCarriesTheMetaFilter(t *testing.T) {
	parse := func(raw string) *rag.MetaFilter {
		f, err := rag.ParseMetaFilter([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	user := parse(`{"key":"dept","eq":"HR"}`)
	inferred := &InferredFilter{Filter: json.RawMessage(`{"key":"year","eq":2025}`)}
	base := Request{Tenant: "t1", KBIDs: []string{"kb1"}, Restrict: []string{"d1", "d2"}, Filter: user, Question: "q"}
	for _, c := range []struct {
		name     string
		req      Request
		inferred *InferredFilter
		fellBack bool
		want     string // the filter's canonical key; "" for none
		docs     []string
	}{
		{"user filter", base, nil, false, user.CacheKey(), []string{"d1", "d2"}},
		{"no filter", Request{Tenant: "t1", Question: "q"}, nil, false, "", nil},
		{"ids without a filter", Request{Tenant: "t1", Restrict: []string{"d1"}}, nil, false, "", []string{"d1"}},
		{"selected documents", func() Request { r := base; r.DocumentIDs = []string{"d1"}; return r }(), nil, false, "", []string{"d1"}},
		{"inferred and user", base, inferred, false, `and("dept" eq "HR","year" eq 2025)`, []string{"d2"}},
		{"inferred alone", Request{Tenant: "t1"}, inferred, false, `"year" eq 2025`, []string{"d2"}},
		{"inferred fell back", base, inferred, true, user.CacheKey(), []string{"d1", "d2"}},
	} {
		st := &State{Request: c.req}
		if c.inferred != nil {
			inf := *c.inferred
			inf.Fallback = c.fellBack
			st.Inferred, st.InferredRestrict = &inf, []string{"d2"}
		}
		f := st.filter()
		got := ""
		if f.Meta != nil {
			got = f.Meta.CacheKey()
		}
		if got != c.want || !slices.Equal(f.DocumentIDs, c.docs) || f.Tenant != "t1" {
			t.Errorf("%s: filter %q docs %v tenant %q; want %q %v t1", c.name, got, f.DocumentIDs, f.Tenant, c.want, c.docs)
		}
	}

	// the request crosses JSON (the answer state machine) with its filter
	b, err := json.Marshal(State{Request: base})
	if err != nil {
		t.Fatal(err)
	}
	var back State
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Request.Filter == nil || back.Request.Filter.CacheKey() != user.CacheKey() || back.filter().Meta == nil {
		t.Fatalf("filter after JSON: %+v (from %s)", back.Request.Filter, b)
	}

	c := &SemanticCache{KV: memkv.New(nil, 1000), Embedder: embed.NewOffline(64), Catalog: &versionedCatalog{version: 1}}
	key := func(r Request) string {
		k, err := c.scope(context.Background(), r, "g")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	noFilter := base
	noFilter.Filter = nil
	other := base
	other.Restrict = []string{"d1"}
	if key(base) != key(noFilter) || key(base) == key(other) || key(base) == key(Request{Tenant: "t1", Question: "q", KBIDs: []string{"kb1"}}) {
		t.Error("the cache key does not follow the restriction's documents")
	}
}

// filterRecorder records the filter of every retrieval, answering from the wrapped retriever.
type filterRecorder struct {
	next    Retriever
	mu      sync.Mutex
	filters []rag.Filter
}

func (f *filterRecorder) Retrieve(ctx context.Context, q retrieve.Query) (*retrieve.Result, error) {
	f.mu.Lock()
	f.filters = append(f.filters, q.Filter)
	f.mu.Unlock()
	return f.next.Retrieve(ctx, q)
}

// The agentic loop's searches carry the user's filter beside its documents, as the standard path's do.
func TestAgentSearchesCarryTheFilter(t *testing.T) {
	leave := ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 0.9)
	r := &filterRecorder{next: &toolRetriever{ev: map[string][]rank.Evidence{"annual leave": {leave}}}}
	agent := &scriptedAgent{replies: []func(int) (llm.Reply, error){
		calls(call("1", "search_docs", "annual leave")),
		calls(call("2", "keyword_search", "annual leave")),
	}}
	mf, err := rag.ParseMetaFilter([]byte(`{"key":"dept","eq":"HR"}`))
	if err != nil {
		t.Fatal(err)
	}
	p := &Pipeline{Retriever: r, LLM: &fakeLLM{deltas: []string{"20 days [1]."}}, Model: "main", Agent: &Agent{LLM: agent, Model: "main"}}
	done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: complexQuestion, Restrict: []string{"d1", "d2"}, Filter: mf}, func(string, any) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if done.Path != PathAgentic || len(r.filters) < 2 {
		t.Fatalf("path %s, %d retrievals", done.Path, len(r.filters))
	}
	for i, f := range r.filters {
		if f.Meta == nil || f.Meta.CacheKey() != mf.CacheKey() || !slices.Equal(f.DocumentIDs, []string{"d1", "d2"}) {
			t.Errorf("retrieval %d: filter %+v; want the documents and the filter beside them", i, f)
		}
	}
}
