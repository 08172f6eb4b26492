package rag

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestMetaFilterJSONRoundTrip checks that a parsed filter written as JSON reads back as the same
// filter (same canonical key) on random filters of every form, dates with fractions of a second and
// offsets, and hostile keys and values among them; and that a malformed filter in JSON is refused.
func TestMetaFilterJSONRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 23))
	vals := []any{"a", `" or tenant != "`, "x\\y", "2025", 2025.0, -0.5, 1e-9, "中文"}
	dates := []string{"2025-01-01", "2025-01-01T00:00:00.123456789Z", "2025-01-01T01:00:00+02:00", "1969-12-31"}
	var node func(depth int) map[string]any
	node = func(depth int) map[string]any {
		if depth > 0 && r.IntN(3) == 0 {
			switch r.IntN(3) {
			case 0:
				return map[string]any{"and": []any{node(depth - 1), node(depth - 1)}}
			case 1:
				return map[string]any{"or": []any{node(depth - 1), node(depth - 1), node(depth - 1)}}
			default:
				return map[string]any{"not": node(depth - 1)}
			}
		}
		k := []string{"year", "a.b-c", "dept"}[r.IntN(3)]
		switch r.IntN(6) {
		case 0:
			return map[string]any{"key": k, "eq": vals[r.IntN(len(vals))]}
		case 1:
			return map[string]any{"key": k, "in": []any{vals[r.IntN(len(vals))], vals[r.IntN(len(vals))]}}
		case 2:
			return map[string]any{"key": k, "gte": float64(r.IntN(3000)), "lt": 3000.5}
		case 3:
			return map[string]any{"key": k, "gt": dates[r.IntN(len(dates))]}
		case 4:
			return map[string]any{"key": k, "lte": dates[r.IntN(len(dates))]}
		default:
			return map[string]any{"key": k, "exists": r.IntN(2) == 0}
		}
	}
	for i := range 500 {
		in, _ := json.Marshal(node(3))
		f, err := ParseMetaFilter(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(f)
		if err != nil {
			t.Fatalf("marshal %s: %v", in, err)
		}
		var back MetaFilter
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%d: %s written as %s does not read back: %v", i, in, out, err)
		}
		if back.CacheKey() != f.CacheKey() {
			t.Fatalf("%s written as %s reads back as %q, want %q", in, out, back.CacheKey(), f.CacheKey())
		}
	}
	// inside a struct, as answer.Request carries it
	type carrier struct {
		F *MetaFilter `json:"filter,omitempty"`
	}
	var c carrier
	if err := json.Unmarshal([]byte(`{"filter":{"key":"year","eq":2025}}`), &c); err != nil || c.F == nil || c.F.CacheKey() != `"year" eq 2025` {
		t.Fatalf("carried filter: %+v %v", c.F, err)
	}
	if b, _ := json.Marshal(carrier{}); string(b) != "{}" {
		t.Errorf("no filter is written as %s", b)
	}
	for _, bad := range []string{`{"filter":{"key":"year"}}`, `{"filter":{"key":"y","eq":true}}`, `{"filter":[1]}`} {
		err := json.Unmarshal([]byte(bad), &c)
		if err == nil || !strings.Contains(fmt.Sprint(err), "filter") {
			t.Errorf("%s: %v, want a refusal naming the filter", bad, err)
		}
	}
}
