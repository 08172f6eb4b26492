package milvus

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/storetest"
)

// A cold start against a loaded collection must not call LoadCollection (whose client-side task waits
// at least one 200 ms poll); a collection that is not loaded still is.
func TestOpenSkipsLoadWhenLoaded(t *testing.T) {
	srv := fakemilvus.Start(t)
	var loads atomic.Int64
	srv.Inject = func(method string) *commonpb.Status {
		if method == "LoadCollection" {
			loads.Add(1)
		}
		return nil
	}
	open(t, srv.Addr(), "chunks")
	if loads.Load() != 1 {
		t.Fatalf("first open: %d LoadCollection calls, want 1", loads.Load())
	}
	start := time.Now()
	open(t, srv.Addr(), "chunks")
	warm := time.Since(start)
	if loads.Load() != 1 {
		t.Fatalf("second open of a loaded collection called LoadCollection (%d calls)", loads.Load())
	}
	t.Logf("open of a loaded collection: %s, no LoadCollection", warm)
}

// Check (docmind aws preflight) on a Late index says why the collection cannot be used: missing is
// NotFound, released is Unavailable "not loaded", another dimension is Invalid; once usable, nil.
func TestCheckLate(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	late := func(dim int) error {
		ix, err := Open(ctx, Options{Addr: srv.Addr(), Collection: "chunks", Dim: storetest.VectorDim * dim, Late: true, Lazy: true})
		if err != nil {
			t.Fatal(err)
		}
		defer ix.Close()
		return ix.Check(ctx)
	}
	if err := late(1); !rag.Is(err, rag.KindNotFound) {
		t.Errorf("missing collection: %v, want NotFound", err)
	}
	open(t, srv.Addr(), "chunks")
	if err := late(1); err != nil {
		t.Errorf("created and loaded: %v", err)
	}
	if err := late(2); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("another dimension: %v, want Invalid", err)
	}
	c, err := milvusclient.New(ctx, &milvusclient.ClientConfig{Address: srv.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if err := c.ReleaseCollection(ctx, milvusclient.NewReleaseCollectionOption("chunks")); err != nil {
		t.Fatal(err)
	}
	if err := late(1); !rag.Is(err, rag.KindUnavailable) || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("released: %v, want Unavailable, not loaded", err)
	}
}
