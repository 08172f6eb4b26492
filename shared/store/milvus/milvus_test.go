package milvus

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus/client/v2/column"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/storetest"
)

// EnvAddr points the suite at a real Milvus as well.
const EnvAddr = "DOCMIND_TEST_MILVUS_ADDR"

func open(t *testing.T, addr, coll string) *Index {
	t.Helper()
	ix, err := Open(context.Background(), Options{Addr: addr, Collection: coll, Dim: storetest.VectorDim,
		StrongSearch: true, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func TestConformanceFake(t *testing.T) {
	storetest.TestVectorIndex(t, func(t *testing.T) store.VectorIndex {
		return open(t, fakemilvus.Start(t).Addr(), "chunks")
	})
}

func TestConformanceRealServer(t *testing.T) {
	addr := os.Getenv(EnvAddr)
	if addr == "" {
		t.Skip("set " + EnvAddr + "=host:port to run the vector suite against a real Milvus (no server package exists for this machine)")
	}
	storetest.TestVectorIndex(t, func(t *testing.T) store.VectorIndex {
		coll := "docmind_test_" + strings.ReplaceAll(rag.NewID("c"), "-", "_")
		ix := open(t, addr, coll)
		t.Cleanup(func() { ix.c.DropCollection(context.Background(), milvusclient.NewDropCollectionOption(coll)) })
		return ix
	})
}

func TestExprTenantFirstAndValidated(t *testing.T) {
	got, err := Expr(rag.Filter{Tenant: "t1", KBIDs: []string{"kb1", "kb2"}, DocumentIDs: []string{"d1"}, Tags: []string{"保险"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `tenant == "t1" and kb_id in ["kb1", "kb2"] and doc_id in ["d1"] and array_contains_any(tags, ["保险"])`
	if got != want {
		t.Fatalf("Expr = %s\nwant   %s", got, want)
	}
	// VEC-08: hostile values never reach an expression
	hostile := []string{`" or true or "`, `x" || tenant != "`, `a\"b`, "a\u201d or 1", strings.Repeat("a", 10000)}
	leaks := 0
	for _, h := range hostile {
		for _, f := range []rag.Filter{{Tenant: h}, {Tenant: "t", KBIDs: []string{h}}, {Tenant: "t", DocumentIDs: []string{h}}, {Tenant: "t", Tags: []string{h}}} {
			if e, err := Expr(f); err == nil {
				leaks++
				t.Errorf("hostile value accepted: %s", e)
			}
		}
	}
	if leaks != 0 {
		t.Fatalf("%d hostile filters produced expressions", leaks)
	}
}

// VEC-05: our write path keeps one row per id; a raw insert of the same id (the control) keeps two.
func TestUpsertDedupesWhereInsertDoesNot(t *testing.T) {
	srv := fakemilvus.Start(t)
	ix := open(t, srv.Addr(), "chunks")
	ctx := context.Background()
	r := rag.VectorRecord{ID: "v1", Tenant: "t", KBID: "kb", DocumentID: "d", Vector: []float32{1, 0, 0, 0, 0, 0, 0, 0}}
	for range 2 {
		if err := ix.Upsert(ctx, []rag.VectorRecord{r}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := ix.Count(ctx, rag.Filter{Tenant: "t"}); n != 1 {
		t.Fatalf("our path: count(*) = %d, want 1", n)
	}
	for range 2 {
		_, err := ix.c.Insert(ctx, milvusclient.NewColumnBasedInsertOption("chunks",
			column.NewColumnVarChar(FieldID, []string{"raw"}), column.NewColumnVarChar(FieldTenant, []string{"t"}),
			column.NewColumnVarChar(FieldKB, []string{"kb"}), column.NewColumnVarChar(FieldDoc, []string{"d"}),
			column.NewColumnVarChar(FieldChunk, []string{""}), column.NewColumnVarCharArray(FieldTags, [][]string{{}}),
			column.NewColumnFloatVector(FieldVector, 8, [][]float32{{0, 1, 0, 0, 0, 0, 0, 0}})))
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := ix.Count(ctx, rag.Filter{Tenant: "t", DocumentIDs: []string{"d"}}); n != 3 {
		t.Fatalf("control: count(*) = %d, want 3 (raw insert duplicates the id)", n)
	}
}

func TestReopenKeepsCollectionAndRefusesOtherDim(t *testing.T) {
	srv := fakemilvus.Start(t)
	ix := open(t, srv.Addr(), "chunks")
	ctx := context.Background()
	if err := ix.Upsert(ctx, []rag.VectorRecord{{ID: "a", Tenant: "t", KBID: "k", DocumentID: "d", Vector: []float32{1, 2, 3, 4, 5, 6, 7, 8}}}); err != nil {
		t.Fatal(err)
	}
	again := open(t, srv.Addr(), "chunks")
	if n, _ := again.Count(ctx, rag.Filter{Tenant: "t"}); n != 1 {
		t.Fatalf("reopened collection count = %d", n)
	}
	_, err := Open(ctx, Options{Addr: srv.Addr(), Collection: "chunks", Dim: 16})
	if rag.KindOf(err) != rag.KindInvalid {
		t.Fatalf("other dimension: %v, want Invalid", err)
	}
}

// VEC-07: a Milvus that rate-limits forever costs at most the call budget, not the client's 75 retries.
func TestRateLimitBoundedByCallTimeout(t *testing.T) {
	srv := fakemilvus.Start(t)
	ix := open(t, srv.Addr(), "chunks")
	srv.Inject = func(method string) *commonpb.Status {
		if method == "Search" || method == "Upsert" {
			return fakemilvus.RateLimited()
		}
		return nil
	}
	ix.o.CallTimeout = time.Second
	start := time.Now()
	_, err := ix.Search(context.Background(), []float32{1, 0, 0, 0, 0, 0, 0, 0}, 3, rag.Filter{Tenant: "t"})
	took := time.Since(start)
	if rag.KindOf(err) != rag.KindUnavailable {
		t.Fatalf("rate-limited search: %v (%v), want Unavailable", rag.KindOf(err), err)
	}
	if took > 5*time.Second {
		t.Fatalf("rate-limited search took %v, budget 1 s", took)
	}
	t.Logf("rate-limited search gave up after %v", took)
}

func TestUnavailable(t *testing.T) {
	srv := fakemilvus.Start(t)
	proxy := storetest.NewProxy(t, srv.Addr())
	ix := open(t, proxy.Addr(), "chunks")
	ix.o.CallTimeout = 2 * time.Second
	if err := ix.Upsert(context.Background(), []rag.VectorRecord{{ID: "a", Tenant: "t", KBID: "k", DocumentID: "d", Vector: []float32{1, 2, 3, 4, 5, 6, 7, 8}}}); err != nil {
		t.Fatal(err)
	}
	proxy.Stop()
	q := []float32{1, 0, 0, 0, 0, 0, 0, 0}
	storetest.TestUnavailable(t, map[string]func(context.Context) error{
		"Search": func(ctx context.Context) error { _, err := ix.Search(ctx, q, 3, rag.Filter{Tenant: "t"}); return err },
		"Count":  func(ctx context.Context) error { _, err := ix.Count(ctx, rag.Filter{Tenant: "t"}); return err },
		"Upsert": func(ctx context.Context) error {
			return ix.Upsert(ctx, []rag.VectorRecord{{ID: "b", Tenant: "t", KBID: "k", DocumentID: "d", Vector: q}})
		},
		"Delete": func(ctx context.Context) error { return ix.Delete(ctx, "t", []string{"a"}) },
		// Flush makes no call (an acknowledged write is already durable in Milvus)
	})
	// and a server that is not there at all: Open fails within the dial timeout
	start := time.Now()
	_, err := Open(context.Background(), Options{Addr: proxy.Addr(), Collection: "c", Dim: 8, DialTimeout: time.Second})
	if rag.KindOf(err) != rag.KindUnavailable || time.Since(start) > 5*time.Second {
		t.Fatalf("Open against a stopped server: %v after %v", err, time.Since(start))
	}
}

// Search is Bounded unless StrongSearch asks for Strong. Strong is the protocol's zero value: with a
// level option defaulted when zero, Strong could not be asked for (it was silently Bounded).
func TestSearchConsistency(t *testing.T) {
	srv := fakemilvus.Start(t)
	for _, c := range []struct {
		strong bool
		want   commonpb.ConsistencyLevel
	}{{false, commonpb.ConsistencyLevel_Bounded}, {true, commonpb.ConsistencyLevel_Strong}} {
		ix, err := Open(context.Background(), Options{Addr: srv.Addr(), Collection: "chunks", Dim: storetest.VectorDim,
			StrongSearch: c.strong, CallTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		q := make([]float32, storetest.VectorDim)
		q[0] = 1
		if _, err := ix.Search(context.Background(), q, 3, rag.Filter{Tenant: "t1"}); err != nil {
			t.Fatal(err)
		}
		req, ok := srv.Request("Search").(*milvuspb.SearchRequest)
		if !ok || req.GetConsistencyLevel() != c.want {
			t.Errorf("StrongSearch=%v: request %v, want level %v", c.strong, req, c.want)
		}
		_ = ix.Close()
	}
}

// Flush sends nothing: Milvus rate-limits flushes per collection (0.1/s by default), and an
// acknowledged write is durable without one. Counts at Strong consistency see the write.
func TestFlushCallsNothing(t *testing.T) {
	srv := fakemilvus.Start(t)
	ix := open(t, srv.Addr(), "chunks")
	ctx := context.Background()
	if err := ix.Upsert(ctx, []rag.VectorRecord{{ID: "a", Tenant: "t", KBID: "k", DocumentID: "d", Vector: []float32{1, 2, 3, 4, 5, 6, 7, 8}}}); err != nil {
		t.Fatal(err)
	}
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if req := srv.Request("Flush"); req != nil {
		t.Errorf("Flush sent %v", req)
	}
	if n, err := ix.Count(ctx, rag.Filter{Tenant: "t"}); err != nil || n != 1 {
		t.Errorf("Count after the upsert = %d, %v; want 1", n, err)
	}
}
