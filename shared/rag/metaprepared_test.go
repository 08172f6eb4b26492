package rag

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestMatchPreparedAgrees checks MetaMatcher.Match over
// prepared documents, and MetaMatcher.Eval over their column view, against MetaFilter.Match on random filters and metadata built
// around shared values, so equal dates, equal numbers, bounds on both sides and RFC 3339 instants
// with fractions of a second all occur.
func TestMatchPreparedAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 23))
	dates := []string{"2025-01-01", "2025-01-01T00:00:00Z", "2025-01-01T00:00:00.5Z", "2024-12-31T23:59:59.999Z",
		"2025-06-30", "2025-01-01T01:00:00+02:00", "not a date", "2026-02-28"}
	nums := []float64{-1, 0, 0.5, 1, 2025, 2026}
	strs := []string{"a", "b", "c", "2025"}
	pick := func(xs []string) string { return xs[r.IntN(len(xs))] }
	randDoc := func() Metadata {
		m := Metadata{}
		for _, k := range []string{"d", "n", "s", "l"} {
			if r.IntN(4) == 0 {
				continue
			}
			switch r.IntN(4) { // any key may hold any kind
			case 0:
				m[k] = pick(dates)
			case 1:
				m[k] = nums[r.IntN(len(nums))]
			case 2:
				m[k] = pick(strs)
			default:
				m[k] = []string{pick(strs), pick(dates)}
			}
		}
		return m
	}
	var leaf func(depth int) map[string]any
	leaf = func(depth int) map[string]any {
		if depth > 0 && r.IntN(3) == 0 {
			switch r.IntN(3) {
			case 0:
				return map[string]any{"and": []any{leaf(depth - 1), leaf(depth - 1)}}
			case 1:
				return map[string]any{"or": []any{leaf(depth - 1), leaf(depth - 1)}}
			default:
				return map[string]any{"not": leaf(depth - 1)}
			}
		}
		k := []string{"d", "n", "s", "l", "none"}[r.IntN(5)]
		switch r.IntN(6) {
		case 0:
			return map[string]any{"key": k, "eq": pick(append(strs, dates...))}
		case 1:
			return map[string]any{"key": k, "eq": nums[r.IntN(len(nums))]}
		case 2:
			return map[string]any{"key": k, "in": []any{pick(strs), nums[r.IntN(len(nums))], pick(dates)}}
		case 3:
			return map[string]any{"key": k, []string{"gt", "gte"}[r.IntN(2)]: pick(dates[:6]), []string{"lt", "lte"}[r.IntN(2)]: pick(dates[:6])}
		case 4:
			return map[string]any{"key": k, []string{"gt", "gte", "lt", "lte"}[r.IntN(4)]: nums[r.IntN(len(nums))]}
		default:
			return map[string]any{"key": k, "exists": r.IntN(2) == 0}
		}
	}
	docs := make([]Metadata, 301) // not a multiple of 64: complements must stop at the last row
	prepared := make([]MetaDoc, len(docs))
	keys := NewMetaKeys()
	keys.Prepare(Metadata{"unused": "x"}) // numbers need not start at the filter's keys
	for i := range docs {
		n, err := randDoc().Normalize()
		if err != nil {
			t.Fatal(err)
		}
		docs[i], prepared[i] = n, keys.Prepare(n)
	}
	cols := keys.Columns(prepared)
	matched := 0
	for range 2000 {
		raw, _ := json.Marshal(leaf(3))
		f, err := ParseMetaFilter(raw)
		if err != nil {
			continue // a range with bounds of two kinds: refused, as it should be
		}
		m := f.Compile(keys)
		for i, meta := range docs {
			want := f.Match(meta)
			if got := m.Match(prepared[i]); got != want {
				t.Fatalf("filter %s on %v: MetaMatcher %v, Match %v", raw, meta, got, want)
			}
			if want {
				matched++
			}
		}
		got := map[int]bool{}
		Rows(m.Eval(cols), func(row int) { got[row] = true })
		for i, meta := range docs {
			if got[i] != f.Match(meta) {
				t.Fatalf("filter %s on row %d %v: MetaColumns %v, Match %v", raw, i, meta, got[i], !got[i])
			}
		}
		if len(got) > len(docs) {
			t.Fatalf("filter %s: Eval set rows past the last", raw)
		}
	}
	if matched == 0 {
		t.Fatal("no filter matched any document: the generator tests nothing")
	}
	if (MetaDoc{}).Size() <= 0 || keys.Prepare(Metadata{"k": fmt.Sprint(1)}).Size() <= (MetaDoc{}).Size() {
		t.Fatal("Size does not grow with the metadata")
	}
}
