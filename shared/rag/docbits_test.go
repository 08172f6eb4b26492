package rag

import (
	"fmt"
	"testing"
	"unsafe"
)

func TestDocBits(t *testing.T) {
	nums := map[string]int32{}
	number := func(id string) (int32, bool) { n, ok := nums[id]; return n, ok }
	for i := range 100 {
		nums[fmt.Sprintf("d%d", i)] = int32(i)
	}
	ids := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("d%d", i))
		}
		return out
	}
	set := func(bits []uint64) []int32 {
		var out []int32
		for n := int32(0); n < int32(len(bits)*64); n++ {
			if HasBit(bits, n) {
				out = append(out, n)
			}
		}
		return out
	}
	c := NewDocBits()
	a := ids(10, 40)
	b1, known, err := c.Bits(a, len(nums), number)
	if err != nil || !known || len(set(b1)) != 30 || set(b1)[0] != 10 {
		t.Fatalf("Bits = %v %v %v", set(b1), known, err)
	}
	// the same ids in another slice: the cached bitset, not a new one
	b2, _, _ := c.Bits(ids(10, 40), len(nums), number)
	if unsafe.SliceData(b1) != unsafe.SliceData(b2) {
		t.Fatal("equal ids were translated again")
	}
	// the caller's slice changed in place: a new translation, never the old set
	a[0] = "d99"
	b3, _, _ := c.Bits(a, len(nums), number)
	if got := set(b3); len(got) != 30 || got[0] != 11 || got[29] != 99 {
		t.Fatalf("after changing the slice in place: %v", got)
	}
	// an id not numbered yet: the set is redone once the index numbers more documents
	late := append(ids(0, 20), "d100")
	b4, _, _ := c.Bits(late, len(nums), number)
	if HasBit(b4, 100) {
		t.Fatal("an unnumbered id is in the set")
	}
	nums["d100"] = 100
	b5, _, _ := c.Bits(late, len(nums), number)
	if !HasBit(b5, 100) || len(set(b5)) != 21 {
		t.Fatalf("after d100 was numbered: %v", set(b5))
	}
	// a complete set stays valid whatever is numbered later
	nums["d101"] = 101
	b6, _, _ := c.Bits(ids(10, 40), len(nums), number)
	if unsafe.SliceData(b6) != unsafe.SliceData(b1) {
		t.Fatal("a complete set was translated again after an unrelated document was numbered")
	}
	// nothing known: not known, so the search matches nothing
	if _, known, err := c.Bits([]string{"x1", "x2"}, len(nums), number); known || err != nil {
		t.Fatalf("unknown ids: known %v, %v", known, err)
	}
	// malformed ids are refused, cached or not
	bad := append(ids(0, 20), `d"1`)
	for range 2 {
		if _, _, err := c.Bits(bad, len(nums), number); !Is(err, KindInvalid) {
			t.Fatalf("malformed id: %v", err)
		}
	}
	// more restrictions than entries: each still answers correctly
	for i := range 3 * docBitsEntries {
		got, _, _ := c.Bits(ids(i, i+20), len(nums), number)
		if s := set(got); len(s) != 20 || s[0] != int32(i) {
			t.Fatalf("restriction %d: %v", i, s)
		}
	}
}

func TestFilterValidateScope(t *testing.T) {
	f := Filter{Tenant: "t1", KBIDs: []string{"kb"}, DocumentIDs: []string{"bad id"}}
	if err := f.ValidateScope(); err != nil {
		t.Fatalf("ValidateScope checked the document ids: %v", err)
	}
	if err := f.Validate(); !Is(err, KindInvalid) {
		t.Fatalf("Validate = %v; want Invalid", err)
	}
	if err := (Filter{Tenant: "t 1"}).ValidateScope(); !Is(err, KindInvalid) {
		t.Fatalf("ValidateScope(bad tenant) = %v", err)
	}
}

func TestMetaFilterCacheKey(t *testing.T) {
	key := func(raw string) string {
		f, err := ParseMetaFilter([]byte(raw))
		if err != nil {
			t.Fatal(raw, err)
		}
		return f.CacheKey()
	}
	same := [][2]string{
		{`{"key":"year","gte":2024,"lt":2026}`, `{"lt":2026.0,"gte":2.024e3,"key":"year"}`},
		{`{"key":"d","gte":"2025-01-01"}`, `{"key":"d","gte":"2025-01-01T00:00:00Z"}`},
		{`{"and":[{"key":"a","eq":"x"},{"not":{"key":"b","exists":true}}]}`, `{"and":[{"eq":"x","key":"a"},{"not":{"exists":true,"key":"b"}}]}`},
	}
	for _, p := range same {
		if key(p[0]) != key(p[1]) {
			t.Errorf("%s and %s have different keys: %q %q", p[0], p[1], key(p[0]), key(p[1]))
		}
	}
	differ := []string{
		`{"key":"year","eq":2025}`, `{"key":"year","eq":"2025"}`, `{"key":"year","in":[2025]}`,
		`{"key":"year","gte":2025}`, `{"key":"year","gt":2025}`, `{"key":"year","lte":2025}`, `{"key":"year","lt":2025}`,
		`{"key":"d","gte":"2025-01-01"}`, `{"key":"year","exists":true}`, `{"key":"year","exists":false}`,
		`{"not":{"key":"year","exists":false}}`, `{"and":[{"key":"a","eq":"x"},{"key":"b","eq":"y"}]}`,
		`{"or":[{"key":"a","eq":"x"},{"key":"b","eq":"y"}]}`, `{"and":[{"key":"a","eq":"x,b"}]}`,
		`{"key":"a\"","eq":"x"}`, `{"key":"a","in":["x","y"]}`, `{"key":"a","in":["x y"]}`,
	}
	seen := map[string]string{}
	for _, raw := range differ {
		f, err := ParseMetaFilter([]byte(raw))
		if err != nil {
			continue // a key the filter refuses: nothing to key
		}
		k := f.CacheKey()
		if prev, ok := seen[k]; ok {
			t.Errorf("%s and %s share the key %q", prev, raw, k)
		}
		seen[k] = raw
	}
}
