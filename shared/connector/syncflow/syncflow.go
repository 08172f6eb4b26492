// Package syncflow is the connector sync on AWS (issue #23): the steps of the Standard state machine
// infra/statemachines/connector-sync.asl.json, run by functions/connector. It is connector.Engine cut
// at its seams so that each item is a Map iteration and each document goes through the ingestion state
// machine like a dropped file:
//
//	Begin   takes the connector's SQL lease, lists the changes since the cursor (the connector contract),
//	        and returns the work: inline when few, else an S3 manifest a Distributed Map reads
//	Item    one item: a deletion is applied here; otherwise the item is fetched (or read from where the
//	        listing staged it), a changed access list recorded at once (as the local engine does:
//	        a sharing change of unchanged content, a list narrowed before its new content is
//	        indexed), the content staged in S3 and returned as the ingestion Job (the ASL starts it
//	        with states:startExecution.sync:2 under an idempotent name)
//	Record  after its ingestion: the item's record, the document's metadata, the outcome
//	Fail    an item that failed anywhere: recorded with its error (fetched again next sync), never
//	        stopping the run
//	Commit  tallies the outcomes, stores the cursor and status, releases the lease
//	Abort   the Catch of the whole run: status failed with the reason, cursor unchanged, lease released
//
// Every payload is ids and S3 keys: an item's bytes, record and outcome live under
// staging/<tenant>/connector/<name>/<run>/ (expired with the rest of staging/).
package syncflow

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// Store is the SQL the steps read and write (sqldb.DB).
type Store interface {
	GetConnector(ctx context.Context, tenant, name string) (rag.Connector, error)
	SaveSyncState(ctx context.Context, tenant, name string, st rag.SyncState) error
	ListConnectorItems(ctx context.Context, tenant, connector string) ([]rag.ConnectorItem, error)
	GetConnectorItem(ctx context.Context, tenant, connector, id string) (rag.ConnectorItem, error)
	PutConnectorItem(ctx context.Context, tenant, connector string, it rag.ConnectorItem) error
	DeleteConnectorItem(ctx context.Context, tenant, connector, id string) error
	GetDocumentBySource(ctx context.Context, tenant, kbID, uri string) (rag.Document, error)
	GetDocumentMetadata(ctx context.Context, tenant, docID string) (rag.Metadata, error)
	SetDocumentMetadata(ctx context.Context, tenant, kbID, docID string, m rag.Metadata) error
	// AddSyncProgress adds to a running sync's progress counts (each item's result as it comes).
	AddSyncProgress(ctx context.Context, tenant, name string, delta map[string]int) error
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// Documents creates the pending row of a document an ingestion execution will fill, and deletes
// documents everywhere (ingest.Service).
type Documents interface {
	SourceDocument(ctx context.Context, tenant, kbID, uri, name string) (rag.Document, error)
	Delete(ctx context.Context, tenant, docID string) error
}

// Flow holds what the steps need; one per function instance.
type Flow struct {
	Tenant string
	Bucket string      // the documents bucket: where items are staged for the ingestion Job
	Blobs  store.Blobs // the same bucket
	Store  Store
	Docs   Documents
	// Source builds a connector's Source (sources.Build, credentials from Secrets Manager).
	Source func(ctx context.Context, c rag.Connector) (connector.Source, error)
	// Name derives an execution name from a label and parts (awsrt.ExecutionName).
	Name func(label string, parts ...string) string
	// InlineMax is the most items passed inline to the Map; more go to an S3 manifest read by a
	// Distributed Map (default 40: 40 ids stay far below the 256 KiB state limit).
	InlineMax int
	// ListBudget is how long one invocation of Begin or List lists a PagedSource before handing on
	// (default 10 minutes, under the function's 15).
	ListBudget time.Duration
	// LeaseTTL is a sync's hold on its connector: the sync machine's TimeoutSeconds (default 24 h).
	LeaseTTL time.Duration
	Now      func() time.Time
	Log      *slog.Logger
	// Engine removes connectors (the Remove step, started by the HTTP API on AWS): this function may
	// delete documents, the function serving the API may not. Nil: Remove is refused.
	Engine *connector.Engine

	mu      sync.Mutex
	sources map[string]connector.Source // by connector and settings: one OAuth token per instance, not per item
}

// Envelope is one task's payload: the step's name and its input.
type Envelope struct {
	Step  string          `json:"step"`
	Input json.RawMessage `json:"input"`
}

// Steps are the step names the ASL's Tasks use.
func Steps() []string {
	return []string{"Abort", "Begin", "Commit", "Fail", "Item", "List", "Record", "Remove"}
}

// Dispatch runs one step.
func (f *Flow) Dispatch(ctx context.Context, env Envelope) (any, error) {
	dec := func(v any) error {
		if err := json.Unmarshal(env.Input, v); err != nil {
			return rag.Errorf("syncflow."+env.Step, rag.KindInvalid, "input: %v", err)
		}
		return nil
	}
	switch env.Step {
	case "Begin":
		var in RunRef
		if err := dec(&in); err != nil {
			return nil, err
		}
		return f.Begin(ctx, in)
	case "Item":
		var in ItemIn
		if err := dec(&in); err != nil {
			return nil, err
		}
		return f.Item(ctx, in)
	case "Record":
		var in RecordIn
		if err := dec(&in); err != nil {
			return nil, err
		}
		return f.Record(ctx, in)
	case "Fail":
		var in FailIn
		if err := dec(&in); err != nil {
			return nil, err
		}
		return f.Fail(ctx, in)
	case "Commit":
		var in RunRef
		if err := dec(&in); err != nil {
			return nil, err
		}
		return f.Commit(ctx, in)
	case "Abort":
		var in AbortIn
		if err := dec(&in); err != nil {
			return nil, err
		}
		return f.Abort(ctx, in)
	case "List":
		var in ListIn
		if err := dec(&in); err != nil {
			return nil, err
		}
		return f.List(ctx, in)
	case "Remove":
		var in OpIn
		if err := dec(&in); err != nil {
			return nil, err
		}
		return f.Remove(ctx, in)
	}
	return nil, rag.Errorf("syncflow.Dispatch", rag.KindInvalid, "unknown step %q", env.Step)
}

// RunRef names one sync run: the connector and the sync execution's name.
type RunRef struct {
	Connector string `json:"connector"`
	Run       string `json:"run"`
}

func (r RunRef) validate(op string) error {
	if err := rag.ValidateConnectorName(r.Connector); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	if r.Run == "" || len(r.Run) > 80 || strings.Trim(r.Run, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != "" {
		return rag.Errorf(op, rag.KindInvalid, "run must be an execution name (1-80 of A-Z a-z 0-9 - _)")
	}
	return nil
}

// WorkItem is one Map item.
type WorkItem struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted,omitempty"`
	// Staged is the S3 key of the item the listing already fetched (a crawl reads each page).
	Staged string `json:"staged,omitempty"`
}

// Object is an S3 object.
type Object struct {
	Bucket string `json:"bucket"`
	Key    string `json:"key"`
}

// BeginOut is the run's work: Items inline, or Manifest (a JSON array of WorkItem) when many.
type BeginOut struct {
	RunRef
	Busy  bool `json:"busy"` // another sync of the connector holds its lease: this run does nothing
	Count int  `json:"count"`
	// More says the listing goes on (a PagedSource that ran out of its time budget): after this
	// page's Map, the List step carries on from Token. Page numbers the pages (1 for the first).
	More     bool       `json:"more"`
	Token    string     `json:"token,omitempty"`
	Page     int        `json:"page"`
	Items    []WorkItem `json:"items"` // [] when none: the inline Map needs an array
	Manifest *Object    `json:"manifest,omitempty"`
}

// runState is what Begin keeps for Commit.
type runState struct {
	Cursor string   `json:"cursor"`
	Listed int      `json:"listed"`
	Calls  int      `json:"calls"`
	Count  int      `json:"count"`
	IDs    []string `json:"ids"` // every work item, so Commit can tell which never reported
	// Gone are the ids of IDs last handed to the Map as deletions: a later page that names one of
	// them with the other flag (deleted, or back) hands it again, so the page listed last wins
	Gone    []string  `json:"gone,omitempty"`
	Started time.Time `json:"started"`
}

func (f *Flow) prefix(r RunRef) string {
	return "staging/" + f.Tenant + "/connector/" + r.Connector + "/" + r.Run + "/"
}

func itemHash(id string) string {
	h := sha256.Sum256([]byte(id))
	return hex.EncodeToString(h[:16])
}

// Begin takes the lease, lists the changes since the cursor and returns the work. Busy (not an error)
// when another sync holds the lease; a listing that fails is an error the ASL's Catch sends to Abort.
func (f *Flow) Begin(ctx context.Context, in RunRef) (BeginOut, error) {
	const op = "syncflow.Begin"
	out := BeginOut{RunRef: in}
	if err := in.validate(op); err != nil {
		return out, err
	}
	c, ok, err := f.claim(ctx, in)
	if err != nil {
		return out, err
	}
	if !ok {
		out.Busy = true
		f.log().Info("connector sync skipped: another sync holds the lease", "connector", c.Name, "run", in.Run)
		return out, nil
	}
	start := f.now()
	running := rag.SyncState{Cursor: c.Cursor, Status: rag.SyncRunning, StartedAt: start, SucceededAt: c.SucceededAt, Progress: `{"listed":0}`}
	if err := f.Store.SaveSyncState(ctx, f.Tenant, c.Name, running); err != nil {
		return out, err
	}
	items, src, err := f.open(ctx, c)
	if err != nil {
		return out, err
	}
	known := knownOf(items)
	if ps, ok := src.(PagedSource); ok {
		return f.page(ctx, in, c, ps, items, known, "", 0, start)
	}
	listing, err := src.Changes(ctx, c.Cursor, known)
	if err != nil {
		return out, fmt.Errorf("list changes of %s: %w", c.Name, err)
	}
	changes := connector.LastOfEach(listing.Changes, func(ch connector.Change) string { return ch.ID })
	work := make([]WorkItem, 0, len(changes))
	seen := make(map[string]bool, len(changes))
	for _, ch := range changes {
		seen[ch.ID] = true
		w, err := f.stage(ctx, in, ch)
		if err != nil {
			return out, err
		}
		work = append(work, w)
	}
	work = append(work, unnamed(items, seen, listing.Complete)...)
	ids := make([]string, len(work))
	for i, w := range work {
		ids[i] = w.ID
	}
	if err := f.putJSON(ctx, f.prefix(in)+"run.json", runState{Cursor: listing.Cursor, Listed: len(listing.Changes), Calls: listing.Calls,
		Count: len(work), IDs: ids, Started: start}); err != nil {
		return out, err
	}
	// the progress from here on: what the listing found and how many items the Map has to do; each
	// item's result adds to it (putOutcome)
	prog, _ := json.Marshal(map[string]int{"listed": len(listing.Changes), "total": len(work), "done": 0, "calls": listing.Calls})
	running.Progress = string(prog)
	if err := f.Store.SaveSyncState(ctx, f.Tenant, c.Name, running); err != nil {
		return out, err
	}
	return f.hand(ctx, out, work, "manifest.json")
}

// claim reads the run's connector and takes (or renews) its lease for the run; ok is false when another
// run holds it.
func (f *Flow) claim(ctx context.Context, in RunRef) (rag.Connector, bool, error) {
	c, err := f.Store.GetConnector(ctx, f.Tenant, in.Connector)
	if err != nil {
		return c, false, err
	}
	ok, err := f.Store.AcquireLease(ctx, connector.LeaseName(f.Tenant, c.Name), in.Run, f.leaseTTL())
	return c, ok, err
}

// open reads the connector's known items and builds its source, what a listing starts from.
func (f *Flow) open(ctx context.Context, c rag.Connector) ([]rag.ConnectorItem, connector.Source, error) {
	items, err := f.Store.ListConnectorItems(ctx, f.Tenant, c.Name)
	if err != nil {
		return nil, nil, err
	}
	src, err := f.source(ctx, c)
	return items, src, err
}

// hand gives the Map its work: inline when few, else in the S3 manifest named key.
func (f *Flow) hand(ctx context.Context, out BeginOut, work []WorkItem, key string) (BeginOut, error) {
	out.Count = len(work)
	if len(work) <= f.inlineMax() {
		out.Items = work
		if out.Items == nil {
			out.Items = []WorkItem{}
		}
		return out, nil
	}
	key = f.prefix(out.RunRef) + key
	if err := f.putJSON(ctx, key, work); err != nil {
		return out, err
	}
	out.Manifest = &Object{Bucket: f.Bucket, Key: key}
	return out, nil
}

// PagedSource is a Source that can stop listing when its time runs out and carry on from a token in
// the next invocation, so that a listing longer than one Lambda invocation (a large first sync, a
// long crawl) never has to fit in one. Sources that do not implement it list whole in Begin.
type PagedSource interface {
	connector.Source
	// ChangesPage lists the changes since cursor from token ("" at the start) until it is done or
	// the clock passes until, and returns them with the token to carry on from (Next, "" when the
	// listing is done). Listing.Cursor and Listing.Complete are read from the last page only.
	ChangesPage(ctx context.Context, cursor, token string, known []connector.Known, until time.Time) (Page, error)
}

// Page is one invocation's part of a listing.
type Page struct {
	Listing connector.Listing
	Next    string
}

// ListIn carries a listing on after a page: the run, the token and the page number.
type ListIn struct {
	RunRef
	Token string `json:"token"`
	Page  int    `json:"page"`
}

// List is the next page of a paged listing (PagedSource), after the previous page's Map: it renews
// the run's lease (Conflict, sent to Abort, when the run lost it) and hands the Map this page's work.
func (f *Flow) List(ctx context.Context, in ListIn) (BeginOut, error) {
	const op = "syncflow.List"
	out := BeginOut{RunRef: in.RunRef}
	if err := in.validate(op); err != nil {
		return out, err
	}
	if in.Token == "" || in.Page < 1 {
		return out, rag.Errorf(op, rag.KindInvalid, "a listing carries on from a token and a page")
	}
	c, ok, err := f.claim(ctx, in.RunRef)
	if err != nil {
		return out, err
	}
	if !ok {
		return out, rag.Errorf(op, rag.KindConflict, "the run %s no longer holds the connector's lease", in.Run)
	}
	items, src, err := f.open(ctx, c)
	if err != nil {
		return out, err
	}
	ps, ok := src.(PagedSource)
	if !ok {
		return out, rag.Errorf(op, rag.KindInvalid, "connector %s does not list in pages", c.Name)
	}
	return f.page(ctx, in.RunRef, c, ps, items, knownOf(items), in.Token, in.Page, time.Time{})
}

// stage makes one listed change a Map work item, writing a fetched item's content to the run's
// staging prefix (a Map iteration's input stays small).
func (f *Flow) stage(ctx context.Context, in RunRef, ch connector.Change) (WorkItem, error) {
	w := WorkItem{ID: ch.ID, Deleted: ch.Deleted}
	if ch.Item != nil && !ch.Deleted {
		it := *ch.Item
		if it.ID == "" {
			it.ID = ch.ID
		}
		w.Staged = f.prefix(in) + "fetched/" + itemHash(ch.ID) + ".json"
		if err := f.putJSON(ctx, w.Staged, it); err != nil {
			return w, err
		}
	}
	return w, nil
}

// unnamed is the work for known items the listing did not name, as connector.Engine does it: a
// complete listing names every live item, so the rest are gone; a change feed has moved past the
// failed items, which are fetched again.
func unnamed(items []rag.ConnectorItem, seen map[string]bool, complete bool) []WorkItem {
	var work []WorkItem
	for _, it := range items {
		switch {
		case seen[it.ID]:
		case complete:
			work = append(work, WorkItem{ID: it.ID, Deleted: true})
		case it.Error != "":
			work = append(work, WorkItem{ID: it.ID})
		}
	}
	return work
}

// knownOf is what a listing is told of the items delivered before: a failed item is fetched whole.
func knownOf(items []rag.ConnectorItem) []connector.Known {
	known := make([]connector.Known, 0, len(items))
	for _, it := range items {
		k := connector.Known{ID: it.ID, Version: it.Version, State: it.State}
		if it.Error != "" {
			k.Version, k.State = "", "" // a failed item is fetched whole: a 304 would leave it unindexed
		}
		known = append(known, k)
	}
	return known
}

// page lists one page within the time budget and hands its work to the Map. An item already handed
// to a Map by an earlier page of the run is not handed again (its fetch reads the source's current
// version anyway) unless the later page changes whether it is deleted: an item deleted, or restored,
// while the listing went on ends as the last page says (the Map of an earlier page has ended by
// then, and an item's outcome is replaced, not counted twice). After the last page come the deletions of a complete
// listing (a known item no page named) and the retries of failed items, and the cursor is kept for
// Commit. The run's state (run.json) gathers every page's ids, counts and calls.
func (f *Flow) page(ctx context.Context, in RunRef, c rag.Connector, ps PagedSource, items []rag.ConnectorItem, known []connector.Known,
	token string, page int, start time.Time) (BeginOut, error) {
	out := BeginOut{RunRef: in, Page: page + 1}
	pg, err := ps.ChangesPage(ctx, c.Cursor, token, known, f.now().Add(f.listBudget()))
	if err != nil {
		return out, fmt.Errorf("list changes of %s: %w", c.Name, err)
	}
	rs := runState{Started: start}
	if page > 0 {
		if err := f.getJSON(ctx, f.prefix(in)+"run.json", &rs); err != nil {
			return out, err
		}
	}
	seen := make(map[string]bool, len(rs.IDs))
	for _, id := range rs.IDs {
		seen[id] = true
	}
	gone := make(map[string]bool, len(rs.Gone))
	for _, id := range rs.Gone {
		gone[id] = true
	}
	var work []WorkItem
	again := 0 // items handed again (already in rs.IDs and the progress's total)
	for _, ch := range connector.LastOfEach(pg.Listing.Changes, func(ch connector.Change) string { return ch.ID }) {
		if seen[ch.ID] && gone[ch.ID] == ch.Deleted {
			continue
		}
		if seen[ch.ID] {
			again++
		}
		w, err := f.stage(ctx, in, ch)
		if err != nil {
			return out, err
		}
		work = append(work, w)
	}
	if pg.Next == "" {
		rs.Cursor = pg.Listing.Cursor
		named := maps.Clone(seen)
		for _, w := range work {
			named[w.ID] = true
		}
		work = append(work, unnamed(items, named, pg.Listing.Complete)...)
	}
	for _, w := range work {
		if !seen[w.ID] {
			seen[w.ID] = true
			rs.IDs = append(rs.IDs, w.ID)
		}
		gone[w.ID] = w.Deleted
	}
	rs.Gone = rs.Gone[:0]
	for _, id := range rs.IDs {
		if gone[id] {
			rs.Gone = append(rs.Gone, id)
		}
	}
	rs.Listed += len(pg.Listing.Changes)
	rs.Calls += pg.Listing.Calls
	rs.Count = len(rs.IDs)
	if err := f.putJSON(ctx, f.prefix(in)+"run.json", rs); err != nil {
		return out, err
	}
	if err := f.Store.AddSyncProgress(ctx, f.Tenant, c.Name, map[string]int{"listed": len(pg.Listing.Changes), "total": len(work) - again,
		"calls": pg.Listing.Calls, "pages": 1}); err != nil {
		f.log().Warn("connector progress write failed", "connector", c.Name, "run", in.Run, "err", err)
	}
	out.More, out.Token = pg.Next != "", pg.Next
	return f.hand(ctx, out, work, fmt.Sprintf("manifest-%d.json", page+1))
}

// ItemIn is one Map iteration's input.
type ItemIn struct {
	RunRef
	Item WorkItem `json:"item"`
}

// ItemOut says what the iteration does next: Ingest (start the ingestion Job under Execution), or
// nothing more (Action says what was done).
type ItemOut struct {
	ID        string      `json:"id"`
	Action    string      `json:"action"`
	Ingest    bool        `json:"ingest"`
	Execution string      `json:"execution,omitempty"`
	Job       *ingest.Job `json:"job,omitempty"`
}

// record is what Record needs of an item, kept in S3 between Item and Record (an item's state, such
// as a page's links, can be large).
type record struct {
	Item       connector.Item `json:"item"`
	URI        string         `json:"uri"`
	DocumentID string         `json:"document_id"`
	Existed    bool           `json:"existed"`
}

// outcome is one item's result, kept for Commit.
type outcome struct {
	ID          string `json:"id"`
	Action      string `json:"action"`
	Error       string `json:"error,omitempty"`
	NotModified bool   `json:"not_modified,omitempty"`
	Calls       int    `json:"calls,omitempty"`
}

// Item applies a deletion, or fetches an item and stages it for ingestion. A fetch that fails is
// recorded as the item's failure and returned as such (the run goes on); errors returned are the
// step's own (SQL or S3 down), which the ASL retries and then sends to Fail.
func (f *Flow) Item(ctx context.Context, in ItemIn) (ItemOut, error) {
	const op = "syncflow.Item"
	out := ItemOut{ID: in.Item.ID}
	if err := in.validate(op); err != nil {
		return out, err
	}
	if in.Item.ID == "" {
		return out, rag.Errorf(op, rag.KindInvalid, "item has no id")
	}
	c, err := f.Store.GetConnector(ctx, f.Tenant, in.Connector)
	if err != nil {
		return out, err
	}
	if in.Item.Deleted {
		return f.remove(ctx, in, c, 0)
	}
	var it connector.Item
	var calls int
	if in.Item.Staged != "" {
		if !strings.HasPrefix(in.Item.Staged, f.prefix(in.RunRef)) {
			return out, rag.Errorf(op, rag.KindInvalid, "staged item outside the run's prefix")
		}
		if err := f.getJSON(ctx, in.Item.Staged, &it); err != nil {
			return out, err
		}
	} else {
		prev := connector.Known{ID: in.Item.ID}
		k, err := f.Store.GetConnectorItem(ctx, f.Tenant, c.Name, in.Item.ID)
		switch {
		case err == nil && k.Error == "":
			prev.Version, prev.State = k.Version, k.State
		case err != nil && !rag.Is(err, rag.KindNotFound):
			return out, err
		}
		src, err := f.source(ctx, c)
		if err != nil {
			return out, err
		}
		got, err := src.Fetch(ctx, in.Item.ID, prev)
		calls = got.Calls
		if errors.Is(err, connector.ErrGone) {
			return f.remove(ctx, in, c, calls)
		}
		if err != nil {
			return f.fail(ctx, in.RunRef, c, in.Item.ID, fmt.Sprintf("fetch: %v", err), calls)
		}
		it = got
	}
	if it.ID == "" {
		it.ID = in.Item.ID
	}
	if it.NotModified {
		// the content is unchanged, the sharing may not be; an unchanged item without permissions says
		// nothing about them
		if it.Permissions != nil {
			if err := f.accessFirst(ctx, c, &it); err != nil {
				return out, err
			}
		}
		out.Action = connector.ActUnchanged
		return out, f.putOutcome(ctx, in.RunRef, outcome{ID: it.ID, Action: connector.ActUnchanged, NotModified: true, Calls: calls})
	}
	if !extract.Supported(it.Name) {
		return f.fail(ctx, in.RunRef, c, it.ID, fmt.Sprintf("ingest: %q is not a file type docmind reads", it.Name), calls)
	}
	uri := connector.SourceURI(c.Name, it.ID)
	existed := false
	if d, err := f.Store.GetDocumentBySource(ctx, f.Tenant, c.KBID, uri); err == nil && d.Status != rag.StatusDeleted {
		existed = true
	} else if err != nil && !rag.Is(err, rag.KindNotFound) {
		return out, err
	}
	if existed {
		if err := f.accessFirst(ctx, c, &it); err != nil {
			return out, err
		}
	}
	doc, err := f.Docs.SourceDocument(ctx, f.Tenant, c.KBID, uri, it.Name)
	if err != nil {
		return out, err
	}
	h := itemHash(it.ID)
	key := f.prefix(in.RunRef) + "objects/" + h + "/source" + strings.ToLower(path.Ext(it.Name))
	if _, err := f.Blobs.Put(ctx, key, bytes.NewReader(it.Data), ""); err != nil {
		return out, fmt.Errorf("stage %s: %w", it.ID, err)
	}
	it.Data = nil // the record keeps the rest: the bytes are staged
	if err := f.putJSON(ctx, f.prefix(in.RunRef)+"records/"+h+".json", record{Item: it, URI: uri, DocumentID: doc.ID, Existed: existed}); err != nil {
		return out, err
	}
	if err := f.putOutcome(ctx, in.RunRef, outcome{ID: it.ID, Action: "ingest", Calls: calls}); err != nil {
		return out, err // Record replaces it with the result; a lost iteration shows as failed in Commit
	}
	// one name per item and run: a retried iteration finds its execution, the next sync starts another
	name := f.Name("connector", f.Tenant, c.Name, in.Run, it.ID)
	out.Action, out.Ingest, out.Execution = "ingest", true, name
	out.Job = &ingest.Job{Doc: ingest.Doc{Tenant: f.Tenant, KBID: c.KBID, DocumentID: doc.ID}, SourceURI: uri, Bucket: f.Bucket, Key: key,
		Sequencer: fmt.Sprintf("%X", f.now().UnixNano()), FileName: it.Name, Holder: name}
	return out, nil
}

// accessFirst records a changed access list before the item's new content is staged, and for an
// unchanged item, as the local engine does (connector.RecordAccess): Record writes it only after an
// ingestion. An item without a record is denied by shared/access until Record writes one.
func (f *Flow) accessFirst(ctx context.Context, c rag.Connector, it *connector.Item) error {
	k, err := f.Store.GetConnectorItem(ctx, f.Tenant, c.Name, it.ID)
	switch {
	case rag.Is(err, rag.KindNotFound):
		return nil
	case err != nil:
		return err
	}
	_, err = connector.RecordAccess(ctx, f.Store, f.Tenant, c.Name, k, it)
	return err
}

// remove deletes an item's document (an item never indexed is only forgotten).
func (f *Flow) remove(ctx context.Context, in ItemIn, c rag.Connector, calls int) (ItemOut, error) {
	out := ItemOut{ID: in.Item.ID, Action: connector.ActDelete}
	uri := connector.SourceURI(c.Name, in.Item.ID)
	doc, err := f.Store.GetDocumentBySource(ctx, f.Tenant, c.KBID, uri)
	switch {
	case rag.Is(err, rag.KindNotFound):
		if _, kerr := f.Store.GetConnectorItem(ctx, f.Tenant, c.Name, in.Item.ID); rag.Is(kerr, rag.KindNotFound) {
			out.Action = connector.ActUnchanged // deleted before it was ever indexed: nothing to report
			return out, f.putOutcome(ctx, in.RunRef, outcome{ID: in.Item.ID, Action: "none", Calls: calls})
		}
	case err != nil:
		return out, err
	default:
		if err := f.Docs.Delete(ctx, f.Tenant, doc.ID); err != nil && !rag.Is(err, rag.KindNotFound) {
			return out, err
		}
	}
	if err := f.Store.DeleteConnectorItem(ctx, f.Tenant, c.Name, in.Item.ID); err != nil {
		return out, err
	}
	return out, f.putOutcome(ctx, in.RunRef, outcome{ID: in.Item.ID, Action: connector.ActDelete, Calls: calls})
}

// fail records an item's failure: kept with its error so the next sync fetches it again.
func (f *Flow) fail(ctx context.Context, r RunRef, c rag.Connector, id, msg string, calls int) (ItemOut, error) {
	it, err := f.Store.GetConnectorItem(ctx, f.Tenant, c.Name, id)
	if rag.Is(err, rag.KindNotFound) {
		it, err = rag.ConnectorItem{ID: id, SourceURI: connector.SourceURI(c.Name, id)}, nil
	}
	if err != nil {
		return ItemOut{ID: id}, err
	}
	it.Error = truncate(msg, 2000)
	if err := f.Store.PutConnectorItem(ctx, f.Tenant, c.Name, it); err != nil {
		return ItemOut{ID: id}, err
	}
	f.log().Warn("connector item failed", "connector", c.Name, "run", r.Run, "item", id, "err", msg)
	return ItemOut{ID: id, Action: connector.ActFail}, f.putOutcome(ctx, r, outcome{ID: id, Action: connector.ActFail, Error: truncate(msg, 500), Calls: calls})
}

// RecordIn is an item after its ingestion execution: Skipped when the content was unchanged.
type RecordIn struct {
	RunRef
	Item   ItemOut `json:"item"`
	Ingest struct {
		Skipped bool `json:"skipped"`
	} `json:"ingest"`
}

// Record stores the item's record and the document's metadata once its ingestion succeeded.
func (f *Flow) Record(ctx context.Context, in RecordIn) (ItemOut, error) {
	const op = "syncflow.Record"
	out := ItemOut{ID: in.Item.ID}
	if err := in.validate(op); err != nil {
		return out, err
	}
	c, err := f.Store.GetConnector(ctx, f.Tenant, in.Connector)
	if err != nil {
		return out, err
	}
	var rec record
	if err := f.getJSON(ctx, f.prefix(in.RunRef)+"records/"+itemHash(in.Item.ID)+".json", &rec); err != nil {
		return out, err
	}
	act := connector.ActAdd
	switch {
	case in.Ingest.Skipped:
		act = connector.ActUnchanged
	case rec.Existed:
		act = connector.ActUpdate
	}
	own, err := f.Store.GetDocumentMetadata(ctx, f.Tenant, rec.DocumentID)
	if err != nil && !rag.Is(err, rag.KindNotFound) {
		return out, err
	}
	if act != connector.ActUnchanged || len(own) == 0 {
		if err := f.Store.SetDocumentMetadata(ctx, f.Tenant, c.KBID, rec.DocumentID, connector.DocumentMetadata(own, c, &rec.Item)); err != nil {
			return out, err
		}
	}
	if err := f.Store.PutConnectorItem(ctx, f.Tenant, c.Name, rag.ConnectorItem{ID: rec.Item.ID, SourceURI: rec.URI,
		Version: rec.Item.Version, State: rec.Item.State, Metadata: connector.ItemRecord(&rec.Item)}); err != nil {
		return out, err
	}
	var prev outcome
	if err := f.getJSON(ctx, f.outcomeKey(in.RunRef, in.Item.ID), &prev); err != nil && !rag.Is(err, rag.KindNotFound) {
		return out, err
	}
	out.Action = act
	return out, f.putOutcome(ctx, in.RunRef, outcome{ID: rec.Item.ID, Action: act, Calls: prev.Calls})
}

// FailIn is an iteration that failed in any state: its error as Step Functions reports it.
type FailIn struct {
	RunRef
	ID    string `json:"id"`
	Error struct {
		Error string `json:"Error"`
		Cause string `json:"Cause"`
	} `json:"error"`
}

// Fail records the iteration's failure on its item, so the next sync fetches it again.
func (f *Flow) Fail(ctx context.Context, in FailIn) (ItemOut, error) {
	const op = "syncflow.Fail"
	if err := in.validate(op); err != nil {
		return ItemOut{ID: in.ID}, err
	}
	if in.ID == "" {
		return ItemOut{}, rag.Errorf(op, rag.KindInvalid, "item has no id")
	}
	c, err := f.Store.GetConnector(ctx, f.Tenant, in.Connector)
	if err != nil {
		return ItemOut{ID: in.ID}, err
	}
	var prev outcome
	f.getJSON(ctx, f.outcomeKey(in.RunRef, in.ID), &prev)
	return f.fail(ctx, in.RunRef, c, in.ID, Reason(in.Error.Error, in.Error.Cause), prev.Calls)
}

// Reason is a one-line account of a Step Functions error: a Lambda's errorMessage, a failed child
// execution's own error and cause, or the error name.
func Reason(name, cause string) string {
	var lambdaErr struct {
		Message string `json:"errorMessage"`
	}
	var child struct {
		Error string `json:"Error"`
		Cause string `json:"Cause"`
	}
	switch {
	case json.Unmarshal([]byte(cause), &lambdaErr) == nil && lambdaErr.Message != "":
		cause = lambdaErr.Message
	case json.Unmarshal([]byte(cause), &child) == nil && (child.Error != "" || child.Cause != ""):
		cause = strings.TrimSpace("ingestion " + child.Error + ": " + child.Cause)
	}
	if cause == "" {
		return name
	}
	return truncate(name+": "+cause, 1000)
}

// Commit tallies the run's outcomes, records an item whose iteration never reported as failed,
// stores the cursor and status and releases the lease.
func (f *Flow) Commit(ctx context.Context, in RunRef) (connector.Result, error) {
	const op = "syncflow.Commit"
	res := connector.Result{Connector: in.Connector, Failed: []connector.Failure{}}
	if err := in.validate(op); err != nil {
		return res, err
	}
	c, err := f.Store.GetConnector(ctx, f.Tenant, in.Connector)
	if err != nil {
		return res, err
	}
	var rs runState
	if err := f.getJSON(ctx, f.prefix(in)+"run.json", &rs); err != nil {
		return res, err
	}
	res.Listed, res.Calls, res.Cursor = rs.Listed, rs.Calls, rs.Cursor
	outs, err := f.outcomes(ctx, in)
	if err != nil {
		return res, err
	}
	for _, id := range rs.IDs {
		o, ok := outs[id]
		if !ok || o.Action == "ingest" { // the iteration stopped before Record or Fail
			if _, err := f.fail(ctx, in, c, id, "the item's iteration ended without a result; retried on the next sync", 0); err != nil {
				return res, err
			}
			o = outcome{ID: id, Action: connector.ActFail, Error: "the item's iteration ended without a result"}
		}
		res.Calls += o.Calls
		switch o.Action {
		case connector.ActAdd:
			res.Added++
		case connector.ActUpdate:
			res.Updated++
		case connector.ActUnchanged:
			res.Unchanged++
			if o.NotModified {
				res.NotModified++
			}
		case connector.ActDelete:
			res.Deleted++
		case connector.ActFail:
			res.Failed = append(res.Failed, connector.Failure{ID: id, Error: o.Error})
		}
	}
	now := f.now()
	st := rag.SyncState{Cursor: rs.Cursor, StartedAt: rs.Started, FinishedAt: now, SucceededAt: now, Status: rag.SyncOK}
	res.Status = rag.SyncOK
	if len(res.Failed) > 0 {
		st.Status, res.Status = rag.SyncPartial, rag.SyncPartial
		st.LastError = fmt.Sprintf("%d items failed; retried on the next sync", len(res.Failed))
	}
	res.ElapsedMS = now.Sub(rs.Started).Milliseconds()
	prog, _ := json.Marshal(map[string]int{"listed": res.Listed, "total": len(rs.IDs), "done": len(rs.IDs), "added": res.Added, "updated": res.Updated,
		"unchanged": res.Unchanged, "not_modified": res.NotModified, "deleted": res.Deleted, "failed": len(res.Failed), "calls": res.Calls})
	st.Progress = string(prog)
	if err := f.Store.SaveSyncState(ctx, f.Tenant, c.Name, st); err != nil {
		return res, err
	}
	if err := f.Store.ReleaseLease(ctx, connector.LeaseName(f.Tenant, c.Name), in.Run); err != nil {
		f.log().Warn("connector lease release failed (it expires)", "connector", c.Name, "err", err)
	}
	f.log().Info("connector synced", "connector", c.Name, "run", in.Run, "status", res.Status, "added", res.Added, "updated", res.Updated,
		"deleted", res.Deleted, "failed", len(res.Failed), "not_modified", res.NotModified, "calls", res.Calls)
	return res, nil
}

// AbortIn is the run's failure, as the ASL's Catch reports it.
type AbortIn struct {
	RunRef
	Error struct {
		Error string `json:"Error"`
		Cause string `json:"Cause"`
	} `json:"error"`
}

// Abort ends a run that failed as a whole: status failed with the reason, the cursor where it was
// (nothing of the listing is lost: the next sync lists again), the lease released. It touches nothing
// while another run holds the lease (this one failed before taking it).
func (f *Flow) Abort(ctx context.Context, in AbortIn) (connector.Result, error) {
	const op = "syncflow.Abort"
	res := connector.Result{Connector: in.Connector, Status: rag.SyncFailed, Failed: []connector.Failure{}}
	if err := in.validate(op); err != nil {
		return res, err
	}
	c, err := f.Store.GetConnector(ctx, f.Tenant, in.Connector)
	if rag.Is(err, rag.KindNotFound) {
		return res, nil // removed meanwhile: nothing to record
	}
	if err != nil {
		return res, err
	}
	lease := connector.LeaseName(f.Tenant, c.Name)
	ok, err := f.Store.AcquireLease(ctx, lease, in.Run, time.Minute)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, nil
	}
	reason := Reason(in.Error.Error, in.Error.Cause)
	st := c.SyncState
	st.Status, st.LastError, st.FinishedAt = rag.SyncFailed, truncate(reason, 2000), f.now()
	if err := f.Store.SaveSyncState(ctx, f.Tenant, c.Name, st); err != nil {
		return res, err
	}
	f.log().Warn("connector sync failed", "connector", c.Name, "run", in.Run, "err", reason)
	return res, f.Store.ReleaseLease(ctx, lease, in.Run)
}

// OpIn names the connector an operation is for.
type OpIn struct {
	Connector string `json:"connector"`
}

// OpOut is what Remove did.
type OpOut struct {
	Deleted int `json:"deleted"`
}

// Remove deletes every document the connector indexed (everywhere: SQL, vectors, BM25, stored
// sources) and then the connector: the removal the HTTP API starts on AWS (awsops.Remove), an
// execution of the sync state machine with {"connector": NAME, "remove": true}. A connector already
// gone is done (a retried step). A document that cannot be deleted fails the step; run again, it
// carries on with what is left.
func (f *Flow) Remove(ctx context.Context, in OpIn) (OpOut, error) {
	const op = "syncflow.Remove"
	if err := rag.ValidateConnectorName(in.Connector); err != nil {
		return OpOut{}, rag.E(op, rag.KindInvalid, err)
	}
	if f.Engine == nil {
		return OpOut{}, rag.Errorf(op, rag.KindInvalid, "this function removes no connectors")
	}
	n, err := f.Engine.Remove(ctx, f.Tenant, in.Connector)
	if rag.Is(err, rag.KindNotFound) {
		return OpOut{}, nil
	}
	if err != nil {
		return OpOut{Deleted: n}, err
	}
	f.log().Info("connector removed", "connector", in.Connector, "documents_deleted", n)
	return OpOut{Deleted: n}, nil
}

// source returns the connector's Source, built once per function instance and settings: a Lambda
// instance runs one invocation at a time, and a connector keeps its bearer token until it expires, so
// the items of a run share a token instead of asking the identity platform once per item.
func (f *Flow) source(ctx context.Context, c rag.Connector) (connector.Source, error) {
	key := c.Name + "\x00" + c.Type + "\x00" + c.Config
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.sources[key]; ok {
		return s, nil
	}
	s, err := f.Source(ctx, c)
	if err != nil {
		return nil, err
	}
	if f.sources == nil {
		f.sources = map[string]connector.Source{}
	}
	f.sources[key] = s
	return s, nil
}

func (f *Flow) outcomeKey(r RunRef, id string) string {
	return f.prefix(r) + "outcomes/" + itemHash(id) + ".json"
}

// putOutcome keeps an item's outcome for Commit and, when it is the item's result (not "ingest", the
// mark Item leaves before the ingestion), adds it to the running sync's progress, so the connector's
// row shows a long sync moving (`connector list`, GET /api/kbs/{kb}/connectors). A retried step
// replaces its earlier result in the counts instead of counting the item twice. The progress is a
// report: a write that fails is logged, and Commit writes the exact counts at the end.
func (f *Flow) putOutcome(ctx context.Context, r RunRef, o outcome) error {
	key := f.outcomeKey(r, o.ID)
	var prev outcome
	if err := f.getJSON(ctx, key, &prev); err != nil && !rag.Is(err, rag.KindNotFound) {
		return err
	}
	if err := f.putJSON(ctx, key, o); err != nil {
		return err
	}
	delta := progressDelta(prev, o)
	if len(delta) == 0 {
		return nil
	}
	if err := f.Store.AddSyncProgress(ctx, f.Tenant, r.Connector, delta); err != nil {
		f.log().Warn("connector progress write failed", "connector", r.Connector, "run", r.Run, "err", err)
	}
	return nil
}

// counted says whether an outcome is an item's result, and under which count of the progress ("" for
// an item deleted before it was ever indexed: done, but neither added nor deleted).
func counted(o outcome) (key string, ok bool) {
	switch o.Action {
	case connector.ActAdd:
		return "added", true
	case connector.ActUpdate:
		return "updated", true
	case connector.ActUnchanged:
		return "unchanged", true
	case connector.ActDelete:
		return "deleted", true
	case connector.ActFail:
		return "failed", true
	case "none":
		return "", true
	}
	return "", false // "ingest", or no outcome yet
}

// progressDelta is what replacing prev by o changes in the progress counts (the keys of
// connector.Engine's progress: done, added, updated, unchanged, not_modified, deleted, failed, calls).
func progressDelta(prev, o outcome) map[string]int {
	d := map[string]int{}
	add := func(x outcome, sign int) {
		key, ok := counted(x)
		if !ok {
			return
		}
		d["done"] += sign
		if key != "" {
			d[key] += sign
		}
		if x.NotModified {
			d["not_modified"] += sign
		}
		d["calls"] += sign * x.Calls
	}
	if _, ok := counted(o); !ok {
		return nil
	}
	add(prev, -1)
	add(o, 1)
	for k, v := range d {
		if v == 0 {
			delete(d, k)
		}
	}
	return d
}

// outcomes reads every outcome of the run, by item id.
func (f *Flow) outcomes(ctx context.Context, r RunRef) (map[string]outcome, error) {
	list, err := f.Blobs.List(ctx, f.prefix(r)+"outcomes/")
	if err != nil {
		return nil, err
	}
	out := make(map[string]outcome, len(list))
	for _, b := range list {
		var o outcome
		if err := f.getJSON(ctx, b.Key, &o); err != nil {
			return nil, err
		}
		out[o.ID] = o
	}
	return out, nil
}

func (f *Flow) putJSON(ctx context.Context, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return rag.E("syncflow", rag.KindInternal, err)
	}
	if _, err := f.Blobs.Put(ctx, key, bytes.NewReader(b), "application/json"); err != nil {
		return fmt.Errorf("write %s: %w", key, err)
	}
	return nil
}

// maxStaged bounds what the steps read back from S3 (an item's record, the run's state).
const maxStaged = 256 << 20

func (f *Flow) getJSON(ctx context.Context, key string, v any) error {
	rc, _, err := f.Blobs.Get(ctx, key)
	if err != nil {
		return err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxStaged))
	if err != nil {
		return rag.E("syncflow", rag.KindUnavailable, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return rag.Errorf("syncflow", rag.KindInternal, "%s: %v", key, err)
	}
	return nil
}

func (f *Flow) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Flow) leaseTTL() time.Duration {
	if f.LeaseTTL > 0 {
		return f.LeaseTTL
	}
	return 24 * time.Hour
}

// listBudget is how long one invocation lists before it hands on (PagedSource): well under the
// connector function's 15-minute timeout, leaving room to stage what it listed.
func (f *Flow) listBudget() time.Duration {
	if f.ListBudget > 0 {
		return f.ListBudget
	}
	return 10 * time.Minute
}

func (f *Flow) inlineMax() int {
	if f.InlineMax > 0 {
		return f.InlineMax
	}
	return 40
}

func (f *Flow) log() *slog.Logger {
	if f.Log != nil {
		return f.Log
	}
	return slog.Default()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
