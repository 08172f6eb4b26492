// Package storetest holds the conformance suites every storage adapter passes: one function per port,
// called from each adapter's tests with a constructor for a fresh, empty store.
package storetest

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// VectorDim is the dimension the vector suite uses.
const VectorDim = 8

// hostile ids and tags from VEC-08: none may pass validation or reach a filter expression.
var hostileIDs = []string{`a"b`, `a\b`, `' or true`, `x || tenant != ""`, "a\u201cb", "a b", "", string(make([]byte, 10000)), "kb\x00", "é"}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// unit returns a vector pointing mostly along axis i with a small component along axis j.
func unit(i, j int, w float32) []float32 {
	v := make([]float32, VectorDim)
	v[i] = 1
	if j >= 0 {
		v[j] += w
	}
	return v
}

func rec(tenant, kb, doc, id string, v []float32, tags ...string) rag.VectorRecord {
	return rag.VectorRecord{ID: id, Tenant: tenant, KBID: kb, DocumentID: doc, ChunkID: "c" + id, Tags: tags, Vector: v}
}

func ids(hits []rag.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

// TestVectorIndex runs the VectorIndex contract. open returns a fresh, empty index of dimension VectorDim.
func TestVectorIndex(t *testing.T, open func(t *testing.T) store.VectorIndex) {
	t.Run("EmptySearch", func(t *testing.T) {
		ix := open(t)
		ctx := ctxT(t)
		hits, err := ix.Search(ctx, unit(0, -1, 0), 5, rag.Filter{Tenant: "t1"})
		if err != nil || hits == nil || len(hits) != 0 {
			t.Fatalf("Search on empty index = %v, %v; want empty non-nil slice", hits, err)
		}
		n, err := ix.Count(ctx, rag.Filter{Tenant: "t1"})
		if err != nil || n != 0 {
			t.Fatalf("Count = %d, %v", n, err)
		}
	})

	t.Run("OrderingAndScores", func(t *testing.T) {
		ix := open(t)
		ctx := ctxT(t)
		must(t, ix.Upsert(ctx, []rag.VectorRecord{
			rec("t1", "kb1", "d1", "far", unit(1, -1, 0)),             // cos 0
			rec("t1", "kb1", "d1", "near", unit(0, 1, 0.1)),           // cos ~0.995
			rec("t1", "kb1", "d2", "mid", unit(0, 1, 1)),              // cos ~0.707
			rec("t1", "kb1", "d2", "opp", scale(unit(0, -1, 0), -3)),  // cos -1
			rec("t1", "kb1", "d2", "exact", scale(unit(0, -1, 0), 7)), // cos 1, norm must not matter
		}))
		must(t, ix.Flush(ctx))
		hits, err := ix.Search(ctx, unit(0, -1, 0), 10, rag.Filter{Tenant: "t1"})
		must(t, err)
		if got, want := ids(hits), []string{"exact", "near", "mid", "far", "opp"}; !slices.Equal(got, want) {
			t.Fatalf("order = %v, want %v", got, want)
		}
		wantScores := []float64{1, 1 / math.Sqrt(1.01), 1 / math.Sqrt(2), 0, -1}
		for i, h := range hits {
			if math.Abs(float64(h.Score)-wantScores[i]) > 1e-3 {
				t.Errorf("hit %s score %v, want %v", h.ID, h.Score, wantScores[i])
			}
		}
		if hits[0].DocumentID != "d2" || hits[0].KBID != "kb1" || hits[0].ChunkID != "cexact" {
			t.Errorf("hit metadata = %+v", hits[0])
		}
		top2, err := ix.Search(ctx, unit(0, -1, 0), 2, rag.Filter{Tenant: "t1"})
		must(t, err)
		if got := ids(top2); !slices.Equal(got, []string{"exact", "near"}) {
			t.Fatalf("top-2 = %v", got)
		}
	})

	t.Run("TiesByID", func(t *testing.T) {
		ix := open(t)
		ctx := ctxT(t)
		must(t, ix.Upsert(ctx, []rag.VectorRecord{
			rec("t1", "kb1", "d1", "b", unit(2, -1, 0)), rec("t1", "kb1", "d1", "c", unit(2, -1, 0)), rec("t1", "kb1", "d1", "a", unit(2, -1, 0)),
		}))
		must(t, ix.Flush(ctx))
		hits, err := ix.Search(ctx, unit(2, -1, 0), 3, rag.Filter{Tenant: "t1"})
		must(t, err)
		if got := ids(hits); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("ties = %v, want by id", got)
		}
	})

	t.Run("UpsertReplaces", func(t *testing.T) {
		ix := open(t)
		ctx := ctxT(t)
		r := rec("t1", "kb1", "d1", "x", unit(0, -1, 0), "old")
		for range 3 {
			must(t, ix.Upsert(ctx, []rag.VectorRecord{r}))
		}
		r.Vector, r.Tags = unit(3, -1, 0), []string{"new"}
		must(t, ix.Upsert(ctx, []rag.VectorRecord{r}))
		must(t, ix.Flush(ctx))
		if n, err := ix.Count(ctx, rag.Filter{Tenant: "t1"}); err != nil || n != 1 {
			t.Fatalf("Count after 4 upserts of one id = %d, %v; want 1", n, err)
		}
		hits, err := ix.Search(ctx, unit(3, -1, 0), 1, rag.Filter{Tenant: "t1", Tags: []string{"new"}})
		must(t, err)
		if len(hits) != 1 || hits[0].Score < 0.999 {
			t.Fatalf("replaced vector not found: %+v", hits)
		}
		if n, _ := ix.Count(ctx, rag.Filter{Tenant: "t1", Tags: []string{"old"}}); n != 0 {
			t.Fatalf("old tags still match: %d", n)
		}
	})

	t.Run("Filters", func(t *testing.T) {
		ix := open(t)
		ctx := ctxT(t)
		must(t, ix.Upsert(ctx, []rag.VectorRecord{
			rec("t1", "kb1", "d1", "a1", unit(0, 1, 0.1), "policy", "2024"),
			rec("t1", "kb1", "d2", "a2", unit(0, 1, 0.2), "faq"),
			rec("t1", "kb2", "d3", "a3", unit(0, 1, 0.3)),
			rec("t2", "kb1", "d1", "b1", unit(0, 1, 0.05), "policy"), // another tenant, same kb/doc ids
		}))
		must(t, ix.Flush(ctx))
		q := unit(0, -1, 0)
		cases := []struct {
			name string
			f    rag.Filter
			want []string
		}{
			{"tenant", rag.Filter{Tenant: "t1"}, []string{"a1", "a2", "a3"}},
			{"other tenant", rag.Filter{Tenant: "t2"}, []string{"b1"}},
			{"unknown tenant", rag.Filter{Tenant: "t9"}, []string{}},
			{"kb", rag.Filter{Tenant: "t1", KBIDs: []string{"kb2"}}, []string{"a3"}},
			{"kbs", rag.Filter{Tenant: "t1", KBIDs: []string{"kb2", "kb1"}}, []string{"a1", "a2", "a3"}},
			{"unknown kb", rag.Filter{Tenant: "t1", KBIDs: []string{"kb9"}}, []string{}},
			{"doc", rag.Filter{Tenant: "t1", DocumentIDs: []string{"d2"}}, []string{"a2"}},
			{"kb and doc", rag.Filter{Tenant: "t1", KBIDs: []string{"kb2"}, DocumentIDs: []string{"d1"}}, []string{}},
			{"tag", rag.Filter{Tenant: "t1", Tags: []string{"policy"}}, []string{"a1"}},
			{"any tag", rag.Filter{Tenant: "t1", Tags: []string{"faq", "policy"}}, []string{"a1", "a2"}},
			{"cjk tag", rag.Filter{Tenant: "t1", Tags: []string{"保险"}}, []string{}},
		}
		for _, c := range cases {
			hits, err := ix.Search(ctx, q, 10, c.f)
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			if got := ids(hits); !slices.Equal(got, c.want) {
				t.Errorf("%s: Search = %v, want %v", c.name, got, c.want)
			}
			n, err := ix.Count(ctx, c.f)
			if err != nil || n != len(c.want) {
				t.Errorf("%s: Count = %d, %v; want %d", c.name, n, err, len(c.want))
			}
		}
	})

	t.Run("Delete", func(t *testing.T) {
		ix := open(t)
		ctx := ctxT(t)
		must(t, ix.Upsert(ctx, []rag.VectorRecord{
			rec("t1", "kb1", "d1", "a", unit(0, -1, 0)), rec("t1", "kb1", "d1", "b", unit(1, -1, 0)),
			rec("t1", "kb1", "d2", "c", unit(2, -1, 0)), rec("t1", "kb2", "d1", "d", unit(3, -1, 0)),
			rec("t2", "kb1", "d1", "a", unit(0, -1, 0)),
		}))
		must(t, ix.Flush(ctx))
		must(t, ix.Delete(ctx, "t1", []string{"a", "missing"}))
		must(t, ix.Flush(ctx))
		if n, _ := ix.Count(ctx, rag.Filter{Tenant: "t1"}); n != 3 {
			t.Fatalf("after Delete(a): count %d, want 3", n)
		}
		if n, _ := ix.Count(ctx, rag.Filter{Tenant: "t2"}); n != 1 {
			t.Fatalf("Delete crossed tenants: t2 count %d, want 1", n)
		}
		must(t, ix.DeleteDocument(ctx, "t1", "kb1", "d1"))
		must(t, ix.Flush(ctx))
		hits, err := ix.Search(ctx, unit(0, -1, 0), 10, rag.Filter{Tenant: "t1"})
		must(t, err)
		if got := ids(hits); !slices.Equal(sorted(got), []string{"c", "d"}) {
			t.Fatalf("after DeleteDocument(kb1/d1): %v, want c and d (d1 in kb2 stays)", got)
		}
		if n, _ := ix.Count(ctx, rag.Filter{Tenant: "t2", DocumentIDs: []string{"d1"}}); n != 1 {
			t.Fatalf("DeleteDocument crossed tenants")
		}
		must(t, ix.Delete(ctx, "t1", nil))
		must(t, ix.DeleteDocument(ctx, "t1", "kb9", "d9"))
	})

	t.Run("Invalid", func(t *testing.T) {
		ix := open(t)
		ctx := ctxT(t)
		must(t, ix.Upsert(ctx, []rag.VectorRecord{rec("t1", "kb1", "d1", "a", unit(0, -1, 0))}))
		checkKind(t, "k=0", rag.KindInvalid, second(ix.Search(ctx, unit(0, -1, 0), 0, rag.Filter{Tenant: "t1"})))
		checkKind(t, "short query", rag.KindInvalid, second(ix.Search(ctx, []float32{1, 2}, 3, rag.Filter{Tenant: "t1"})))
		checkKind(t, "zero query", rag.KindInvalid, second(ix.Search(ctx, make([]float32, VectorDim), 3, rag.Filter{Tenant: "t1"})))
		checkKind(t, "no tenant", rag.KindInvalid, second(ix.Search(ctx, unit(0, -1, 0), 3, rag.Filter{})))
		checkKind(t, "short vector", rag.KindInvalid, ix.Upsert(ctx, []rag.VectorRecord{rec("t1", "kb1", "d1", "b", []float32{1})}))
		checkKind(t, "zero vector", rag.KindInvalid, ix.Upsert(ctx, []rag.VectorRecord{rec("t1", "kb1", "d1", "b", make([]float32, VectorDim))}))
		nan := unit(0, -1, 0)
		nan[1] = float32(math.NaN())
		checkKind(t, "NaN vector", rag.KindInvalid, ix.Upsert(ctx, []rag.VectorRecord{rec("t1", "kb1", "d1", "b", nan)}))
		for _, bad := range hostileIDs {
			name := fmt.Sprintf("hostile %.20q", bad)
			checkKind(t, name+" tenant", rag.KindInvalid, second(ix.Search(ctx, unit(0, -1, 0), 3, rag.Filter{Tenant: bad})))
			checkKind(t, name+" kb", rag.KindInvalid, second(ix.Search(ctx, unit(0, -1, 0), 3, rag.Filter{Tenant: "t1", KBIDs: []string{bad}})))
			checkKind(t, name+" doc", rag.KindInvalid, second(ix.Count(ctx, rag.Filter{Tenant: "t1", DocumentIDs: []string{bad}})))
			checkKind(t, name+" id", rag.KindInvalid, ix.Upsert(ctx, []rag.VectorRecord{rec("t1", "kb1", "d1", bad, unit(0, -1, 0))}))
			checkKind(t, name+" delete", rag.KindInvalid, ix.Delete(ctx, "t1", []string{bad}))
			checkKind(t, name+" delete doc", rag.KindInvalid, ix.DeleteDocument(ctx, "t1", "kb1", bad))
		}
		for _, bad := range []string{`"`, `a\`, "x'y", "", "\x01"} {
			checkKind(t, fmt.Sprintf("hostile tag %q", bad), rag.KindInvalid, second(ix.Search(ctx, unit(0, -1, 0), 3, rag.Filter{Tenant: "t1", Tags: []string{bad}})))
		}
		// a rejected batch writes nothing
		checkKind(t, "mixed batch", rag.KindInvalid, ix.Upsert(ctx, []rag.VectorRecord{rec("t1", "kb1", "d1", "ok1", unit(1, -1, 0)), rec("t1", "kb1", "d1", "bad id!", unit(1, -1, 0))}))
		must(t, ix.Flush(ctx))
		if n, _ := ix.Count(ctx, rag.Filter{Tenant: "t1"}); n != 1 {
			t.Fatalf("a rejected batch wrote %d records", n-1)
		}
	})

	t.Run("CanceledContext", func(t *testing.T) {
		ix := open(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		checkKind(t, "search", rag.KindUnavailable, second(ix.Search(ctx, unit(0, -1, 0), 3, rag.Filter{Tenant: "t1"})))
		checkKind(t, "upsert", rag.KindUnavailable, ix.Upsert(ctx, []rag.VectorRecord{rec("t1", "kb1", "d1", "a", unit(0, -1, 0))}))
	})

	t.Run("ManyRecords", func(t *testing.T) {
		ix := open(t)
		ctx := ctxT(t)
		var recs []rag.VectorRecord
		for i := range 300 {
			v := make([]float32, VectorDim)
			for j := range v {
				v[j] = float32(math.Sin(float64(i*VectorDim + j + 1)))
			}
			recs = append(recs, rec("t1", fmt.Sprintf("kb%d", i%3), fmt.Sprintf("d%d", i%7), fmt.Sprintf("r%03d", i), v))
		}
		must(t, ix.Upsert(ctx, recs))
		must(t, ix.Flush(ctx))
		if n, _ := ix.Count(ctx, rag.Filter{Tenant: "t1", KBIDs: []string{"kb1"}}); n != 100 {
			t.Fatalf("kb1 count %d, want 100", n)
		}
		q := recs[42].Vector
		hits, err := ix.Search(ctx, q, 7, rag.Filter{Tenant: "t1"})
		must(t, err)
		want := naiveTop(recs, q, 7)
		if got := ids(hits); !slices.Equal(got, want) {
			t.Fatalf("top-7 = %v, naive reference %v", got, want)
		}
	})
}

// naiveTop is the reference: cosine in float64 over every record, best first, ties by id.
func naiveTop(recs []rag.VectorRecord, q []float32, k int) []string {
	type s struct {
		id    string
		score float64
	}
	var all []s
	for _, r := range recs {
		all = append(all, s{r.ID, cosine(q, r.Vector)})
	}
	slices.SortFunc(all, func(a, b s) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		if a.id < b.id {
			return -1
		}
		return 1
	})
	var out []string
	for _, x := range all[:min(k, len(all))] {
		out = append(out, x.id)
	}
	return out
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

func scale(v []float32, f float32) []float32 {
	out := make([]float32, len(v))
	for i := range v {
		out[i] = v[i] * f
	}
	return out
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func second[T any](_ T, err error) error { return err }

func checkKind(t *testing.T, what string, want rag.Kind, err error) {
	t.Helper()
	if got := rag.KindOf(err); got != want {
		t.Errorf("%s: error kind %v (%v), want %v", what, got, err, want)
	}
}

// TestUnavailable checks that every method of a store whose server is gone fails with Unavailable within
// the context deadline instead of hanging. call runs one method with ctx.
func TestUnavailable(t *testing.T, calls map[string]func(ctx context.Context) error) {
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- call(ctx) }()
			select {
			case err := <-done:
				if rag.KindOf(err) != rag.KindUnavailable {
					t.Fatalf("error kind %v (%v), want Unavailable", rag.KindOf(err), err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("call hung 8 s past its 2 s context deadline")
			}
		})
	}
}
