package memvec

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// Flushes that append the log outside the index's lock, racing writers, searches and each other, keep
// every acknowledged write and its order: upserts then deletes of the same ids, reopened after a crash
// (no Close), leave exactly the rows that should remain.
func TestConcurrentFlushesKeepOrderAcrossACrash(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vectors.bin")
	ix, err := Open(path, 8)
	if err != nil {
		t.Fatal(err)
	}
	vec := func(i int) []float32 {
		v := make([]float32, 8)
		v[i%8], v[(i+3)%8] = 1, float32(i%5+1)
		return v
	}
	const writers, perWriter = 4, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				id := fmt.Sprintf("w%d-%d", w, i)
				rec := rag.VectorRecord{ID: id, Tenant: "t", KBID: "kb", DocumentID: fmt.Sprintf("d%d", w), ChunkID: "c" + id, Vector: vec(i)}
				if err := ix.Upsert(ctx, []rag.VectorRecord{rec}); err != nil {
					t.Error(err)
					return
				}
				if i%2 == 1 { // every odd one is deleted again after its upsert: order matters in the log
					if err := ix.Delete(ctx, "t", []string{id}); err != nil {
						t.Error(err)
						return
					}
				}
				if err := ix.Flush(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() { // searches go on during the flushes
		for range 200 {
			if _, err := ix.Search(ctx, vec(1), 5, rag.Filter{Tenant: "t"}); err != nil {
				t.Error(err)
				return
			}
		}
	})
	wg.Wait()
	ix.release() // a crash: no Close, no snapshot, only what Flush made durable
	re, err := Open(path, 8)
	if err != nil {
		t.Fatal(err)
	}
	defer re.Close()
	n, err := re.Count(ctx, rag.Filter{Tenant: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if want := writers * perWriter / 2; n != want {
		t.Fatalf("after the crash %d vectors, want %d (the even ones)", n, want)
	}
	for w := range writers {
		if n, _ := re.Count(ctx, rag.Filter{Tenant: "t", DocumentIDs: []string{fmt.Sprintf("d%d", w)}}); n != perWriter/2 {
			t.Errorf("writer %d: %d vectors after the crash, want %d", w, n, perWriter/2)
		}
	}
}
