package milvuslite_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus-proto/go-api/v2/schemapb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/milvus/milvuslite"
	"github.com/docmind/docmind/shared/store/storetest"
)

const dim = storetest.VectorDim

// full opens the collection with the official client's adapter, which creates and loads it: the
// ingest side's part.
func full(t *testing.T, addr, token, coll string) *milvus.Index {
	t.Helper()
	ix, err := milvus.Open(context.Background(), milvus.Options{Addr: addr, Token: token, Collection: coll, Dim: dim,
		CallTimeout: 5 * time.Second}) // Search at Bounded, as the reader does by default
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func lite(t *testing.T, o milvuslite.Options) *milvuslite.Index {
	t.Helper()
	if o.Dim == 0 {
		o.Dim = dim
	}
	if o.CallTimeout == 0 {
		o.CallTimeout = 5 * time.Second
	}
	ix, err := milvuslite.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

// The memory collection is written through this adapter in the query function, so it passes the
// whole VectorIndex contract, over a collection the full adapter created.
func TestConformanceFake(t *testing.T) {
	storetest.TestVectorIndex(t, func(t *testing.T) store.VectorIndex {
		srv := fakemilvus.Start(t)
		full(t, srv.Addr(), "", "chunks")
		return lite(t, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks"})
	})
}

// The reader returns what the official client's adapter returns for the same data and question: ids,
// order, fields and scores (within 1e-6), for every filter shape, several k and an empty collection.
func TestSameHitsAsFullAdapter(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	ref := full(t, srv.Addr(), "", "chunks")
	ix := lite(t, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks"})
	rng := rand.New(rand.NewPCG(1, 2))
	vec := func() []float32 {
		v := make([]float32, dim)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	queries := [][]float32{vec(), vec(), vec()}
	filters := []rag.Filter{
		{Tenant: "t1"},
		{Tenant: "t2"},
		{Tenant: "t1", KBIDs: []string{"kb1"}},
		{Tenant: "t1", KBIDs: []string{"kb1", "kb2"}, DocumentIDs: []string{"d1", "d3"}},
		{Tenant: "t1", Tags: []string{"red"}},
		{Tenant: "t1", KBIDs: []string{"kb2"}, Tags: []string{"red", "blue"}},
		{Tenant: "t3"},
	}
	compare := func(t *testing.T) {
		for _, q := range queries {
			for _, f := range filters {
				for _, k := range []int{1, 3, 10, 100} {
					want, err := ref.Search(ctx, q, k, f)
					if err != nil {
						t.Fatal(err)
					}
					got, err := ix.Search(ctx, q, k, f)
					if err != nil {
						t.Fatalf("Search(%+v, k=%d): %v", f, k, err)
					}
					sameHits(t, fmt.Sprintf("filter %+v k=%d", f, k), got, want)
				}
			}
		}
	}
	t.Run("Empty", compare)
	var recs []rag.VectorRecord
	tagSets := [][]string{nil, {"red"}, {"blue"}, {"red", "blue"}}
	for i := range 60 {
		recs = append(recs, rag.VectorRecord{ID: fmt.Sprintf("c%02d", i), Tenant: []string{"t1", "t2"}[i%2],
			KBID: fmt.Sprintf("kb%d", 1+i%3), DocumentID: fmt.Sprintf("d%d", i%5), ChunkID: fmt.Sprintf("ch%d", i),
			Tags: tagSets[i%4], Vector: vec()})
	}
	// two exact duplicates of a vector under different ids: equal scores must come back ordered by id
	recs = append(recs, rag.VectorRecord{ID: "dup-b", Tenant: "t1", KBID: "kb1", DocumentID: "d1", ChunkID: "x", Vector: queries[0]},
		rag.VectorRecord{ID: "dup-a", Tenant: "t1", KBID: "kb1", DocumentID: "d1", ChunkID: "y", Vector: queries[0]})
	if err := ref.Upsert(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := ref.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	t.Run("Seeded", compare)
	n, err := ix.Count(ctx, rag.Filter{Tenant: "t1"})
	if want, _ := ref.Count(ctx, rag.Filter{Tenant: "t1"}); err != nil || n != want || n != 32 {
		t.Errorf("Count = %d, %v; full adapter %d, want 32", n, err, want)
	}
}

func sameHits(t *testing.T, what string, got, want []rag.Hit) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: nil hits, want a non-nil slice", what)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d hits, full adapter %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.KBID != w.KBID || g.DocumentID != w.DocumentID || g.ChunkID != w.ChunkID || math.Abs(float64(g.Score-w.Score)) > 1e-6 {
			t.Fatalf("%s: hit %d = %+v, full adapter %+v", what, i, g, w)
		}
	}
}

// The token reaches the server as the client sends it (base64 in "authorization", the Connect
// identifier on later calls), and a wrong one is refused at Open.
func TestAuthHeader(t *testing.T) {
	const token = "root:Milvus"
	srv := fakemilvus.StartWithToken(t, token)
	ref := full(t, srv.Addr(), token, "chunks")
	if _, err := ref.Search(context.Background(), unit(0), 3, rag.Filter{Tenant: "t1"}); err != nil {
		t.Fatal(err)
	}
	refMD := srv.Metadata("Search")
	ix := lite(t, milvuslite.Options{Addr: srv.Addr(), Token: token, Collection: "chunks"})
	if _, err := ix.Search(context.Background(), unit(0), 3, rag.Filter{Tenant: "t1"}); err != nil {
		t.Fatal(err)
	}
	md := srv.Metadata("Search")
	for _, k := range []string{"authorization", "identifier", "dbname"} {
		if got, want := md.Get(k), refMD.Get(k); !slices.Equal(got, want) {
			t.Errorf("%s = %q, the official client sends %q", k, got, want)
		}
	}
	if got := md.Get("client-request-unixmsec"); len(got) != 1 || len(refMD.Get("client-request-unixmsec")) != 1 {
		t.Errorf("client-request-unixmsec = %q, the official client sends one (%q)", got, refMD.Get("client-request-unixmsec"))
	}
	if got, want := md.Get("authorization"), base64.StdEncoding.EncodeToString([]byte(token)); len(got) != 1 || got[0] != want {
		t.Errorf("authorization = %q, want [%q]", got, want)
	}
	if got := md.Get("identifier"); len(got) != 1 || got[0] != "1" {
		t.Errorf("identifier = %q, want the Connect answer [1]", got)
	}
	if got := md.Get("dbname"); len(got) != 0 {
		t.Errorf("dbname = %q, want none for an address without a database", got)
	}
	_, err := milvuslite.Open(context.Background(), milvuslite.Options{Addr: srv.Addr(), Token: "root:wrong", Collection: "chunks", Dim: dim})
	if err == nil || !strings.Contains(err.Error(), "auth") {
		t.Errorf("wrong token: %v, want an authentication failure", err)
	}
}

// A database named in the address travels in "dbname", as with the client.
func TestDatabaseHeader(t *testing.T) {
	srv := fakemilvus.Start(t)
	full(t, srv.Addr(), "", "chunks")
	lite(t, milvuslite.Options{Addr: "http://" + srv.Addr() + "/team_db", Collection: "chunks"})
	if got := srv.Metadata("DescribeCollection").Get("dbname"); len(got) != 1 || got[0] != "team_db" {
		t.Errorf("dbname = %q, want [team_db]", got)
	}
}

// A server that is not there, or that accepts TCP and never answers, gives Unavailable within the
// dial timeout; a server that dies after Open gives Unavailable within the call timeout.
func TestUnreachableIsUnavailable(t *testing.T) {
	refused := closedPort(t)
	silent, err := net.Listen("tcp", "127.0.0.1:0") // never accepts: the handshake never completes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	const timeout = 300 * time.Millisecond
	for name, addr := range map[string]string{"refused": refused, "silent": silent.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			_, err := milvuslite.Open(context.Background(), milvuslite.Options{Addr: addr, Collection: "chunks", Dim: dim, DialTimeout: timeout})
			took := time.Since(start)
			if rag.KindOf(err) != rag.KindUnavailable {
				t.Fatalf("Open: %v (kind %v), want Unavailable", err, rag.KindOf(err))
			}
			if took > 10*timeout {
				t.Errorf("Open took %s, want about the dial timeout %s", took, timeout)
			}
		})
	}
	t.Run("stopped", func(t *testing.T) {
		srv := fakemilvus.Start(t)
		full(t, srv.Addr(), "", "chunks")
		ix := lite(t, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks", CallTimeout: timeout})
		srv.Stop()
		start := time.Now()
		_, err := ix.Search(context.Background(), unit(0), 3, rag.Filter{Tenant: "t1"})
		if rag.KindOf(err) != rag.KindUnavailable {
			t.Fatalf("Search: %v, want Unavailable", err)
		}
		if took := time.Since(start); took > 10*timeout {
			t.Errorf("Search took %s, want about the call timeout %s", took, timeout)
		}
	})
}

func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// Open never creates or loads: a missing collection is NotFound naming it, one that is not loaded is
// Unavailable (and Open did not load it), a changed dimension is Invalid.
func TestOpenChecksCollection(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	var loads atomic.Int64
	srv.Inject = func(method string) *commonpb.Status {
		if method == "LoadCollection" || method == "CreateCollection" {
			loads.Add(1)
		}
		return nil
	}
	_, err := milvuslite.Open(ctx, milvuslite.Options{Addr: srv.Addr(), Collection: "absent", Dim: dim})
	if rag.KindOf(err) != rag.KindNotFound || !strings.Contains(err.Error(), "collection absent does not exist") {
		t.Errorf("missing collection: %v, want NotFound naming it", err)
	}
	if n := loads.Load(); n != 0 {
		t.Errorf("Open of a missing collection created or loaded it (%d calls)", n)
	}
	createUnloaded(t, srv.Addr(), "cold")
	loads.Store(0)
	_, err = milvuslite.Open(ctx, milvuslite.Options{Addr: srv.Addr(), Collection: "cold", Dim: dim})
	if rag.KindOf(err) != rag.KindUnavailable || !strings.Contains(err.Error(), "not loaded") {
		t.Errorf("unloaded collection: %v, want Unavailable saying it is not loaded", err)
	}
	if n := loads.Load(); n != 0 {
		t.Errorf("Open of an unloaded collection created or loaded it (%d calls)", n)
	}
	srv.Inject = nil
	full(t, srv.Addr(), "", "chunks")
	_, err = milvuslite.Open(ctx, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks", Dim: dim * 2})
	if rag.KindOf(err) != rag.KindInvalid {
		t.Errorf("dimension mismatch: %v, want Invalid", err)
	}
}

// createUnloaded creates a collection with an index but does not load it.
func createUnloaded(t *testing.T, addr, coll string) {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := milvuspb.NewMilvusServiceClient(conn)
	sch, _ := proto.Marshal(&schemapb.CollectionSchema{Name: coll, Fields: []*schemapb.FieldSchema{
		{FieldID: 100, Name: "id", DataType: schemapb.DataType_VarChar, IsPrimaryKey: true, TypeParams: []*commonpb.KeyValuePair{{Key: "max_length", Value: "64"}}},
		{FieldID: 101, Name: "vector", DataType: schemapb.DataType_FloatVector, TypeParams: []*commonpb.KeyValuePair{{Key: "dim", Value: fmt.Sprint(dim)}}},
	}})
	if st, err := c.CreateCollection(context.Background(), &milvuspb.CreateCollectionRequest{CollectionName: coll, Schema: sch}); err != nil || st.GetCode() != 0 {
		t.Fatalf("create %s: %v %v", coll, st, err)
	}
}

// Milvus's rate limiter answers in the status, not in gRPC: Unavailable, so the caller retries later.
func TestRateLimitIsUnavailable(t *testing.T) {
	srv := fakemilvus.Start(t)
	full(t, srv.Addr(), "", "chunks")
	ix := lite(t, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks"})
	srv.Inject = func(method string) *commonpb.Status {
		if method == "Search" || method == "Query" {
			return fakemilvus.RateLimited()
		}
		return nil
	}
	if _, err := ix.Search(context.Background(), unit(0), 3, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindUnavailable {
		t.Errorf("Search: %v, want Unavailable", err)
	}
	if _, err := ix.Count(context.Background(), rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindUnavailable {
		t.Errorf("Count: %v, want Unavailable", err)
	}
}

func unit(axis int) []float32 {
	v := make([]float32, dim)
	v[axis] = 1
	return v
}

// A Late index opens before its collection exists (a fresh stack: the query function starts before any
// function that creates collections) and reports the absence on every call, looking again at most every
// AttachEvery; once the ingest side has created and loaded the collection, the next look attaches.
func TestLateCollection(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	var describes atomic.Int64
	srv.Inject = func(method string) *commonpb.Status {
		if method == "DescribeCollection" {
			describes.Add(1)
		}
		return nil
	}
	ix := lite(t, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks", Late: true})
	now := time.Now() // Open looked with the real clock just before
	milvuslite.SetClock(ix, func() time.Time { return now })
	if _, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindNotFound || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Search before the collection exists: %v, want NotFound saying so", err)
	}
	if _, err := ix.Count(ctx, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindNotFound {
		t.Errorf("Count before the collection exists: %v, want NotFound", err)
	}
	if err := ix.Upsert(ctx, []rag.VectorRecord{{ID: "a", Tenant: "t1", KBID: "kb", DocumentID: "d", ChunkID: "c", Vector: unit(0)}}); rag.KindOf(err) != rag.KindNotFound {
		t.Errorf("Upsert before the collection exists: %v, want NotFound", err)
	}
	if n := describes.Load(); n != 1 {
		t.Errorf("%d DescribeCollection calls within AttachEvery of Open, want 1 (Open's)", n)
	}
	ref := full(t, srv.Addr(), "", "chunks")
	if err := ref.Upsert(ctx, []rag.VectorRecord{{ID: "a", Tenant: "t1", KBID: "kb", DocumentID: "d", ChunkID: "c", Vector: unit(0)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindNotFound {
		t.Errorf("Search within AttachEvery of the last look: %v, want the remembered NotFound", err)
	}
	now = now.Add(milvuslite.AttachEvery)
	hits, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"})
	if err != nil || len(hits) != 1 || hits[0].ID != "a" {
		t.Fatalf("Search after the collection appeared: %v, %v; want hit a", hits, err)
	}
	// a Late index still refuses a collection of another dimension at Open
	if _, err := milvuslite.Open(ctx, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks", Dim: 2 * dim, Late: true}); rag.KindOf(err) != rag.KindInvalid {
		t.Errorf("Late open with a wrong dimension: %v, want Invalid", err)
	}
}

// A collection released after Open fails searches as Unavailable (not Internal), and the index looks
// for it again: once it is loaded again, searches work without reopening.
func TestReleasedCollectionIsLookedForAgain(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	ref := full(t, srv.Addr(), "", "chunks")
	if err := ref.Upsert(ctx, []rag.VectorRecord{{ID: "a", Tenant: "t1", KBID: "kb", DocumentID: "d", ChunkID: "c", Vector: unit(0)}}); err != nil {
		t.Fatal(err)
	}
	ix := lite(t, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks", Late: true})
	now := time.Now()
	milvuslite.SetClock(ix, func() time.Time { return now })
	if _, err := srv.ReleaseCollection(ctx, &milvuspb.ReleaseCollectionRequest{CollectionName: "chunks"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); rag.KindOf(err) != rag.KindUnavailable || !strings.Contains(err.Error(), "not loaded") {
		t.Fatalf("Search of a released collection: %v, want Unavailable saying it is not loaded", err)
	}
	if _, err := srv.LoadCollection(ctx, &milvuspb.LoadCollectionRequest{CollectionName: "chunks"}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(milvuslite.AttachEvery)
	if hits, err := ix.Search(ctx, unit(0), 3, rag.Filter{Tenant: "t1"}); err != nil || len(hits) != 1 {
		t.Fatalf("Search once loaded again: %v, %v; want one hit", hits, err)
	}
}

// A cancelled caller does not become the reason the collection is absent for everyone: the look runs
// without the caller's cancellation.
func TestCancelledCallerDoesNotPoisonAttach(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	ix := lite(t, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks", Late: true})
	now := time.Now().Add(milvuslite.AttachEvery)
	milvuslite.SetClock(ix, func() time.Time { return now })
	full(t, srv.Addr(), "", "chunks") // creates and loads it
	// the caller gives up while the index is looking for its collection
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

// Every request the reader sends is the one the official client sends for the same operation (compared
// as protobuf messages, with the parameter and column lists in one order: the client builds them from
// maps).
func TestSameRequestsAsOfficialClient(t *testing.T) {
	ctx := context.Background()
	srv := fakemilvus.Start(t)
	ref := full(t, srv.Addr(), "", "chunks")
	ix := lite(t, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks"})
	recs := []rag.VectorRecord{
		{ID: "a", Tenant: "t1", KBID: "kb1", DocumentID: "d1", ChunkID: "c1", Tags: []string{"red", "blue"}, Vector: unit(0)},
		{ID: "b", Tenant: "t1", KBID: "kb2", DocumentID: "d2", ChunkID: "c2", Vector: unit(1)},
	}
	f := rag.Filter{Tenant: "t1", KBIDs: []string{"kb1", "kb2"}, Tags: []string{"red"}}
	ops := []struct {
		method    string
		ref, lite func() error
	}{
		{"GetLoadState", func() error {
			_, err := milvus.Open(ctx, milvus.Options{Addr: srv.Addr(), Collection: "chunks", Dim: dim})
			return err
		},
			func() error {
				_, err := milvuslite.Open(ctx, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks", Dim: dim})
				return err
			}},
		{"Upsert", func() error { return ref.Upsert(ctx, recs) }, func() error { return ix.Upsert(ctx, recs) }},
		{"Search", func() error { _, err := ref.Search(ctx, unit(0), 7, f); return err },
			func() error { _, err := ix.Search(ctx, unit(0), 7, f); return err }},
		{"Query", func() error { _, err := ref.Count(ctx, f); return err }, func() error { _, err := ix.Count(ctx, f); return err }},
		{"Delete", func() error { return ref.Delete(ctx, "t1", []string{"a", "b"}) }, func() error { return ix.Delete(ctx, "t1", []string{"a", "b"}) }},
	}
	for _, op := range ops {
		t.Run(op.method, func(t *testing.T) {
			if err := op.ref(); err != nil {
				t.Fatal(err)
			}
			want := normalize(srv.Request(op.method))
			if err := op.lite(); err != nil {
				t.Fatal(err)
			}
			got := normalize(srv.Request(op.method))
			if want == nil || !proto.Equal(got, want) {
				t.Errorf("reader sent\n%v\nthe official client\n%v", got, want)
			}
		})
	}
}

// normalize orders the lists the client fills from maps.
func normalize(m proto.Message) proto.Message {
	if m == nil {
		return nil
	}
	m = proto.Clone(m)
	byKey := func(kvs []*commonpb.KeyValuePair) {
		slices.SortFunc(kvs, func(a, b *commonpb.KeyValuePair) int { return strings.Compare(a.GetKey(), b.GetKey()) })
	}
	switch r := m.(type) {
	case *milvuspb.SearchRequest:
		byKey(r.SearchParams)
	case *milvuspb.QueryRequest:
		byKey(r.QueryParams)
	case *milvuspb.UpsertRequest:
		slices.SortFunc(r.FieldsData, func(a, b *schemapb.FieldData) int { return strings.Compare(a.GetFieldName(), b.GetFieldName()) })
	}
	return m
}

// An https:// address speaks TLS: against the plaintext fake the handshake fails, Unavailable.
func TestHTTPSUsesTLS(t *testing.T) {
	srv := fakemilvus.Start(t)
	full(t, srv.Addr(), "", "chunks")
	_, err := milvuslite.Open(context.Background(), milvuslite.Options{Addr: "https://" + srv.Addr(), Collection: "chunks", Dim: dim, DialTimeout: time.Second})
	if rag.KindOf(err) != rag.KindUnavailable {
		t.Errorf("https:// to a plaintext server: %v, want Unavailable (a failed TLS handshake)", err)
	}
	// the control: the same server over http:// opens
	lite(t, milvuslite.Options{Addr: "http://" + srv.Addr(), Collection: "chunks"})
}

// Search is Bounded unless StrongSearch asks for Strong (the protocol's zero value).
func TestSearchConsistency(t *testing.T) {
	srv := fakemilvus.Start(t)
	full(t, srv.Addr(), "", "chunks")
	for _, c := range []struct {
		strong bool
		want   commonpb.ConsistencyLevel
	}{{false, commonpb.ConsistencyLevel_Bounded}, {true, commonpb.ConsistencyLevel_Strong}} {
		ix := lite(t, milvuslite.Options{Addr: srv.Addr(), Collection: "chunks", StrongSearch: c.strong})
		if _, err := ix.Search(context.Background(), unit(0), 3, rag.Filter{Tenant: "t1"}); err != nil {
			t.Fatal(err)
		}
		req := srv.Request("Search").(*milvuspb.SearchRequest)
		if req.GetConsistencyLevel() != c.want || req.GetUseDefaultConsistency() {
			t.Errorf("StrongSearch=%v: level %v (use default %v), want %v", c.strong, req.GetConsistencyLevel(), req.GetUseDefaultConsistency(), c.want)
		}
	}
}
