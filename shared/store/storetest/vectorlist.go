package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// TestVectorLister runs the VectorLister contract: open returns a fresh, empty index of dimension
// VectorDim that also implements store.VectorLister.
func TestVectorLister(t *testing.T, open func(t *testing.T) store.VectorIndex) {
	lister := func(t *testing.T) (store.VectorIndex, store.VectorLister) {
		ix := open(t)
		l, ok := ix.(store.VectorLister)
		if !ok {
			t.Fatalf("%T does not implement store.VectorLister", ix)
		}
		return ix, l
	}
	list := func(t *testing.T, l store.VectorLister, f rag.Filter) []string {
		t.Helper()
		refs, err := l.ListVectors(ctxT(t), f)
		must(t, err)
		if refs == nil {
			t.Fatalf("ListVectors(%+v) = nil; want an empty slice", f)
		}
		out := make([]string, len(refs))
		for i, r := range refs {
			out[i] = r.ID
		}
		return out
	}

	t.Run("ScopedAndSorted", func(t *testing.T) {
		ix, l := lister(t)
		ctx := ctxT(t)
		must(t, ix.Upsert(ctx, []rag.VectorRecord{
			rec("t1", "kb1", "d1", "b", unit(0, -1, 0), "x"),
			rec("t1", "kb1", "d1", "a", unit(1, -1, 0)),
			rec("t1", "kb1", "d2", "c", unit(2, -1, 0)),
			rec("t1", "kb2", "d3", "d", unit(3, -1, 0)),
			rec("t2", "kb1", "d1", "e", unit(4, -1, 0)),
		}))
		must(t, ix.Flush(ctx))
		for _, c := range []struct {
			f    rag.Filter
			want []string
		}{
			{rag.Filter{Tenant: "t1"}, []string{"a", "b", "c", "d"}},
			{rag.Filter{Tenant: "t1", KBIDs: []string{"kb1"}}, []string{"a", "b", "c"}},
			{rag.Filter{Tenant: "t1", DocumentIDs: []string{"d1", "d3"}}, []string{"a", "b", "d"}},
			{rag.Filter{Tenant: "t1", Tags: []string{"nomatch"}}, []string{"a", "b", "c", "d"}}, // tags ignored
			{rag.Filter{Tenant: "t2"}, []string{"e"}},
			{rag.Filter{Tenant: "t3"}, []string{}},
			{rag.Filter{Tenant: "t1", KBIDs: []string{"kb9"}}, []string{}},
		} {
			if got := list(t, l, c.f); !slices.Equal(got, c.want) {
				t.Errorf("ListVectors(%+v) = %v, want %v", c.f, got, c.want)
			}
		}
		refs, err := l.ListVectors(ctx, rag.Filter{Tenant: "t1", DocumentIDs: []string{"d2"}})
		must(t, err)
		if want := (store.VectorRef{ID: "c", KBID: "kb1", DocumentID: "d2", ChunkID: "cc"}); len(refs) != 1 || refs[0] != want {
			t.Fatalf("ref = %+v, want %+v", refs, want)
		}
	})

	t.Run("AfterDelete", func(t *testing.T) {
		ix, l := lister(t)
		ctx := ctxT(t)
		must(t, ix.Upsert(ctx, []rag.VectorRecord{rec("t1", "kb1", "d1", "a", unit(0, -1, 0)), rec("t1", "kb1", "d2", "b", unit(1, -1, 0))}))
		must(t, ix.Flush(ctx))
		must(t, ix.DeleteDocument(ctx, "t1", "kb1", "d1"))
		must(t, ix.Flush(ctx))
		if got := list(t, l, rag.Filter{Tenant: "t1"}); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("after delete: %v", got)
		}
	})

	// More records than one page of a paging adapter (Milvus returns at most 16,384 rows per query).
	t.Run("ManyPages", func(t *testing.T) {
		ix, l := lister(t)
		ctx := ctxT(t)
		const n = 9000
		var recs []rag.VectorRecord
		var want []string
		for i := range n {
			id := fmt.Sprintf("v%05d", i)
			recs = append(recs, rec("t1", "kb1", fmt.Sprintf("d%d", i%50), id, unit(i%VectorDim, (i+1)%VectorDim, 0.5)))
			want = append(want, id)
		}
		must(t, ix.Upsert(ctx, recs))
		must(t, ix.Flush(ctx))
		got := list(t, l, rag.Filter{Tenant: "t1"})
		if !slices.Equal(got, want) {
			t.Fatalf("listed %d records (first %v), want %d", len(got), got[:min(3, len(got))], n)
		}
	})

	t.Run("InvalidFilter", func(t *testing.T) {
		_, l := lister(t)
		for _, f := range []rag.Filter{{}, {Tenant: `a"b`}, {Tenant: "t1", KBIDs: []string{"' or true"}}} {
			if _, err := l.ListVectors(ctxT(t), f); !rag.Is(err, rag.KindInvalid) {
				t.Errorf("ListVectors(%q) = %v, want Invalid", strings.Join(append([]string{f.Tenant}, f.KBIDs...), ","), err)
			}
		}
	})
}
