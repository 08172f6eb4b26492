package milvus

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/storetest"
)

func unit(axis int) []float32 {
	v := make([]float32, storetest.VectorDim)
	v[axis] = 1
	return v
}

func rec(id string) rag.VectorRecord {
	return rag.VectorRecord{ID: id, Tenant: "t1", KBID: "kb", DocumentID: "d", ChunkID: "c", Vector: unit(0)}
}

// late opens a search-side index (Late), closed when the test ends.
func late(t *testing.T, o Options) *Index {
	t.Helper()
	o.Late, o.Dim, o.CallTimeout = true, storetest.VectorDim, 5*time.Second
	ix, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// counting counts the server's calls by method.
func counting(srv *fakemilvus.Server) map[string]*atomic.Int64 {
	n := map[string]*atomic.Int64{}
	for _, m := range []string{"Connect", "HasCollection", "DescribeCollection", "CreateCollection", "LoadCollection", "GetLoadState", "Search"} {
		n[m] = &atomic.Int64{}
	}
	srv.Inject = func(method string) *commonpb.Status {
		if c, ok := n[method]; ok {
			c.Add(1)
		}
		return nil
	}
	return n
}

// A Late index opens before its collection exists (a fresh stack: the query function starts before any
// function that creates collections) and reports the absence on every call, looking again at most every
// AttachEvery; once the ingest side has created and loaded the collection, the next look attaches. It
// never creates or loads a collection itself.
func TestLateCollection(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	calls := counting(srv)
	ix := late(t, Options{Addr: srv.Addr(), Collection: "chunks"})
	now := time.Now() // Open looked with the real clock just before
	ix.now = func() time.Time { return now }
	if _, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindNotFound || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Search before the collection exists: %v, want NotFound saying so", err)
	}
	if _, err := ix.Count(ctx, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindNotFound {
		t.Errorf("Count before the collection exists: %v, want NotFound", err)
	}
	if err := ix.Upsert(ctx, []rag.VectorRecord{rec("a")}); rag.KindOf(err) != rag.KindNotFound {
		t.Errorf("Upsert before the collection exists: %v, want NotFound", err)
	}
	// the client's HasCollection is a DescribeCollection
	if n := calls["DescribeCollection"].Load(); n != 1 {
		t.Errorf("%d DescribeCollection calls within AttachEvery of Open, want 1 (Open's)", n)
	}
	if n := calls["CreateCollection"].Load() + calls["LoadCollection"].Load(); n != 0 {
		t.Errorf("the Late index created or loaded a collection (%d calls)", n)
	}
	ref := open(t, srv.Addr(), "chunks") // the ingest side
	if err := ref.Upsert(ctx, []rag.VectorRecord{rec("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindNotFound {
		t.Errorf("Search within AttachEvery of the last look: %v, want the remembered NotFound", err)
	}
	now = now.Add(AttachEvery)
	hits, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"})
	if err != nil || len(hits) != 1 || hits[0].ID != "a" {
		t.Fatalf("Search after the collection appeared: %v, %v; want hit a", hits, err)
	}
	// a Late index still refuses a collection of another dimension at Open
	if _, err := Open(ctx, Options{Addr: srv.Addr(), Collection: "chunks", Dim: 2 * storetest.VectorDim, Late: true}); rag.KindOf(err) != rag.KindInvalid {
		t.Errorf("Late open with a wrong dimension: %v, want Invalid", err)
	}
}

// A collection released after the index attached fails searches as Unavailable (not Internal), and
// the index looks for it again: once it is loaded again, searches work without reopening.
func TestReleasedCollectionIsLookedForAgain(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	ref := open(t, srv.Addr(), "chunks")
	if err := ref.Upsert(ctx, []rag.VectorRecord{rec("a")}); err != nil {
		t.Fatal(err)
	}
	ix := late(t, Options{Addr: srv.Addr(), Collection: "chunks"})
	now := time.Now()
	ix.now = func() time.Time { return now }
	if _, err := srv.ReleaseCollection(ctx, &milvuspb.ReleaseCollectionRequest{CollectionName: "chunks"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindUnavailable || !strings.Contains(err.Error(), "not loaded") {
		t.Fatalf("Search of a released collection: %v, want Unavailable saying it is not loaded", err)
	}
	if ix.attached.Load() {
		t.Error("the index still counts itself attached to a released collection")
	}
	if _, err := srv.LoadCollection(ctx, &milvuspb.LoadCollectionRequest{CollectionName: "chunks"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(AttachEvery)
	if hits, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); err != nil || len(hits) != 1 {
		t.Fatalf("Search once loaded again: %v, %v; want one hit", hits, err)
	}
}

// A cancelled caller does not become the reason the collection is absent for everyone: the look runs
// without the caller's cancellation.
func TestCancelledCallerDoesNotPoisonAttach(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	ix := late(t, Options{Addr: srv.Addr(), Collection: "chunks"})
	now := time.Now().Add(AttachEvery)
	ix.now = func() time.Time { return now }
	open(t, srv.Addr(), "chunks") // creates and loads it
	cancelled, cancel := context.WithCancel(ctx)
	var armed atomic.Bool
	armed.Store(true)
	srv.Inject = func(method string) *commonpb.Status {
		if method == "DescribeCollection" && armed.CompareAndSwap(true, false) {
			cancel()
			time.Sleep(300 * time.Millisecond) // let the client see the cancellation before the reply
		}
		return nil
	}
	_, _ = ix.Search(cancelled, unit(0), 3, rag.Filter{Tenant: "t1"})
	if _, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); err != nil {
		t.Fatalf("Search after a cancelled caller's look: %v, want it attached", err)
	}
}

// A Lazy index makes no call at Open (not even the connection's): the first call connects and creates
// and loads the collection, or, with Late, looks for it. A server that is down at that first call is
// that call's Unavailable, and a later call connects once the server is back.
func TestLazyOpen(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	calls := counting(srv)
	ix, err := Open(ctx, Options{Addr: srv.Addr(), Collection: "chunks", Dim: storetest.VectorDim, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	for m, n := range calls {
		if n.Load() != 0 {
			t.Errorf("Lazy Open called %s %d times, want no call", m, n.Load())
		}
	}
	if err := ix.Upsert(ctx, []rag.VectorRecord{rec("a")}); err != nil {
		t.Fatalf("first call of a Lazy index: %v", err)
	}
	if calls["CreateCollection"].Load() != 1 || calls["Connect"].Load() != 1 {
		t.Errorf("first call: %d CreateCollection, %d Connect; want 1 and 1", calls["CreateCollection"].Load(), calls["Connect"].Load())
	}
	describes := calls["DescribeCollection"].Load()
	if n, err := ix.Count(ctx, rag.Filter{Tenant: "t1"}); err != nil || n != 1 {
		t.Errorf("Count = %d, %v; want 1", n, err)
	}
	if calls["Connect"].Load() != 1 || calls["DescribeCollection"].Load() != describes {
		t.Errorf("a later call connected or looked again: %d Connect, %d more DescribeCollection", calls["Connect"].Load(), calls["DescribeCollection"].Load()-describes)
	}

	// a server that is not there at the first call
	proxy := storetest.NewProxy(t, srv.Addr())
	proxy.Stop()
	down, err := Open(ctx, Options{Addr: proxy.Addr(), Collection: "chunks", Dim: storetest.VectorDim, Lazy: true, Late: true, DialTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("Lazy Open against a stopped server: %v, want no error until the first call", err)
	}
	defer down.Close()
	if _, err := down.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindUnavailable {
		t.Errorf("first call against a stopped server: %v, want Unavailable", err)
	}
}
