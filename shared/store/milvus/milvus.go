// Package milvus is the AWS-side vector index: Zilliz Cloud or Milvus through the official Go client
// (github.com/milvus-io/milvus/client/v2). One collection holds every tenant's child chunks with the
// knowledge base as partition key; every filter expression is built here from ids that passed
// rag.ValidateID (so nothing a user types reaches the expression), always with the tenant first.
//
// Milvus facts this adapter encodes: insert does not dedupe primary keys, so writes use upsert; "is the
// document fully indexed" is a count(*) query at Strong consistency (never num_entities, which counts
// deleted and duplicate rows until compaction); every call is bounded by its context, including the
// client's own rate-limit retries.
package milvus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/milvus-io/milvus/client/v2/column"
	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/index"
	"github.com/milvus-io/milvus/client/v2/milvusclient"
	mlog "github.com/milvus-io/milvus/pkg/v2/log"
	"github.com/milvus-io/milvus/pkg/v2/util/merr"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/keepalive"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/milvus/milvusexpr"
)

var _ store.VectorIndex = (*Index)(nil)

var quietClientLog sync.Once

// Field names of the collection (milvusexpr holds them for both adapters).
const (
	FieldID     = milvusexpr.FieldID
	FieldTenant = milvusexpr.FieldTenant
	FieldKB     = milvusexpr.FieldKB
	FieldDoc    = milvusexpr.FieldDoc
	FieldChunk  = milvusexpr.FieldChunk
	FieldTags   = milvusexpr.FieldTags
	FieldVector = milvusexpr.FieldVector
	FieldMeta   = milvusexpr.FieldMeta
	maxTags     = rag.MaxTags
	maxIDLen    = 64
	upsertBatch = 500 // rows per Upsert call: 500 x 1024 x 4 B = 2 MiB, far under gRPC's limit
)

// Options configure the index.
type Options = milvusexpr.Options

// searchLevel is the consistency level of Search.
func searchLevel(o Options) entity.ConsistencyLevel {
	if o.StrongSearch {
		return entity.ClStrong
	}
	return entity.ClBounded
}

// AttachEvery is how often an index that has not reached its collection (Lazy or Late) looks again:
// until then calls fail with the last reason, so a missing collection or a down server costs a chat one
// look every few seconds, not one on every question.
const AttachEvery = 5 * time.Second

// Index is a store.VectorIndex over one Milvus collection.
type Index struct {
	o    Options
	coll string
	now  func() time.Time

	// attachMu serialises connecting and looking for the collection; c is set by the first successful
	// connect and read by calls only after attached was seen true (its store orders c's write first).
	attachMu sync.Mutex
	c        *milvusclient.Client
	attached atomic.Bool
	lastLook time.Time
	lastErr  error
	// hasMeta: the collection has FieldMeta (created with it, or added by the ingest side's open), so
	// rows can carry their document's metadata and a metadata filter can be searched as an expression
	hasMeta atomic.Bool
	// metaSearches counts searches answered by a metadata expression, metaFallbacks those that went
	// back to the id list (a hit outside the restriction, or the server refusing the expression)
	metaSearches, metaFallbacks atomic.Int64
}

// Open returns the index over o.Collection. By default it connects, creates the collection (schema,
// COSINE index) when it does not exist and loads it, and returns any failure. With o.Lazy it returns at
// once and does all that at the first call (a Lambda's init pays no round trip to Milvus). With o.Late
// (the search side) it never creates or loads a collection: one that is missing or not loaded fails
// every call (NotFound, Unavailable) until the ingest side has made it, looking again every
// AttachEvery. Errors: Invalid (options, a dimension mismatch), Unavailable (unreachable within
// DialTimeout), and with neither option NotFound never (the collection is created).
func Open(ctx context.Context, o Options) (*Index, error) {
	const op = "milvus.Open"
	o, err := o.WithDefaults(op)
	if err != nil {
		return nil, err
	}
	ix := &Index{o: o, coll: o.Collection, now: time.Now}
	if o.Lazy {
		return ix, nil
	}
	if err := ix.attach(ctx); err != nil && !(o.Late && absent(err)) {
		ix.Close()
		return nil, err
	}
	return ix, nil
}

// connect dials the server (once; a failed dial is retried by the next attach).
func (ix *Index) connect(ctx context.Context) error {
	const op = "milvus.Open"
	if ix.c != nil {
		return nil
	}
	o := ix.o
	cfg := &milvusclient.ClientConfig{
		Address: o.Addr,
		APIKey:  o.Token,
		// the client's defaults without its unbounded keepalive expectations; WithBlock makes New
		// fail within DialTimeout instead of returning a client that hangs on first use
		DialOptions: []grpc.DialOption{
			grpc.WithBlock(),
			grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second}),
			grpc.WithConnectParams(grpc.ConnectParams{
				Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
				MinConnectTimeout: o.DialTimeout,
			}),
		},
		// the rate-limit interceptor retries inside ctx only (VEC-07): a small count, short backoff
		RetryRateLimit: &milvusclient.RetryRateLimitOption{MaxRetry: 3, MaxBackoff: time.Second},
	}
	if strings.HasPrefix(o.Addr, "https://") {
		cfg.EnableTLSAuth = true
	}
	quietClientLog.Do(func() {
		// the client logs every retry at WARN; errors reach our caller classified, and the edge logs once
		mlog.SetLevel(zapcore.ErrorLevel)
	})
	dctx, cancel := context.WithTimeout(ctx, o.DialTimeout)
	defer cancel()
	c, err := milvusclient.New(dctx, cfg)
	if err != nil {
		return classify(op, fmt.Errorf("connect to %s: %w", o.Addr, err))
	}
	ix.c = c
	return nil
}

// attach connects and makes sure the collection is there: created and loaded, or with Late only looked
// for. Concurrent callers serialise on attachMu and the ones that waited return at once when another
// attached meanwhile. The work runs without the caller's cancellation (each call is still bounded by
// CallTimeout and DialTimeout), so one cancelled request cannot become the reason every other request
// is refused for AttachEvery.
func (ix *Index) attach(ctx context.Context) error {
	ix.attachMu.Lock()
	defer ix.attachMu.Unlock()
	if ix.attached.Load() {
		return nil
	}
	ctx = context.WithoutCancel(ctx)
	ix.lastLook = ix.now()
	err := ix.connect(ctx)
	if err == nil {
		if ix.o.Late {
			err = ix.look(ctx)
		} else {
			err = ix.ensureCollection(ctx)
		}
	}
	ix.lastErr = err
	if err == nil {
		ix.attached.Store(true)
	}
	return err
}

// ready returns nil once the index is attached; before that it attaches, at most every AttachEvery,
// and otherwise returns the last reason.
func (ix *Index) ready(ctx context.Context, op string) error {
	if ix.attached.Load() {
		return nil
	}
	ix.attachMu.Lock()
	last, why := ix.lastLook, ix.lastErr
	ix.attachMu.Unlock()
	if ix.attached.Load() {
		return nil
	}
	if why != nil && ix.now().Sub(last) < AttachEvery {
		return rag.E(op, rag.KindOf(why), why)
	}
	if err := ix.attach(ctx); err != nil {
		return rag.E(op, rag.KindOf(err), err)
	}
	return nil
}

// errNotLoaded marks a collection that exists but is not loaded, which Late tolerates like a missing one.
var errNotLoaded = errors.New("collection not loaded")

// absent reports whether err says the collection is missing or not loaded (not a transport failure, a
// refused token or a wrong dimension).
func absent(err error) bool {
	return rag.KindOf(err) == rag.KindNotFound || errors.Is(err, errNotLoaded) || errors.Is(err, merr.ErrCollectionNotLoaded)
}

// look is Late's attach: the collection must exist with the configured dimension and be loaded; it is
// never created or loaded from here, and the load state is asked once, never waited for.
func (ix *Index) look(ctx context.Context) error {
	const op = "milvus.Open"
	cctx, cancel := ix.call(ctx)
	defer cancel()
	has, err := ix.c.HasCollection(cctx, milvusclient.NewHasCollectionOption(ix.coll))
	if err != nil {
		return classify(op, err)
	}
	if !has {
		return rag.Errorf(op, rag.KindNotFound, "collection %s does not exist: the ingest side creates it (the api, ingest or stage function, or docmind serve)", ix.coll)
	}
	if err := ix.checkDim(cctx); err != nil {
		return err
	}
	st, err := ix.c.GetLoadState(cctx, milvusclient.NewGetLoadStateOption(ix.coll))
	if err != nil {
		return classify(op, err)
	}
	if st.State != entity.LoadStateLoaded {
		return rag.E(op, rag.KindUnavailable, fmt.Errorf("collection %s is not loaded: the query side never loads it; the ingest side's open does: %w", ix.coll, errNotLoaded))
	}
	return nil
}

// classify classifies err for op; a reply saying the collection is gone or no longer loaded (dropped
// or released after the index attached) detaches the index, so a later call looks for it again
// instead of failing the same way until a cold start.
func (ix *Index) classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, merr.ErrCollectionNotLoaded) {
		err = rag.E(op, rag.KindUnavailable, fmt.Errorf("%w: %w", errNotLoaded, err))
	} else if errors.Is(err, merr.ErrCollectionNotFound) {
		err = rag.E(op, rag.KindNotFound, err)
	} else {
		err = classify(op, err)
	}
	if absent(err) {
		ix.attached.Store(false)
	}
	return err
}

// Schema is the collection schema: primary key id, tenant, kb_id (partition key), doc_id, chunk_id,
// tags (array of varchar), the float vector and meta, a nullable JSON field holding the document's
// metadata (milvusexpr.FieldMeta; nullable so that a collection made before it can gain it with
// AddCollectionField).
func Schema(name string, dim int) *entity.Schema {
	vc := func(n string) *entity.Field {
		return entity.NewField().WithName(n).WithDataType(entity.FieldTypeVarChar).WithMaxLength(maxIDLen)
	}
	return entity.NewSchema().WithName(name).WithDescription("docmind child chunks").WithAutoID(false).
		WithField(vc(FieldID).WithIsPrimaryKey(true)).
		WithField(vc(FieldTenant)).
		WithField(vc(FieldKB).WithIsPartitionKey(true)).
		WithField(vc(FieldDoc)).
		WithField(vc(FieldChunk)).
		WithField(entity.NewField().WithName(FieldTags).WithDataType(entity.FieldTypeArray).WithElementType(entity.FieldTypeVarChar).
			WithMaxLength(maxIDLen).WithMaxCapacity(maxTags)).
		WithField(entity.NewField().WithName(FieldVector).WithDataType(entity.FieldTypeFloatVector).WithDim(int64(dim))).
		WithField(metaField())
}

// metaField is FieldMeta's schema.
func metaField() *entity.Field {
	return entity.NewField().WithName(FieldMeta).WithDataType(entity.FieldTypeJSON).WithNullable(true)
}

func (ix *Index) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, ix.o.CallTimeout)
}

func (ix *Index) ensureCollection(ctx context.Context) error {
	const op = "milvus.ensureCollection"
	cctx, cancel := ix.call(ctx)
	defer cancel()
	has, err := ix.c.HasCollection(cctx, milvusclient.NewHasCollectionOption(ix.coll))
	if err != nil {
		return classify(op, err)
	}
	if !has {
		opt := milvusclient.NewCreateCollectionOption(ix.coll, Schema(ix.coll, ix.o.Dim)).
			WithIndexOptions(milvusclient.NewCreateIndexOption(ix.coll, FieldVector, index.NewAutoIndex(entity.COSINE))).
			WithConsistencyLevel(entity.ClBounded)
		if err := ix.c.CreateCollection(cctx, opt); err != nil && !strings.Contains(err.Error(), "already exist") {
			return classify(op, err)
		}
		ix.hasMeta.Store(true) // Schema has it (or a concurrent creator's, which is the same schema)
	} else if err := ix.checkDim(cctx); err != nil {
		return err
	}
	if !ix.hasMeta.Load() {
		// a collection made before the metadata field: add it (Milvus 2.6 adds nullable fields to a
		// loaded collection; its rows read null until their documents' metadata is mirrored). A
		// server that cannot is not an error: metadata filters keep using id lists there.
		if err := ix.c.AddCollectionField(cctx, milvusclient.NewAddCollectionFieldOption(ix.coll, metaField())); err == nil {
			ix.hasMeta.Store(true)
		}
	}
	if has {
		// A collection that is already loaded (every cold start but the first) needs no LoadCollection:
		// the client's load task polls its progress every 200 ms, so even a no-op load cost each Lambda
		// cold start 200 ms. Any doubt (an error, a partial load) falls through to the load.
		if st, err := ix.c.GetLoadState(cctx, milvusclient.NewGetLoadStateOption(ix.coll)); err == nil && st.State == entity.LoadStateLoaded {
			return nil
		}
	}
	task, err := ix.c.LoadCollection(cctx, milvusclient.NewLoadCollectionOption(ix.coll))
	if err != nil {
		return classify(op, err)
	}
	return classify(op, task.Await(cctx))
}

// checkDim refuses a collection whose vector dimension is not the configured one (Invalid), and notes
// whether it has the metadata field.
func (ix *Index) checkDim(ctx context.Context) error {
	const op = "milvus.Open"
	coll, err := ix.c.DescribeCollection(ctx, milvusclient.NewDescribeCollectionOption(ix.coll))
	if err != nil {
		return classify(op, err)
	}
	for _, f := range coll.Schema.Fields {
		if f.Name == FieldVector && f.TypeParams["dim"] != fmt.Sprint(ix.o.Dim) {
			return rag.Errorf(op, rag.KindInvalid, "collection %s has dimension %s, configured %d (a changed embedding model needs a new collection)", ix.coll, f.TypeParams["dim"], ix.o.Dim)
		}
		if f.Name == FieldMeta && f.DataType == entity.FieldTypeJSON {
			ix.hasMeta.Store(true)
		}
	}
	return nil
}

// Check attaches now unless attached, without waiting for AttachEvery, and returns why the index cannot
// be used: with Late, NotFound for a missing collection, Unavailable for one that is not loaded (or an
// unreachable server), Invalid for another dimension; nil when it is usable. docmind aws preflight asks
// it of a deployed stack's collection.
func (ix *Index) Check(ctx context.Context) error {
	if ix.attached.Load() {
		return nil
	}
	return ix.attach(ctx)
}

// Close releases the connection, if one was made.
func (ix *Index) Close() error {
	ix.attachMu.Lock()
	defer ix.attachMu.Unlock()
	if ix.c == nil {
		return nil
	}
	return ix.c.Close(context.Background())
}

func classify(op string, err error) error { return milvusexpr.Classify(op, err) }

func quote(s string) string { return milvusexpr.Quote(s) }

// Expr builds the filter expression for f. The tenant clause is always first and always present.
func Expr(f rag.Filter) (string, error) { return milvusexpr.Expr(f) }

// Upsert implements store.VectorIndex. A batch is validated whole before anything is sent.
func (ix *Index) Upsert(ctx context.Context, recs []rag.VectorRecord) error {
	const op = "milvus.Upsert"
	if err := milvusexpr.CheckUpsert(ctx, op, ix.o.Dim, recs); err != nil {
		return err
	}
	if err := ix.ready(ctx, op); err != nil {
		return err
	}
	return ix.upsert(ctx, op, recs, nil)
}

// upsert writes recs; meta, when set, is every row's FieldMeta (SetDocumentMeta), else the field is
// left out and the rows read null: their document's metadata is not known to be in step until it is
// mirrored again (the metadata write that follows an ingest does).
func (ix *Index) upsert(ctx context.Context, op string, recs []rag.VectorRecord, meta []byte) error {
	for start := 0; start < len(recs); start += upsertBatch {
		batch := recs[start:min(start+upsertBatch, len(recs))]
		n := len(batch)
		ids, tenants, kbs, docs, chunks := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		tags, vecs := make([][]string, n), make([][]float32, n)
		for i, r := range batch {
			ids[i], tenants[i], kbs[i], docs[i], chunks[i], vecs[i] = r.ID, r.Tenant, r.KBID, r.DocumentID, r.ChunkID, r.Vector
			tags[i] = r.Tags
			if tags[i] == nil {
				tags[i] = []string{}
			}
		}
		cols := []column.Column{
			column.NewColumnVarChar(FieldID, ids), column.NewColumnVarChar(FieldTenant, tenants),
			column.NewColumnVarChar(FieldKB, kbs), column.NewColumnVarChar(FieldDoc, docs),
			column.NewColumnVarChar(FieldChunk, chunks), column.NewColumnVarCharArray(FieldTags, tags),
			column.NewColumnFloatVector(FieldVector, ix.o.Dim, vecs)}
		if meta != nil {
			vals, valid := make([][]byte, n), make([]bool, n)
			for i := range vals {
				vals[i], valid[i] = meta, true
			}
			mc, err := column.NewNullableColumnJSONBytes(FieldMeta, vals, valid)
			if err != nil {
				return rag.E(op, rag.KindInternal, err)
			}
			cols = append(cols, mc)
		}
		opt := milvusclient.NewColumnBasedInsertOption(ix.coll, cols...)
		cctx, cancel := ix.call(ctx)
		_, err := ix.c.Upsert(cctx, opt)
		cancel()
		if err != nil {
			return ix.classify(op, err)
		}
	}
	return nil
}

// SetDocumentMeta mirrors a document's metadata (normalised, as read at SQL metadata generation gen)
// onto every row of the document (FieldMeta), so that a metadata filter can be searched as an
// expression (issue #23). Milvus has no update of one field, so the rows are read back with their
// vectors and upserted whole; rows already carrying a copy of generation gen or later are left alone,
// so two writers mirroring out of order never leave the older copy. Nothing to do on a collection
// without the field. Invalid for bad ids, Unavailable when Milvus is.
func (ix *Index) SetDocumentMeta(ctx context.Context, tenant, kbID, docID string, m rag.Metadata, gen int64) error {
	const op = "milvus.SetDocumentMeta"
	base, err := milvusexpr.DocumentExpr(tenant, kbID, docID)
	if err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	if err := ix.ready(ctx, op); err != nil {
		return err
	}
	if !ix.hasMeta.Load() {
		return nil
	}
	g := FieldMeta + `["g"]`
	expr := fmt.Sprintf("%s and (%s is null or (not exists %s) or %s < %d)", base, FieldMeta, g, g, gen)
	cctx, cancel := ix.call(ctx)
	rs, err := ix.c.Query(cctx, milvusclient.NewQueryOption(ix.coll).WithFilter(expr).WithLimit(milvusexpr.MaxTopK).
		WithOutputFields(FieldID, FieldTenant, FieldKB, FieldDoc, FieldChunk, FieldTags, FieldVector).WithConsistencyLevel(entity.ClStrong))
	cancel()
	if err != nil {
		return ix.classify(op, err)
	}
	n := rs.ResultCount
	if n == 0 {
		return nil
	}
	if n >= milvusexpr.MaxTopK {
		return rag.Errorf(op, rag.KindInvalid, "document %s has %d or more chunks: more than one query returns", docID, n)
	}
	meta := milvusexpr.MetaJSON(m, gen)
	var recs []rag.VectorRecord
	col := func(name string) column.Column { return rs.GetColumn(name) }
	vecs, ok := col(FieldVector).(*column.ColumnFloatVector)
	tags, tagsOK := col(FieldTags).(*column.ColumnVarCharArray)
	if !ok || !tagsOK {
		return rag.Errorf(op, rag.KindInternal, "query returned no vectors or tags")
	}
	for i := range n {
		str := func(name string) string { v, _ := col(name).GetAsString(i); return v }
		t, _ := tags.Value(i)
		v, _ := vecs.Value(i)
		recs = append(recs, rag.VectorRecord{ID: str(FieldID), Tenant: str(FieldTenant), KBID: str(FieldKB), DocumentID: str(FieldDoc),
			ChunkID: str(FieldChunk), Tags: t, Vector: v})
	}
	return ix.upsert(ctx, op, recs, meta)
}

// Search implements store.VectorIndex.
//
// When the restriction came from a metadata filter (f.Meta: every question and search path carries
// it beside the ids) and the collection keeps metadata on its rows, the filter is searched as an
// expression (searchMeta), whatever the number of documents: the request is the size of the filter,
// not of its matches. Otherwise, or when that search cannot be trusted, the ids are the expression:
// a restriction longer than one expression carries is searched in parts of at most
// milvusexpr.MaxFilterIDs documents and the parts' hits merged: each part's top k holds every hit of
// the overall top k that lies in it, so the merge is the exact top k among all the documents, still
// chosen by Milvus under the restriction (before ranking), never by cutting an unrestricted result.
func (ix *Index) Search(ctx context.Context, query []float32, k int, f rag.Filter) ([]rag.Hit, error) {
	// attached first: a Lazy index learns whether the collection keeps metadata when it attaches, and
	// a cold start's first question is a filtered one as often as not
	if f.Meta != nil && len(f.DocumentIDs) > 0 && ix.ready(ctx, "milvus.Search") == nil && ix.hasMeta.Load() {
		if hits, ok, err := ix.searchMeta(ctx, query, k, f); err != nil || ok {
			return hits, err
		}
		ix.metaFallbacks.Add(1)
	}
	parts := restrictionParts(f)
	if len(parts) <= 1 {
		return ix.search(ctx, query, k, f)
	}
	var all []rag.Hit
	for _, p := range parts {
		hits, err := ix.search(ctx, query, k, p)
		if err != nil {
			return nil, err
		}
		all = append(all, hits...)
	}
	sortHits(all)
	return all[:min(k, len(all))], nil
}

// searchMeta searches once under the metadata filter's expression (milvusexpr.MetaSearchExpr), which
// selects every row of the filter's documents whose metadata is in step, plus rows whose metadata is
// not known yet. That superset's top k is the restriction's exact top k when every hit is inside the
// restriction (f.DocumentIDs, the authority: liveness, the knowledge bases asked); ok is false when a
// hit is not (a row not mirrored yet, a document being deleted) or the server refuses the
// expression, and the caller searches by id list instead. A document whose mirrored metadata is
// stale in a way that excludes it is the one case not caught here: the mirror (SetDocumentMeta on
// every metadata write) is what keeps that from happening.
func (ix *Index) searchMeta(ctx context.Context, query []float32, k int, f rag.Filter) ([]rag.Hit, bool, error) {
	const op = "milvus.Search"
	expr, err := milvusexpr.MetaSearchExpr(f)
	if err != nil {
		return nil, false, rag.E(op, rag.KindInvalid, err)
	}
	hits, err := ix.searchExpr(ctx, query, k, expr)
	if rag.Is(err, rag.KindInvalid) { // a server without JSON expressions: ids it is
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if len(hits) == 0 {
		return hits, false, nil // cheap to confirm by ids: nothing in step may mean nothing mirrored
	}
	in := make(map[string]bool, len(f.DocumentIDs))
	for _, id := range f.DocumentIDs {
		in[id] = true
	}
	for _, h := range hits {
		if !in[h.DocumentID] {
			return nil, false, nil
		}
	}
	ix.metaSearches.Add(1)
	return hits, true, nil
}

// KeepsMetadata reports whether the collection has the metadata field (as seen when the index
// attached): docmind aws preflight warns when it does not.
func (ix *Index) KeepsMetadata() bool { return ix.hasMeta.Load() }

// MetaSearches reports how many searches a metadata expression answered and how many fell back to
// the document-id parts (tests and docs/metadata-filters.md).
func (ix *Index) MetaSearches() (answered, fellBack int64) {
	return ix.metaSearches.Load(), ix.metaFallbacks.Load()
}

// restrictionParts splits f's document restriction into filters of at most MaxFilterIDs distinct
// documents each; f alone when it fits (or has none).
func restrictionParts(f rag.Filter) []rag.Filter {
	if len(f.DocumentIDs) <= milvusexpr.MaxFilterIDs {
		return []rag.Filter{f}
	}
	ids := slices.Compact(slices.Sorted(slices.Values(f.DocumentIDs)))
	var parts []rag.Filter
	for chunk := range slices.Chunk(ids, milvusexpr.MaxFilterIDs) {
		p := f
		p.DocumentIDs = chunk
		parts = append(parts, p)
	}
	return parts
}

// sortHits orders hits by score, best first, ties by id: Milvus orders by score, but equal scores come
// back in segment order.
func sortHits(hits []rag.Hit) {
	slices.SortStableFunc(hits, func(a, b rag.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

func (ix *Index) search(ctx context.Context, query []float32, k int, f rag.Filter) ([]rag.Hit, error) {
	expr, err := Expr(f)
	if err != nil {
		return nil, rag.E("milvus.Search", rag.KindInvalid, err)
	}
	return ix.searchExpr(ctx, query, k, expr)
}

// searchExpr searches under a filter expression built here.
func (ix *Index) searchExpr(ctx context.Context, query []float32, k int, expr string) ([]rag.Hit, error) {
	const op = "milvus.Search"
	if k < 1 || k > milvusexpr.MaxTopK {
		return nil, rag.Errorf(op, rag.KindInvalid, "k must be within 1..%d, got %d", milvusexpr.MaxTopK, k)
	}
	if err := rag.ValidateVector(query, ix.o.Dim); err != nil {
		return nil, rag.E(op, rag.KindInvalid, fmt.Errorf("query: %w", err))
	}
	if err := ctx.Err(); err != nil {
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	if err := ix.ready(ctx, op); err != nil {
		return nil, err
	}
	cctx, cancel := ix.call(ctx)
	defer cancel()
	opt := milvusclient.NewSearchOption(ix.coll, k, []entity.Vector{entity.FloatVector(query)}).
		WithANNSField(FieldVector).WithFilter(expr).WithOutputFields(FieldKB, FieldDoc, FieldChunk).
		WithConsistencyLevel(searchLevel(ix.o))
	rs, err := ix.c.Search(cctx, opt)
	if err != nil {
		return nil, ix.classify(op, err)
	}
	hits := []rag.Hit{}
	if len(rs) == 0 {
		return hits, nil
	}
	r := rs[0]
	if r.Err != nil {
		return nil, ix.classify(op, r.Err)
	}
	get := func(col column.Column, i int) string {
		if col == nil {
			return ""
		}
		v, err := col.GetAsString(i)
		if err != nil {
			return ""
		}
		return v
	}
	kbCol, docCol, chunkCol := r.GetColumn(FieldKB), r.GetColumn(FieldDoc), r.GetColumn(FieldChunk)
	for i := 0; i < r.ResultCount; i++ {
		id, err := r.IDs.GetAsString(i)
		if err != nil {
			return nil, rag.E(op, rag.KindInternal, err)
		}
		hits = append(hits, rag.Hit{ID: id, KBID: get(kbCol, i), DocumentID: get(docCol, i), ChunkID: get(chunkCol, i), Score: r.Scores[i]})
	}
	sortHits(hits)
	return hits, nil
}

// Delete implements store.VectorIndex.
func (ix *Index) Delete(ctx context.Context, tenant string, ids []string) error {
	const op = "milvus.Delete"
	exprs, err := milvusexpr.DeleteExprs(tenant, ids)
	if err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	for _, expr := range exprs {
		if err := ix.delete(ctx, op, expr); err != nil {
			return err
		}
	}
	return nil
}

// DeleteDocument implements store.VectorIndex.
func (ix *Index) DeleteDocument(ctx context.Context, tenant, kbID, documentID string) error {
	const op = "milvus.DeleteDocument"
	expr, err := milvusexpr.DocumentExpr(tenant, kbID, documentID)
	if err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	return ix.delete(ctx, op, expr)
}

func (ix *Index) delete(ctx context.Context, op, expr string) error {
	if err := ctx.Err(); err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	if err := ix.ready(ctx, op); err != nil {
		return err
	}
	cctx, cancel := ix.call(ctx)
	defer cancel()
	_, err := ix.c.Delete(cctx, milvusclient.NewDeleteOption(ix.coll).WithExpr(expr))
	return ix.classify(op, err)
}

// Count implements store.VectorIndex with a count(*) query at Strong consistency; a long document
// restriction is counted in parts (disjoint: each document is in one) and summed.
func (ix *Index) Count(ctx context.Context, f rag.Filter) (int, error) {
	total := 0
	for _, p := range restrictionParts(f) {
		n, err := ix.count(ctx, p)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func (ix *Index) count(ctx context.Context, f rag.Filter) (int, error) {
	const op = "milvus.Count"
	expr, err := Expr(f)
	if err != nil {
		return 0, rag.E(op, rag.KindInvalid, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, rag.E(op, rag.KindUnavailable, err)
	}
	if err := ix.ready(ctx, op); err != nil {
		return 0, err
	}
	cctx, cancel := ix.call(ctx)
	defer cancel()
	rs, err := ix.c.Query(cctx, milvusclient.NewQueryOption(ix.coll).WithFilter(expr).
		WithOutputFields("count(*)").WithConsistencyLevel(entity.ClStrong))
	if err != nil {
		return 0, ix.classify(op, err)
	}
	col := rs.GetColumn("count(*)")
	if col == nil || col.Len() != 1 {
		return 0, rag.Errorf(op, rag.KindInternal, "count(*) returned no value")
	}
	n, err := col.GetAsInt64(0)
	if err != nil {
		return 0, rag.E(op, rag.KindInternal, err)
	}
	return int(n), nil
}

// Flush implements store.VectorIndex without a call to Milvus. Milvus acknowledges an upsert or a
// delete only once it is in its write-ahead log (the message storage), so an acknowledged write is
// already durable, and a Count at Strong consistency already sees it. Milvus's own flush only seals
// growing segments, which it does by itself, and it is rate-limited per collection (by default 0.1 per
// second, quotaAndLimits.flushRate.collection.max): a flush per ingested document or per chat memory
// came back rate-limited (Unavailable) past one write every ten seconds, and an unlimited one could
// block for several call timeouts while segments sealed.
func (ix *Index) Flush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return rag.E("milvus.Flush", rag.KindUnavailable, err)
	}
	return nil
}
