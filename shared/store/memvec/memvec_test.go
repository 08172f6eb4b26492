package memvec

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/storetest"
)

func TestConformanceInMemory(t *testing.T) {
	storetest.TestVectorIndex(t, func(t *testing.T) store.VectorIndex { return New(storetest.VectorDim) })
}

// Persisted: every check runs against an index that is closed and reopened from disk after each Flush.
func TestConformancePersisted(t *testing.T) {
	storetest.TestVectorIndex(t, func(t *testing.T) store.VectorIndex {
		ix, err := Open(filepath.Join(t.TempDir(), "vectors.bin"), storetest.VectorDim)
		if err != nil {
			t.Fatal(err)
		}
		return &reopening{t: t, Index: ix}
	})
}

// reopening reloads the index from disk after every Flush, as if the process had crashed right after
// it (no Close, so the log is replayed), so the suite proves that a Flush is durable.
type reopening struct {
	t *testing.T
	*Index
}

func (r *reopening) Flush(ctx context.Context) error {
	if err := r.Index.Flush(ctx); err != nil {
		return err
	}
	r.Index.release()
	ix, err := Open(r.Index.path, r.Index.dim)
	if err != nil {
		r.t.Fatalf("reopen: %v", err)
	}
	r.Index = ix
	return nil
}

func randVecs(n, dim int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	v := make([]float32, n*dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func TestReloadKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "vectors.bin")
	ix, err := Open(path, 16)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := randVecs(500, 16, 7)
	var recs []rag.VectorRecord
	for i := range 500 {
		recs = append(recs, rag.VectorRecord{ID: rag.VectorID("kb", "d", "h", i), Tenant: "t", KBID: "kb", DocumentID: "d", ChunkID: "c", Tags: []string{"标签"}, Vector: data[i*16 : (i+1)*16]})
	}
	if err := ix.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := ix.Delete(ctx, "t", []string{recs[3].ID}); err != nil {
		t.Fatal(err)
	}
	before, _ := ix.Search(ctx, data[:16], 20, rag.Filter{Tenant: "t", Tags: []string{"标签"}})
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	re, err := Open(path, 16)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := re.Search(ctx, data[:16], 20, rag.Filter{Tenant: "t", Tags: []string{"标签"}})
	if len(before) != 20 || !slices.Equal(before, after) {
		t.Fatalf("search differs after reload:\n%v\n%v", before, after)
	}
	if n, _ := re.Count(ctx, rag.Filter{Tenant: "t"}); n != 499 {
		t.Fatalf("count after reload %d", n)
	}
	re.Close()
	if _, err := Open(path, 32); rag.KindOf(err) != rag.KindInvalid {
		t.Fatalf("reopening with another dimension: %v, want Invalid", err)
	}
}

func TestCorruptSnapshotIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vectors.bin")
	ix, _ := Open(path, 4)
	ix.Upsert(context.Background(), []rag.VectorRecord{{ID: "a", Tenant: "t", KBID: "k", DocumentID: "d", Vector: []float32{1, 2, 3, 4}}})
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	for name, mut := range map[string][]byte{
		"flipped byte": func() []byte { c := slices.Clone(b); c[len(c)-6] ^= 0xff; return c }(),
		"truncated":    b[:len(b)-3],
		"bad magic":    append([]byte("XXXXXXXX"), b[8:]...),
		"empty":        {},
	} {
		os.WriteFile(path, mut, 0o644)
		if _, err := Open(path, 4); err == nil {
			t.Errorf("%s: corrupt snapshot accepted", name)
		}
	}
}

func TestConcurrentReadersAndWriter(t *testing.T) {
	ix := New(32)
	ctx := context.Background()
	data := randVecs(2000, 32, 3)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 2000 {
			ix.Upsert(ctx, []rag.VectorRecord{{ID: rag.VectorID("k", "d", "h", i), Tenant: "t", KBID: "k", DocumentID: "d", Vector: data[i*32 : (i+1)*32]}})
			if i%10 == 0 {
				ix.Delete(ctx, "t", []string{rag.VectorID("k", "d", "h", i/2)})
			}
		}
	})
	for range 4 {
		wg.Go(func() {
			for i := range 300 {
				hits, err := ix.Search(ctx, data[i*32:(i+1)*32], 5, rag.Filter{Tenant: "t"})
				if err != nil {
					t.Error(err)
					return
				}
				for j := 1; j < len(hits); j++ {
					if hits[j].Score > hits[j-1].Score {
						t.Error("unsorted hits")
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func TestDotMatchesGeneric(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 200 {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		x, y := dot(a, b), dotGeneric(a, b)
		if d := x - y; d > 1e-4 || d < -1e-4 {
			t.Fatalf("n=%d: dot %v, generic %v", n, x, y)
		}
	}
}

// Flush appends to the log; a crash mid-append leaves a torn record that Open drops, keeping everything
// flushed before it.
func TestLogReplayAndTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vectors.bin")
	ctx := context.Background()
	ix, err := Open(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id string, v ...float32) rag.VectorRecord {
		return rag.VectorRecord{ID: id, Tenant: "t", KBID: "k", DocumentID: "d", Vector: v}
	}
	ix.Upsert(ctx, []rag.VectorRecord{rec("a", 1, 0, 0, 0), rec("b", 0, 1, 0, 0), rec("c", 0, 0, 1, 0)})
	ix.Flush(ctx)
	ix.Delete(ctx, "t", []string{"b"})
	ix.Upsert(ctx, []rag.VectorRecord{rec("a", 0, 0, 0, 1)})
	ix.Flush(ctx)
	ix.release() // the process dies here
	if _, err := os.Stat(path + ".log"); err != nil {
		t.Fatalf("flush did not write a log: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a small flush rewrote the snapshot")
	}
	// simulate a crash in the middle of the next append
	f, _ := os.OpenFile(path+".log", os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{opUpsert, 200, 0, 0, 0, 1, 2, 3})
	f.Close()

	re, err := Open(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := re.Count(ctx, rag.Filter{Tenant: "t"}); n != 2 {
		t.Fatalf("after replay %d rows, want 2 (a, c)", n)
	}
	hits, _ := re.Search(ctx, []float32{0, 0, 0, 1}, 1, rag.Filter{Tenant: "t"})
	if len(hits) != 1 || hits[0].ID != "a" || hits[0].Score < 0.999 {
		t.Fatalf("the replayed update of a is lost: %+v", hits)
	}
	// the torn tail is gone, so new appends replay
	re.Upsert(ctx, []rag.VectorRecord{rec("d", 1, 1, 0, 0)})
	re.Flush(ctx)
	re.release()
	again, err := Open(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := again.Count(ctx, rag.Filter{Tenant: "t"}); n != 3 {
		t.Fatalf("after a second replay %d rows, want 3", n)
	}
	// Close folds the log into a snapshot
	if err := again.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".log"); !os.IsNotExist(err) {
		t.Fatalf("log survives Close: %v", err)
	}
	last, _ := Open(path, 4)
	if n, _ := last.Count(ctx, rag.Filter{Tenant: "t"}); n != 3 {
		t.Fatalf("after compaction %d rows", n)
	}
}

func TestSecondProcessRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vectors.bin")
	a, err := Open(path, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, 4); rag.KindOf(err) != rag.KindConflict {
		t.Fatalf("second open while the first is open: %v, want Conflict", err)
	}
	a.Close()
	b, err := Open(path, 4)
	if err != nil {
		t.Fatalf("open after close: %v", err)
	}
	b.Close()
}
