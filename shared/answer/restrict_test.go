package answer

import (
	"context"
	"slices"
	"testing"

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
