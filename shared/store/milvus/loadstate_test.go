package milvus

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"

	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
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
