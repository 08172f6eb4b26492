package connector

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Indexer ingests and deletes documents (ingest.Service): an item goes through the same stages,
// content-hash skip and per-source lease as an upload.
type Indexer interface {
	Ingest(ctx context.Context, tenant string, src ingest.Source) (ingest.Report, error)
	Delete(ctx context.Context, tenant, docID string) error
}

// Documents finds a source's document (sqldb.DB).
type Documents interface {
	GetDocumentBySource(ctx context.Context, tenant, kbID, uri string) (rag.Document, error)
}

// State is a connector's persisted record and items (sqldb.DB).
type State interface {
	GetConnector(ctx context.Context, tenant, name string) (rag.Connector, error)
	SaveSyncState(ctx context.Context, tenant, name string, st rag.SyncState) error
	ListConnectorItems(ctx context.Context, tenant, connector string) ([]rag.ConnectorItem, error)
	PutConnectorItem(ctx context.Context, tenant, connector string, it rag.ConnectorItem) error
	DeleteConnectorItem(ctx context.Context, tenant, connector, id string) error
	DeleteConnector(ctx context.Context, tenant, name string) error
}

// MetadataStore keeps documents' key/value metadata (sqldb.DB).
type MetadataStore interface {
	SetDocumentMetadata(ctx context.Context, tenant, kbID, docID string, m rag.Metadata) error
}

// Leases serialise syncs of one connector across processes (sqldb.DB): the schedule inside
// `docmind serve` and a `docmind connector sync` from a shell must not interleave.
type Leases interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// Engine runs syncs.
type Engine struct {
	Indexer   Indexer
	Documents Documents
	State     State
	Leases    Leases // nil: no cross-process lease (tests)
	// Metadata records each indexed item's metadata on its document (nil: not recorded).
	Metadata MetadataStore
	// LeaseTTL is a sync's hold on its connector (default 2 h; renewed with every progress write).
	LeaseTTL time.Duration
	Now      func() time.Time // nil: time.Now
	Log      *slog.Logger     // nil: slog.Default()
	// ProgressEvery is how many items pass between progress writes (default 25).
	ProgressEvery int
}

// Options tune one sync.
type Options struct {
	// DryRun lists and fetches but changes nothing: no document, item, cursor or status is written;
	// Result.Items says what a real sync would do.
	DryRun bool
}

// Actions on one item.
const (
	ActAdd       = "add"
	ActUpdate    = "update"
	ActUnchanged = "unchanged"
	ActDelete    = "delete"
	ActFail      = "fail"
)

// Result is what one sync did (or, in a dry run, would do).
type Result struct {
	Connector   string       `json:"connector"`
	DryRun      bool         `json:"dry_run,omitempty"`
	Status      string       `json:"status"`
	Listed      int          `json:"listed"` // changes the source reported
	Added       int          `json:"added"`
	Updated     int          `json:"updated"`
	Unchanged   int          `json:"unchanged"`
	NotModified int          `json:"not_modified"` // unchanged items the source answered with 304 (no body sent)
	Deleted     int          `json:"deleted"`
	Failed      []Failure    `json:"failed"`
	Calls       int          `json:"calls"` // requests made to the source
	Cursor      string       `json:"cursor,omitempty"`
	ElapsedMS   int64        `json:"elapsed_ms"`
	Items       []ItemAction `json:"items,omitempty"` // every item's action, in order (dry run only)
}

// Failure is one item that could not be synced; it is retried on the next sync.
type Failure struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// ItemAction is what happened, or would happen, to one item.
type ItemAction struct {
	ID       string            `json:"id"`
	Action   string            `json:"action"`
	Name     string            `json:"name,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// LeaseName is the lease a sync of the connector holds.
func LeaseName(tenant, name string) string { return "connector:" + tenant + ":" + name }

// SourceURI is the document identity of one connector item: readable when the id is short, hashed
// when it is long (documents.source_uri is bounded).
func SourceURI(connector, id string) string {
	uri := "connector/" + connector + "/" + id
	if len(uri) <= 1024 {
		return uri
	}
	h := sha256.Sum256([]byte(id))
	return "connector/" + connector + "/sha256-" + hex.EncodeToString(h[:])
}

// run is one sync's small state.
type run struct {
	e       *Engine
	tenant  string
	c       rag.Connector
	src     Source
	opt     Options
	known   map[string]rag.ConnectorItem
	res     Result
	st      rag.SyncState
	done    int
	holder  string
	start   time.Time
	release func()
}

// Sync brings the connector's knowledge base in line with its source: lists the changes since the
// stored cursor, applies each (a failed item is recorded and retried next time, never stopping the
// run), deletes what the source deleted, then stores the new cursor and the status. NotFound when
// the connector does not exist; Conflict when another sync of it holds its lease; a listing error
// (Unavailable, Permission, ...) ends the sync with status failed and the cursor where it was.
func (e *Engine) Sync(ctx context.Context, tenant, name string, src Source, opt Options) (Result, error) {
	r, err := e.Begin(ctx, tenant, name, src, opt)
	if err != nil {
		return Result{Connector: name}, err
	}
	return r.Finish(ctx)
}

// Run is one sync that has begun: its lease is held and its status reads running.
type Run struct{ r *run }

// Begin starts a sync: it takes the connector's lease and records status running, so that a caller
// that goes on in the background (the HTTP API answers 202) has a run everyone can see. Finish must
// follow; it releases the lease. Errors as Sync's before anything is listed (NotFound, Conflict).
func (e *Engine) Begin(ctx context.Context, tenant, name string, src Source, opt Options) (*Run, error) {
	start := e.now()
	c, err := e.State.GetConnector(ctx, tenant, name)
	if err != nil {
		return nil, err
	}
	r := &run{e: e, tenant: tenant, c: c, src: src, opt: opt, start: start, res: Result{Connector: name, DryRun: opt.DryRun, Failed: []Failure{}}}
	release, err := r.lease(ctx)
	if err != nil {
		return nil, err
	}
	r.release = release
	r.st = rag.SyncState{Cursor: c.Cursor, Status: rag.SyncRunning, StartedAt: start, SucceededAt: c.SucceededAt}
	if err := r.save(ctx); err != nil {
		release()
		return nil, err
	}
	return &Run{r: r}, nil
}

// Finish lists and applies the changes, stores the cursor and the final status, and releases the
// lease (see Sync).
func (run *Run) Finish(ctx context.Context) (Result, error) {
	r := run.r
	defer r.release()
	e := r.e
	err := r.sync(ctx)
	r.res.ElapsedMS = e.now().Sub(r.start).Milliseconds()
	r.st.FinishedAt = e.now()
	switch {
	case err != nil:
		r.st.Status, r.st.LastError, r.res.Status = rag.SyncFailed, err.Error(), rag.SyncFailed
	case len(r.res.Failed) > 0:
		r.st.Status, r.st.LastError, r.res.Status = rag.SyncPartial, fmt.Sprintf("%d items failed; retried on the next sync", len(r.res.Failed)), rag.SyncPartial
		r.st.SucceededAt = r.st.FinishedAt
	default:
		r.st.Status, r.res.Status = rag.SyncOK, rag.SyncOK
		r.st.SucceededAt = r.st.FinishedAt
	}
	r.st.Progress = r.progress()
	if serr := r.save(context.WithoutCancel(ctx)); serr != nil && err == nil {
		err = serr
	}
	return r.res, err
}

// lease takes the connector's lease; a no-op without Leases or in a dry run (which writes nothing).
func (r *run) lease(ctx context.Context) (func(), error) {
	if r.e.Leases == nil || r.opt.DryRun {
		return func() {}, nil
	}
	var b [8]byte
	rand.Read(b[:])
	r.holder = "sync-" + hex.EncodeToString(b[:])
	ok, err := r.e.Leases.AcquireLease(ctx, LeaseName(r.tenant, r.c.Name), r.holder, r.e.leaseTTL())
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, rag.Errorf("connector.Sync", rag.KindConflict, "connector %q is being synced elsewhere; retry later", r.c.Name)
	}
	return func() { r.e.Leases.ReleaseLease(context.WithoutCancel(ctx), LeaseName(r.tenant, r.c.Name), r.holder) }, nil
}

func (r *run) sync(ctx context.Context) error {
	items, err := r.e.State.ListConnectorItems(ctx, r.tenant, r.c.Name)
	if err != nil {
		return err
	}
	r.known = make(map[string]rag.ConnectorItem, len(items))
	known := make([]Known, 0, len(items))
	for _, it := range items {
		r.known[it.ID] = it
		k := Known{ID: it.ID, Version: it.Version, State: it.State}
		if it.Error != "" {
			k.Version, k.State = "", "" // a failed item is fetched whole: a 304 would leave it unindexed
		}
		known = append(known, k)
	}
	listing, err := r.src.Changes(ctx, r.c.Cursor, known)
	r.res.Calls += listing.Calls
	if err != nil {
		return fmt.Errorf("list changes of %s: %w", r.c.Name, err)
	}
	r.res.Listed = len(listing.Changes)
	seen := make(map[string]bool, len(listing.Changes))
	for _, ch := range listing.Changes {
		if err := ctx.Err(); err != nil {
			return err
		}
		seen[ch.ID] = true
		r.apply(ctx, ch)
	}
	// a complete listing names every live item: the rest are gone; a change feed has moved past the
	// failed items, which are fetched again here
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case seen[it.ID]:
		case listing.Complete:
			r.apply(ctx, Change{ID: it.ID, Deleted: true})
		case it.Error != "":
			r.apply(ctx, Change{ID: it.ID})
		}
	}
	r.st.Cursor, r.res.Cursor = listing.Cursor, listing.Cursor
	return nil
}

// apply applies one change and records its outcome; it never fails the run.
func (r *run) apply(ctx context.Context, ch Change) {
	defer r.tick(ctx)
	if ch.Deleted {
		r.remove(ctx, ch.ID)
		return
	}
	it := ch.Item
	if it == nil {
		prev := Known{ID: ch.ID}
		if k, ok := r.known[ch.ID]; ok && k.Error == "" {
			prev.Version, prev.State = k.Version, k.State
		}
		got, err := r.src.Fetch(ctx, ch.ID, prev)
		r.res.Calls += got.Calls
		if errors.Is(err, ErrGone) {
			r.remove(ctx, ch.ID)
			return
		}
		if err != nil {
			r.fail(ctx, ch.ID, fmt.Errorf("fetch: %w", err))
			return
		}
		it = &got
	}
	if it.ID == "" {
		it.ID = ch.ID
	}
	if it.NotModified {
		if it.Permissions != nil && !r.opt.DryRun {
			// the content is unchanged, the sharing may not be (Drive lists a permission change as a
			// change); an unchanged item without permissions says nothing about them
			r.accessFirst(ctx, it)
		}
		r.res.NotModified++
		r.res.Unchanged++
		r.note(it, ActUnchanged)
		return
	}
	uri := SourceURI(r.c.Name, it.ID)
	existed := false
	if d, err := r.e.Documents.GetDocumentBySource(ctx, r.tenant, r.c.KBID, uri); err == nil && d.Status != rag.StatusDeleted {
		existed = true
	}
	if r.opt.DryRun {
		act := ActAdd
		if existed {
			act = ActUpdate
			if k, ok := r.known[it.ID]; ok && k.Error == "" && k.Version != "" && k.Version == it.Version {
				act = ActUnchanged
			}
		}
		r.count(act)
		r.note(it, act)
		return
	}
	if existed {
		r.accessFirst(ctx, it)
	}
	rep, err := r.e.Indexer.Ingest(ctx, r.tenant, ingest.Source{KBID: r.c.KBID, URI: uri, Name: it.Name, Data: it.Data, ETag: it.Version})
	if err != nil {
		r.fail(ctx, it.ID, fmt.Errorf("ingest: %w", err))
		return
	}
	act := ActAdd
	switch {
	case rep.Skipped:
		act = ActUnchanged
	case existed:
		act = ActUpdate
	}
	r.count(act)
	if act != ActUnchanged || r.e.Metadata != nil && r.metaMissing(ctx, rep.DocumentID) {
		r.setMetadata(ctx, rep.DocumentID, it)
	}
	if err := r.e.State.PutConnectorItem(ctx, r.tenant, r.c.Name, rag.ConnectorItem{ID: it.ID, SourceURI: uri,
		Version: it.Version, State: it.State, Metadata: ItemRecord(it)}); err != nil {
		// the document is indexed; without its record the next complete listing re-fetches it
		r.e.log().Warn("connector item record failed", "connector", r.c.Name, "item", it.ID, "err", err)
	}
}

// setMetadata records the item's metadata on its document, with the derived fields every source
// has: source (the connector type), connector, url, modified. A failure is logged: the document is
// indexed and the next change of the item writes it again.
func (r *run) setMetadata(ctx context.Context, docID string, it *Item) {
	if r.e.Metadata == nil || docID == "" {
		return
	}
	// ingestion has just written the document's own metadata (front matter): connector fields join it
	m := rag.Metadata{}
	if g, ok := r.e.Metadata.(interface {
		GetDocumentMetadata(ctx context.Context, tenant, docID string) (rag.Metadata, error)
	}); ok {
		if own, err := g.GetDocumentMetadata(ctx, r.tenant, docID); err == nil {
			m = own
		}
	}
	m = DocumentMetadata(m, r.c, it)
	if err := r.e.Metadata.SetDocumentMetadata(ctx, r.tenant, r.c.KBID, docID, m); err != nil {
		r.e.log().Warn("connector metadata write failed", "connector", r.c.Name, "item", it.ID, "err", err)
	}
}

// accessFirst records a changed access list of an item already indexed before its new content is
// (RecordAccess); a failure is logged, the next sync writes it again.
func (r *run) accessFirst(ctx context.Context, it *Item) {
	k, ok := r.known[it.ID]
	if !ok {
		return // no record: shared/access denies the document until the record exists
	}
	if _, err := RecordAccess(ctx, r.e.State, r.tenant, r.c.Name, k, it); err != nil {
		r.e.log().Warn("connector item access record failed", "connector", r.c.Name, "item", it.ID, "err", err)
	}
}

// ItemPutter writes an item's record (sqldb.DB).
type ItemPutter interface {
	PutConnectorItem(ctx context.Context, tenant, connector string, it rag.ConnectorItem) error
}

// RecordAccess records it's access list on the item's record k when the list changed, before its
// new content (if any) is ingested: a page narrowed at the source (moved to HR only) is refused to
// the others from now, not once its ingestion ends, and a sharing change of unchanged content (Drive
// lists a permission change as a change, answered NotModified) is applied at all. The record keeps
// its version and state (the new ones are written after the ingestion): a failed ingestion is still
// fetched again by the next sync. Both the local engine and the AWS sync steps (syncflow) call it.
// changed reports whether it wrote.
func RecordAccess(ctx context.Context, st ItemPutter, tenant, connector string, k rag.ConnectorItem, it *Item) (changed bool, err error) {
	was, okWas := access.RecordList(k.Metadata)
	if okWas && slices.Equal(was, access.NormalizeAll(it.Permissions)) {
		return false, nil
	}
	k.Metadata = ItemRecord(it)
	if err := st.PutConnectorItem(ctx, tenant, connector, k); err != nil {
		return false, err
	}
	return true, nil
}

// ItemRecord is what connector_items keeps of an item beside its version and state: its URL,
// modification time, metadata and permissions at the source, as JSON. The permissions are
// normalised (access.NormalizeAll: user:<email lower-case>, group:<name>, domain:<d>, anyone, or the
// source's own form) and are the document's access list (shared/access).
func ItemRecord(it *Item) string {
	meta, _ := json.Marshal(struct {
		URL         string            `json:"url,omitempty"`
		Modified    time.Time         `json:"modified,omitzero"`
		Metadata    map[string]string `json:"metadata,omitempty"`
		Permissions []string          `json:"permissions,omitempty"`
	}{it.URL, it.Modified, it.Metadata, access.NormalizeAll(it.Permissions)})
	return string(meta)
}

// DocumentMetadata joins an item's fields to its document's own metadata m (front matter, written by
// ingestion), with the derived fields every source has: source (the connector type), connector, url,
// modified. m is changed and returned.
func DocumentMetadata(m rag.Metadata, c rag.Connector, it *Item) rag.Metadata {
	if m == nil {
		m = rag.Metadata{}
	}
	for k, v := range it.Metadata {
		if rag.ValidMetaKey(k) && v != "" {
			m[k] = v
		}
	}
	m["source"], m["connector"] = c.Type, c.Name
	if it.URL != "" {
		m["url"] = it.URL
	}
	if !it.Modified.IsZero() {
		m["modified"] = it.Modified.UTC().Format(time.RFC3339)
	}
	return m
}

// metaMissing reports whether an unchanged document has no metadata yet (indexed before metadata was
// recorded): it is written once.
func (r *run) metaMissing(ctx context.Context, docID string) bool {
	g, ok := r.e.Metadata.(interface {
		GetDocumentMetadata(ctx context.Context, tenant, docID string) (rag.Metadata, error)
	})
	if !ok || docID == "" {
		return false
	}
	m, err := g.GetDocumentMetadata(ctx, r.tenant, docID)
	return err == nil && len(m) == 0
}

func (r *run) count(act string) {
	switch act {
	case ActAdd:
		r.res.Added++
	case ActUpdate:
		r.res.Updated++
	case ActUnchanged:
		r.res.Unchanged++
	}
}

func (r *run) note(it *Item, act string) {
	if r.opt.DryRun {
		r.res.Items = append(r.res.Items, ItemAction{ID: it.ID, Action: act, Name: it.Name, Metadata: it.Metadata})
	}
}

// remove deletes an item's document and forgets the item; an item never indexed is only forgotten.
func (r *run) remove(ctx context.Context, id string) {
	uri := SourceURI(r.c.Name, id)
	doc, err := r.e.Documents.GetDocumentBySource(ctx, r.tenant, r.c.KBID, uri)
	_, wasKnown := r.known[id]
	switch {
	case rag.Is(err, rag.KindNotFound):
		if !wasKnown {
			return // deleted before we ever indexed it: nothing to report
		}
	case err != nil:
		r.fail(ctx, id, fmt.Errorf("delete: %w", err))
		return
	case r.opt.DryRun:
	default:
		if err := r.e.Indexer.Delete(ctx, r.tenant, doc.ID); err != nil && !rag.Is(err, rag.KindNotFound) {
			r.fail(ctx, id, fmt.Errorf("delete: %w", err))
			return
		}
	}
	r.res.Deleted++
	if r.opt.DryRun {
		r.res.Items = append(r.res.Items, ItemAction{ID: id, Action: ActDelete})
		return
	}
	if err := r.e.State.DeleteConnectorItem(ctx, r.tenant, r.c.Name, id); err != nil {
		r.e.log().Warn("connector item forget failed", "connector", r.c.Name, "item", id, "err", err)
	}
}

// fail records a failed item: counted, kept with its error so the next sync fetches it again.
func (r *run) fail(ctx context.Context, id string, err error) {
	r.res.Failed = append(r.res.Failed, Failure{ID: id, Error: err.Error()})
	if r.opt.DryRun {
		r.res.Items = append(r.res.Items, ItemAction{ID: id, Action: ActFail})
		return
	}
	it, ok := r.known[id]
	if !ok {
		it = rag.ConnectorItem{ID: id, SourceURI: SourceURI(r.c.Name, id)}
	}
	it.Error = truncate(err.Error(), 2000)
	if perr := r.e.State.PutConnectorItem(context.WithoutCancel(ctx), r.tenant, r.c.Name, it); perr != nil {
		r.e.log().Warn("connector item record failed", "connector", r.c.Name, "item", id, "err", perr)
	}
}

// tick writes progress every ProgressEvery items, renewing the lease with it.
func (r *run) tick(ctx context.Context) {
	r.done++
	every := r.e.ProgressEvery
	if every <= 0 {
		every = 25
	}
	if r.done%every != 0 {
		return
	}
	r.st.Progress = r.progress()
	if err := r.save(ctx); err != nil {
		r.e.log().Warn("connector progress write failed", "connector", r.c.Name, "err", err)
	}
	if r.holder != "" {
		r.e.Leases.AcquireLease(ctx, LeaseName(r.tenant, r.c.Name), r.holder, r.e.leaseTTL())
	}
}

func (r *run) progress() string {
	b, _ := json.Marshal(map[string]int{"listed": r.res.Listed, "done": r.done, "added": r.res.Added, "updated": r.res.Updated,
		"unchanged": r.res.Unchanged, "not_modified": r.res.NotModified, "deleted": r.res.Deleted, "failed": len(r.res.Failed), "calls": r.res.Calls})
	return string(b)
}

// save writes the sync state, except in a dry run.
func (r *run) save(ctx context.Context) error {
	if r.opt.DryRun {
		return nil
	}
	return r.e.State.SaveSyncState(ctx, r.tenant, r.c.Name, r.st)
}

// Remove deletes every document a connector has indexed, then the connector. NotFound when there is
// no such connector; a document that cannot be deleted stops the removal (run it again).
func (e *Engine) Remove(ctx context.Context, tenant, name string) (deleted int, err error) {
	c, err := e.State.GetConnector(ctx, tenant, name)
	if err != nil {
		return 0, err
	}
	items, err := e.State.ListConnectorItems(ctx, tenant, name)
	if err != nil {
		return 0, err
	}
	for _, it := range items {
		doc, err := e.Documents.GetDocumentBySource(ctx, tenant, c.KBID, it.SourceURI)
		if rag.Is(err, rag.KindNotFound) {
			continue
		}
		if err != nil {
			return deleted, err
		}
		if err := e.Indexer.Delete(ctx, tenant, doc.ID); err != nil && !rag.Is(err, rag.KindNotFound) {
			return deleted, fmt.Errorf("delete %s: %w", it.ID, err)
		}
		deleted++
	}
	return deleted, e.State.DeleteConnector(ctx, tenant, name)
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) leaseTTL() time.Duration {
	if e.LeaseTTL > 0 {
		return e.LeaseTTL
	}
	return 2 * time.Hour
}

func (e *Engine) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.Default()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

var _ State = (*sqldb.DB)(nil)
var _ MetadataStore = (*sqldb.DB)(nil)
var _ Indexer = (*ingest.Service)(nil)
