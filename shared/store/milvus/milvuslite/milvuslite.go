// Package milvuslite is the query side's Milvus adapter: the same collection as shared/store/milvus,
// spoken over the generated protocol (milvus-proto's milvuspb and google.golang.org/grpc) instead of the
// official Go client, because github.com/milvus-io/milvus/client/v2 links milvus/pkg (etcd, prometheus,
// sentry, jaeger, gopsutil, zap...) and their package initialisers: 26 MB of the query Lambda and part of
// every cold start (issue #12).
//
// It opens an existing collection and never creates or loads one: Open fails with NotFound when the
// collection does not exist and Unavailable when it is not loaded, because creating and loading belong
// to the ingest side's shared/store/milvus.Open, and a load task waits at least one 200 ms poll that a
// cold start should not pay. With Options.Late the absence is not fatal at Open but reported by every
// call until the collection appears (a fresh stack, where only the api, ingest and stage functions
// create the collections). Every request carries what the official client (v2.6.2) sends for the same
// call: the same search parameters, consistency level and output fields, the base64 "authorization"
// header, "dbname" when the address names a database, and the identifier from the Connect handshake.
// Every call is bounded by CallTimeout; transport failures are retried inside it, as the client's retry
// interceptor does.
package milvuslite

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/milvus/milvusexpr"
)

var _ store.VectorIndex = (*Index)(nil)

// Options configure the index: the same options as the full adapter's (Late is for this one).
type Options = milvusexpr.Options

// AttachEvery is how often a Late index looks for its collection again.
const AttachEvery = 5 * time.Second

// searchLevel is the consistency level of Search.
func searchLevel(o Options) commonpb.ConsistencyLevel {
	if o.StrongSearch {
		return commonpb.ConsistencyLevel_Strong
	}
	return commonpb.ConsistencyLevel_Bounded
}

// Index is a store.VectorIndex over one existing, loaded Milvus collection.
type Index struct {
	conn *grpc.ClientConn
	svc  milvuspb.MilvusServiceClient
	o    Options
	hdr  *headers

	mu       sync.Mutex
	schemaTS uint64 // the collection's update timestamp, sent with upserts as the client does

	attached   atomic.Bool
	attachMu   sync.Mutex
	lastLook   time.Time
	lastAbsent error // why the collection was not attached at lastLook
	now        func() time.Time
}

// Open connects, checks that the collection exists with the configured dimension and is loaded, and
// returns the index. Errors: Invalid (options, a dimension mismatch), NotFound (no such collection),
// Unavailable (unreachable within DialTimeout, collection not loaded).
func Open(ctx context.Context, o Options) (*Index, error) {
	const op = "milvuslite.Open"
	o, err := o.WithDefaults(op)
	if err != nil {
		return nil, err
	}
	a, err := parseAddr(o.Addr)
	if err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	ix := &Index{o: o, hdr: newHeaders(o.Token, a.db), now: time.Now}
	conn, err := grpc.NewClient("passthrough:///"+a.host, ix.dialOptions(a.tls)...)
	if err != nil {
		return nil, rag.E(op, rag.KindInvalid, fmt.Errorf("milvus address %s: %w", o.Addr, err))
	}
	ix.conn, ix.svc = conn, milvuspb.NewMilvusServiceClient(conn)
	if err := ix.handshake(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	if err := ix.attach(ctx); err != nil && !(o.Late && absent(err)) {
		conn.Close()
		return nil, err
	}
	return ix, nil
}

// attach checks the collection exists with the configured dimension and is loaded.
//
// Concurrent callers serialise on attachMu and the ones that waited return at once when another
// attached meanwhile (a second look must not undo the first). The look runs without the caller's
// cancellation (each call is still bounded by CallTimeout), so one cancelled request cannot become the
// reason every other request is refused for AttachEvery.
func (ix *Index) attach(ctx context.Context) error {
	ix.attachMu.Lock()
	defer ix.attachMu.Unlock()
	if ix.attached.Load() {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	ix.lastLook = ix.now()
	err := ix.describe(ctx)
	if err == nil {
		err = ix.requireLoaded(ctx)
	}
	ix.lastAbsent = err
	if err == nil {
		ix.attached.Store(true)
	}
	return err
}

// classify is classifyErr, and a reply saying the collection is gone or no longer loaded (dropped or
// released after Open) detaches the index, so the next call looks for it again instead of failing the
// same way until a cold start.
func (ix *Index) classify(op string, err error) error {
	err = classifyErr(op, err)
	if absent(err) {
		ix.attached.Store(false)
	}
	return err
}

// errNotLoaded marks the load-state failure, which Late tolerates like a missing collection.
var errNotLoaded = errors.New("collection not loaded")

// absent reports whether err says the collection is missing or not loaded (not a transport failure, a
// refused token or a wrong dimension).
func absent(err error) bool {
	return rag.KindOf(err) == rag.KindNotFound || errors.Is(err, errNotLoaded)
}

// ready returns nil once the collection is attached; before that, it looks again at most every
// AttachEvery and otherwise returns the last reason, so a missing collection costs a chat two calls to
// Milvus every few seconds, not on every question.
func (ix *Index) ready(ctx context.Context, op string) error {
	if ix.attached.Load() {
		return nil
	}
	ix.attachMu.Lock()
	last, why := ix.lastLook, ix.lastAbsent
	ix.attachMu.Unlock()
	if ix.attached.Load() {
		return nil
	}
	if ix.now().Sub(last) < AttachEvery && why != nil {
		return rag.E(op, rag.KindOf(why), why)
	}
	if err := ix.attach(ctx); err != nil {
		return rag.E(op, rag.KindOf(err), err)
	}
	return nil
}

// addr is a parsed Milvus address.
type addr struct {
	host string // host:port
	tls  bool
	db   string
}

// parseAddr reads an address as the client does: no scheme means plain TCP; https:// means TLS and
// port 443 unless one is given; a path names the database.
func parseAddr(s string) (addr, error) {
	raw := s
	if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
		raw = "tcp://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return addr{}, fmt.Errorf("milvus address %q: %w", s, err)
	}
	if u.Host == "" {
		return addr{}, fmt.Errorf("milvus address %q has no host", s)
	}
	a := addr{host: u.Host, tls: u.Scheme == "https", db: strings.TrimLeft(u.Path, "/")}
	if a.tls && u.Port() == "" {
		a.host += ":443"
	}
	return a, nil
}

func (ix *Index) dialOptions(useTLS bool) []grpc.DialOption {
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		// the full adapter's settings: no keepalive pings while idle (a frozen Lambda cannot answer them)
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
			MinConnectTimeout: ix.o.DialTimeout,
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(math.MaxInt32)),
		// retry outside, headers inside: every attempt carries fresh headers, as with the client
		grpc.WithChainUnaryInterceptor(retryTransient, ix.hdr.intercept),
	}
}

// headers is the metadata every call carries.
type headers struct {
	auth, db string

	mu         sync.RWMutex
	identifier string
}

// newHeaders encodes the token as the client encodes an API key: base64 of the token as given, so
// "user:password" gives the same header as a username and password would.
func newHeaders(token, db string) *headers {
	h := &headers{db: db}
	if token != "" {
		h.auth = base64.StdEncoding.EncodeToString([]byte(token))
	}
	return h
}

func (h *headers) setIdentifier(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.identifier = id
}

func (h *headers) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	kv := make([]string, 0, 8)
	if h.auth != "" {
		kv = append(kv, "authorization", h.auth)
	}
	if h.db != "" {
		kv = append(kv, "dbname", h.db)
	}
	h.mu.RLock()
	if h.identifier != "" {
		kv = append(kv, "identifier", h.identifier)
	}
	h.mu.RUnlock()
	kv = append(kv, "client-request-unixmsec", strconv.FormatInt(time.Now().UnixMilli(), 10))
	return invoker(metadata.AppendToOutgoingContext(ctx, kv...), method, req, reply, cc, opts...)
}

// maxAttempts and the backoff (60 ms x 3^attempt) are the client's retry interceptor's; the caller's
// deadline bounds them all.
const maxAttempts = 6

// retryTransient retries calls that failed in transport (Unavailable, ResourceExhausted) within ctx.
func retryTransient(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	var err error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		if attempt > 0 {
			wait := 60 * time.Millisecond * time.Duration(math.Pow(3, float64(attempt)))
			if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
				// the next attempt could not start in time: say what failed now, not "deadline exceeded"
				// after sleeping into it
				return err
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return status.Errorf(status.FromContextError(ctx.Err()).Code(), "%v (last attempt: %v)", ctx.Err(), err)
			case <-t.C:
			}
		}
		err = invoker(ctx, method, req, reply, cc, opts...)
		if c := status.Code(err); c != codes.Unavailable && c != codes.ResourceExhausted {
			return err
		}
	}
	return err
}

func (ix *Index) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ix.o.CallTimeout)
}

// handshake is the client's Connect: it proves the server is reachable and authorised within
// DialTimeout and returns the identifier later calls carry. A server without Connect (before 2.2.9)
// answers Unimplemented, which the client accepts, and so does this.
func (ix *Index) handshake(ctx context.Context) error {
	const op = "milvuslite.Open"
	dctx, cancel := context.WithTimeout(ctx, ix.o.DialTimeout)
	defer cancel()
	host, _ := os.Hostname()
	resp, err := ix.svc.Connect(dctx, &milvuspb.ConnectRequest{ClientInfo: &commonpb.ClientInfo{
		SdkType: "docmind-milvuslite", SdkVersion: "1", LocalTime: time.Now().String(), Host: host}})
	if status.Code(err) == codes.Unimplemented {
		return nil
	}
	if err := check(resp, err); err != nil {
		return ix.classify(op, fmt.Errorf("connect to %s: %w", ix.o.Addr, err))
	}
	ix.hdr.setIdentifier(strconv.FormatInt(resp.GetIdentifier(), 10))
	return nil
}

// describe checks the collection exists with the configured dimension and keeps its update timestamp.
func (ix *Index) describe(ctx context.Context) error {
	const op = "milvuslite.Open"
	cctx, cancel := ix.call(ctx)
	defer cancel()
	resp, err := ix.svc.DescribeCollection(cctx, &milvuspb.DescribeCollectionRequest{CollectionName: ix.o.Collection})
	if err := check(resp, err); err != nil {
		err = ix.classify(op, err)
		if rag.KindOf(err) == rag.KindNotFound {
			return rag.E(op, rag.KindNotFound, fmt.Errorf("collection %s does not exist: the ingest side creates it (the api, ingest or stage function, or docmind serve): %w", ix.o.Collection, err))
		}
		return err
	}
	for _, f := range resp.GetSchema().GetFields() {
		if f.GetName() != milvusexpr.FieldVector {
			continue
		}
		for _, kv := range f.GetTypeParams() {
			if kv.GetKey() == "dim" && kv.GetValue() != strconv.Itoa(ix.o.Dim) {
				return rag.Errorf(op, rag.KindInvalid, "collection %s has dimension %s, configured %d (a changed embedding model needs a new collection)", ix.o.Collection, kv.GetValue(), ix.o.Dim)
			}
		}
	}
	ix.mu.Lock()
	ix.schemaTS = resp.GetUpdateTimestamp()
	ix.mu.Unlock()
	return nil
}

// requireLoaded asks for the load state once and never waits: a collection that is not loaded is
// Unavailable until the ingest side loads it.
func (ix *Index) requireLoaded(ctx context.Context) error {
	const op = "milvuslite.Open"
	cctx, cancel := ix.call(ctx)
	defer cancel()
	resp, err := ix.svc.GetLoadState(cctx, &milvuspb.GetLoadStateRequest{CollectionName: ix.o.Collection})
	if err := check(resp, err); err != nil {
		return ix.classify(op, err)
	}
	if st := resp.GetState(); st != commonpb.LoadState_LoadStateLoaded {
		return rag.E(op, rag.KindUnavailable, fmt.Errorf("collection %s is not loaded (%s): the query side never loads it; the ingest side's open does: %w", ix.o.Collection, st, errNotLoaded))
	}
	return nil
}

// Close releases the connection.
func (ix *Index) Close() error { return ix.conn.Close() }

// StatusError is a failure Milvus reported in a response status rather than as a gRPC error.
type StatusError struct {
	Code      int32 // Milvus's error code (pkg/util/merr); 0 from servers before 2.3
	ErrorCode commonpb.ErrorCode
	Reason    string
	Retriable bool
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s (milvus code %d, %s)", e.Reason, e.Code, e.ErrorCode)
}

// Milvus error codes this package acts on (pkg/util/merr).
const (
	codeRateLimit           = 8
	codeCollectionNotFound  = 100
	codeCollectionNotLoaded = 101
	codeSchemaMismatch      = 109
)

// check turns a transport error or a failed status into an error, as the client's merr.CheckRPCCall.
func check(resp interface{ GetStatus() *commonpb.Status }, err error) error {
	if err != nil {
		return err
	}
	return statusErr(resp.GetStatus())
}

func statusErr(st *commonpb.Status) error {
	if st.GetErrorCode() == commonpb.ErrorCode_Success && st.GetCode() == 0 {
		return nil
	}
	return &StatusError{Code: st.GetCode(), ErrorCode: st.GetErrorCode(), Reason: st.GetReason(), Retriable: st.GetRetriable()}
}

// classifyErr is milvusexpr.Classify with the status codes read first: a missing collection is NotFound
// and a retriable status (rate limit, service not ready) Unavailable whatever the reason's wording.
func classifyErr(op string, err error) error {
	var se *StatusError
	if errors.As(err, &se) {
		switch {
		case se.Code == codeCollectionNotFound || se.ErrorCode == commonpb.ErrorCode_CollectionNotExists:
			return rag.E(op, rag.KindNotFound, err)
		case se.Code == codeCollectionNotLoaded:
			return rag.E(op, rag.KindUnavailable, fmt.Errorf("%w: %w", errNotLoaded, err))
		case se.Retriable || se.Code == codeRateLimit || se.ErrorCode == commonpb.ErrorCode_RateLimit:
			return rag.E(op, rag.KindUnavailable, err)
		}
	}
	return milvusexpr.Classify(op, err)
}
