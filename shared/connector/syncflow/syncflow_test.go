package syncflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

const (
	tenant     = "t1"
	bucketName = "docs-bucket"
	syncASL    = "../../../infra/statemachines/connector-sync.asl.json"
	ingestASL  = "../../../infra/statemachines/ingest.asl.json"
)

// feedSource is a connector with a change feed: the cursor is a position in its log of changes; a
// first sync lists every live item.
type feedSource struct {
	mu        sync.Mutex
	items     map[string]string // id -> body (live items)
	versions  map[string]int
	log       []connector.Change
	failFetch map[string]bool
	failList  error
	fetches   int
	// perms is each item's access list at the source; with conditional, a fetch whose known version
	// is current answers NotModified with the item's permissions (as Drive and Graph do)
	perms       map[string][]string
	conditional bool
}

func newFeed() *feedSource {
	return &feedSource{items: map[string]string{}, versions: map[string]int{}, failFetch: map[string]bool{}, perms: map[string][]string{}}
}

// share changes who may read an item without changing its content, and lists it as a change.
func (s *feedSource) share(id string, perms ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.perms[id] = perms
	s.log = append(s.log, connector.Change{ID: id})
}

func (s *feedSource) put(id, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[id], s.versions[id] = body, s.versions[id]+1
	s.log = append(s.log, connector.Change{ID: id})
}

func (s *feedSource) del(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, id)
	s.log = append(s.log, connector.Change{ID: id, Deleted: true})
}

func (s *feedSource) Validate(context.Context) error { return nil }

func (s *feedSource) Changes(_ context.Context, cursor string, _ []connector.Known) (connector.Listing, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failList != nil {
		return connector.Listing{Calls: 1}, s.failList
	}
	var out []connector.Change
	if cursor == "" {
		ids := make([]string, 0, len(s.items))
		for id := range s.items {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			out = append(out, connector.Change{ID: id})
		}
	} else {
		var pos int
		fmt.Sscan(cursor, &pos)
		out = append(out, s.log[pos:]...)
	}
	return connector.Listing{Changes: out, Cursor: fmt.Sprint(len(s.log)), Calls: 1}, nil
}

func (s *feedSource) Fetch(_ context.Context, id string, prev connector.Known) (connector.Item, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetches++
	if s.failFetch[id] {
		return connector.Item{Calls: 1}, errors.New("source answered 500")
	}
	body, ok := s.items[id]
	if !ok {
		return connector.Item{Calls: 1}, fmt.Errorf("%s: %w", id, connector.ErrGone)
	}
	if s.conditional && prev.Version == fmt.Sprint(s.versions[id]) {
		return connector.Item{ID: id, NotModified: true, Version: prev.Version, Permissions: s.perms[id], Calls: 1}, nil
	}
	name := id + ".md"
	if strings.HasSuffix(id, ".pdf") {
		name = id
	}
	return connector.Item{ID: id, Name: name, Data: []byte(body), Version: fmt.Sprint(s.versions[id]), URL: "https://wiki.example/" + id,
		Metadata: map[string]string{"space": "ENG", "title": id}, State: `{"v":` + fmt.Sprint(s.versions[id]) + `}`, Permissions: s.perms[id], Calls: 1}, nil
}

// blobObjects reads the staged objects the ingestion Job names from the bucket fake (S3 GetObject).
type blobObjects struct{ *memblob.Store }

func (b blobObjects) GetObject(ctx context.Context, bucket, key, version string, limit int64) ([]byte, error) {
	if bucket != bucketName {
		return nil, rag.Errorf("fake", rag.KindNotFound, "NoSuchBucket %s", bucket)
	}
	rc, _, err := b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

type env struct {
	t       *testing.T
	db      *sqldb.DB
	blobs   *memblob.Store
	flow    *Flow
	src     *feedSource
	sync    *aslrun.Runner
	mu      sync.Mutex
	ingests map[string]bool // execution names started
	reads   int             // manifests read by the Distributed Map
	runs    int
	// observe, when set, is called before each step of the connector function runs
	observe func(step string)
	// beforeIngest, when set, is called as an ingestion execution starts, with its name
	beforeIngest func(name string)
}

func newTestEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	blobs := memblob.New()
	st := &ingest.Stages{Records: db, Vectors: memvec.New(64), Blobs: blobs, Staging: blobs, Embedder: embed.NewOffline(64),
		Chunking: chunk.Options{ChildChars: 120, Overlap: 20, ParentChars: 400}}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st}, InboxTenant: tenant, Leases: db}
	wf := &ingest.Workflow{Stages: st, Leases: db, Events: db, Objects: blobObjects{blobs}, BatchSize: 4}
	e := &env{t: t, db: db, blobs: blobs, src: newFeed(), ingests: map[string]bool{}}
	e.flow = &Flow{Tenant: tenant, Bucket: bucketName, Blobs: blobs, Store: db, Docs: svc, Name: awsrt.ExecutionName, InlineMax: 10,
		Engine: &connector.Engine{Indexer: svc, Documents: db, State: db, Leases: db, Metadata: db},
		Source: func(context.Context, rag.Connector) (connector.Source, error) { return e.src, nil }}
	noSleep := func(context.Context, time.Duration) error { return nil }
	ingestRunner := &aslrun.Runner{Machine: parse(t, ingestASL), ErrorName: awsrt.ErrorType, Sleep: noSleep,
		Invoke: func(ctx context.Context, res string, in json.RawMessage) (json.RawMessage, error) {
			var env ingest.Envelope
			if err := json.Unmarshal(in, &env); err != nil {
				return nil, err
			}
			out, err := wf.Dispatch(ctx, env)
			if err != nil {
				return nil, err
			}
			return json.Marshal(out)
		}}
	e.sync = &aslrun.Runner{Machine: parse(t, syncASL), ErrorName: awsrt.ErrorType, Sleep: noSleep,
		Invoke: func(ctx context.Context, res string, in json.RawMessage) (json.RawMessage, error) {
			switch res {
			case "${ConnectorFunctionArn}":
				var env Envelope
				if err := json.Unmarshal(in, &env); err != nil {
					return nil, err
				}
				if e.observe != nil {
					e.observe(env.Step)
				}
				out, err := e.flow.Dispatch(ctx, env)
				if err != nil {
					return nil, err
				}
				return json.Marshal(out)
			case "arn:aws:states:::s3:getObject":
				var p struct{ Bucket, Key string }
				json.Unmarshal(in, &p)
				e.mu.Lock()
				e.reads++
				e.mu.Unlock()
				rc, _, err := blobs.Get(ctx, p.Key)
				if err != nil || p.Bucket != bucketName {
					return nil, &aslrun.Error{Name: "S3.NoSuchKey", Cause: p.Bucket + "/" + p.Key}
				}
				defer rc.Close()
				return io.ReadAll(rc)
			case "arn:aws:states:::states:startExecution.sync:2":
				// StartExecution.sync:2 as Step Functions answers it: the child's output as JSON, or the
				// task failed with the child's error
				var p struct {
					StateMachineArn string
					Name            string
					Input           json.RawMessage
				}
				if err := json.Unmarshal(in, &p); err != nil {
					return nil, err
				}
				if p.StateMachineArn != "${IngestStateMachineArn}" || !awsrt.ValidExecutionName(p.Name) {
					t.Errorf("StartExecution of %s named %q", p.StateMachineArn, p.Name)
				}
				e.mu.Lock()
				if e.ingests[p.Name] {
					e.mu.Unlock()
					return nil, &aslrun.Error{Name: "StepFunctions.ExecutionAlreadyExistsException", Cause: p.Name}
				}
				e.ingests[p.Name] = true
				e.mu.Unlock()
				if e.beforeIngest != nil {
					e.beforeIngest(p.Name)
				}
				out, _, err := ingestRunner.Run(ctx, p.Name, p.Input)
				if err != nil {
					var ae *aslrun.Error
					errors.As(err, &ae)
					cause, _ := json.Marshal(map[string]string{"Error": ae.Name, "Cause": ae.Cause, "Status": "FAILED"})
					return nil, &aslrun.Error{Name: "States.TaskFailed", Cause: string(cause)}
				}
				return json.Marshal(map[string]any{"Output": json.RawMessage(out), "Status": "SUCCEEDED", "Name": p.Name})
			}
			return nil, &aslrun.Error{Name: "States.Runtime", Cause: "unknown resource " + res}
		}}
	kb := rag.KnowledgeBase{Tenant: tenant, Name: "wiki"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateConnector(ctx, &rag.Connector{Tenant: tenant, Name: "eng-wiki", KBID: kb.ID, Type: "confluence", Config: "{}"}); err != nil {
		t.Fatal(err)
	}
	return e
}

func parse(t *testing.T, file string) *aslrun.Machine {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, err := aslrun.Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// syncNow runs the sync state machine as its schedule starts it, and returns Commit's result.
func (e *env) syncNow() (connector.Result, *aslrun.Trace, error) {
	e.t.Helper()
	e.runs++
	out, tr, err := e.sync.Run(context.Background(), fmt.Sprintf("sched-eng-wiki-%d", e.runs), json.RawMessage(`{"connector":"eng-wiki"}`))
	var res struct {
		Result connector.Result `json:"result"`
	}
	json.Unmarshal(out, &res)
	return res.Result, tr, err
}

func (e *env) doc(id string) (rag.Document, bool) {
	c, _ := e.db.GetConnector(context.Background(), tenant, "eng-wiki")
	d, err := e.db.GetDocumentBySource(context.Background(), tenant, c.KBID, connector.SourceURI("eng-wiki", id))
	return d, err == nil && d.Status != rag.StatusDeleted
}

func (e *env) text(id string) string {
	d, ok := e.doc(id)
	if !ok {
		return ""
	}
	cs, _ := e.db.ListChunks(context.Background(), tenant, d.ID)
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.Content)
	}
	return b.String()
}

func visited(tr *aslrun.Trace, state string) bool {
	for _, s := range tr.States {
		if s == state {
			return true
		}
	}
	return false
}

// The sync state machine, run by aslrun over the real steps, SQLite, an in-memory bucket and the
// ingestion state machine itself: a first sync of many items goes through the Distributed Map (S3
// manifest), a failed fetch is recorded and tolerated, every document is indexed with the connector's
// metadata; an incremental sync (inline Map) applies an edit, a deletion, an addition and the retry of
// the failed item; a run that meets another's lease does nothing; a listing that fails records the
// reason and keeps the cursor; a document whose ingestion fails is a failed item, the rest go on.
func TestSyncStateMachine(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	for i := range 14 {
		e.src.put(fmt.Sprintf("page-%02d", i), fmt.Sprintf("# Page %d\n\nThe retention period of ledger %d is %d years.\n", i, i, i+3))
	}
	e.src.failFetch["page-07"] = true

	res, tr, err := e.syncNow()
	if err != nil {
		t.Fatalf("first sync: %v (states %v)", err, tr.States)
	}
	if !visited(tr, "FetchMany") || e.reads != 1 {
		t.Fatalf("14 items over InlineMax 10: states %v, %d manifest reads; want the Distributed Map reading its manifest", tr.States, e.reads)
	}
	if res.Status != rag.SyncPartial || res.Added != 13 || len(res.Failed) != 1 || res.Failed[0].ID != "page-07" ||
		!strings.Contains(res.Failed[0].Error, "500") || res.Listed != 14 || res.Calls != 15 {
		t.Fatalf("first sync = %+v; want partial, 13 added, page-07 failed (500), 14 listed, 15 calls", res)
	}
	c, _ := e.db.GetConnector(ctx, tenant, "eng-wiki")
	if c.Status != rag.SyncPartial || c.Cursor != "14" || !strings.Contains(c.LastError, "1 items failed") || c.SucceededAt.IsZero() {
		t.Fatalf("connector after the first sync = %+v; want partial, cursor 14", c.SyncState)
	}
	if ok, _ := e.db.AcquireLease(ctx, connector.LeaseName(tenant, "eng-wiki"), "probe", time.Minute); !ok {
		t.Fatal("the lease is still held after Commit")
	}
	e.db.ReleaseLease(ctx, connector.LeaseName(tenant, "eng-wiki"), "probe")
	d, ok := e.doc("page-03")
	if !ok || d.Status != rag.StatusReady || !strings.Contains(e.text("page-03"), "ledger 3 is 6 years") {
		t.Fatalf("page-03: %+v %q; want ready with its text", d, e.text("page-03"))
	}
	m, _ := e.db.GetDocumentMetadata(ctx, tenant, d.ID)
	if m["space"] != "ENG" || m["source"] != "confluence" || m["connector"] != "eng-wiki" || m["url"] != "https://wiki.example/page-03" {
		t.Fatalf("page-03 metadata = %v; want the connector's fields", m)
	}
	if it, err := e.db.GetConnectorItem(ctx, tenant, "eng-wiki", "page-07"); err != nil || !strings.Contains(it.Error, "500") {
		t.Fatalf("failed item record = %+v, %v; want its error kept for the retry", it, err)
	}
	if it, _ := e.db.GetConnectorItem(ctx, tenant, "eng-wiki", "page-03"); it.Version != "1" || it.State != `{"v":1}` || !strings.Contains(it.Metadata, "wiki.example") {
		t.Fatalf("page-03 item record = %+v; want version 1, its state and metadata", it)
	}

	// incremental: one edited, one deleted, one added; page-07 answers again
	e.src.failFetch["page-07"] = false
	e.src.put("page-02", "# Page 2\n\nThe retention period of ledger 2 is now forty years.\n")
	e.src.del("page-05")
	e.src.put("page-20", "# Page 20\n\nA new page about invoices.\n")
	started := len(e.ingests)
	res, tr, err = e.syncNow()
	if err != nil {
		t.Fatalf("incremental sync: %v", err)
	}
	if !visited(tr, "Fetch") || visited(tr, "FetchMany") {
		t.Fatalf("4 items: states %v; want the inline Map", tr.States)
	}
	if res.Status != rag.SyncOK || res.Added != 2 || res.Updated != 1 || res.Deleted != 1 || len(res.Failed) != 0 || len(e.ingests)-started != 3 {
		t.Fatalf("incremental sync = %+v, %d ingestions; want ok, 2 added (page-20, page-07), 1 updated, 1 deleted, 3 ingestions", res, len(e.ingests)-started)
	}
	if txt := e.text("page-02"); !strings.Contains(txt, "forty years") || strings.Contains(txt, "is 5 years") {
		t.Fatalf("page-02 text %q; want the edit and not the old text", txt)
	}
	if _, ok := e.doc("page-05"); ok {
		t.Fatal("page-05 was deleted at the source but its document remains")
	}
	if _, err := e.db.GetConnectorItem(ctx, tenant, "eng-wiki", "page-05"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("page-05 item record: %v; want forgotten", err)
	}
	if it, _ := e.db.GetConnectorItem(ctx, tenant, "eng-wiki", "page-07"); it.Error != "" || it.Version != "1" {
		t.Fatalf("page-07 after its retry = %+v; want indexed, no error", it)
	}

	// nothing changed: an empty Map, the status ok
	if res, _, err = e.syncNow(); err != nil || res.Status != rag.SyncOK || res.Listed != 0 {
		t.Fatalf("idle sync = %+v, %v; want ok with nothing listed", res, err)
	}

	// an item re-listed with the same content is ingested by name, skipped as unchanged by Prepare
	e.src.mu.Lock()
	e.src.log = append(e.src.log, connector.Change{ID: "page-01"})
	e.src.mu.Unlock()
	if res, _, err = e.syncNow(); err != nil || res.Unchanged != 1 || res.Updated != 0 {
		t.Fatalf("re-listed unchanged page = %+v, %v; want 1 unchanged", res, err)
	}

	// another sync holds the lease: this run ends at once and writes nothing
	e.db.AcquireLease(ctx, connector.LeaseName(tenant, "eng-wiki"), "other-run", time.Hour)
	e.src.put("page-21", "# Page 21\n\nLater.\n")
	idle, _ := e.db.GetConnector(ctx, tenant, "eng-wiki")
	_, tr, err = e.syncNow()
	if err != nil || !visited(tr, "AnotherSyncRunning") {
		t.Fatalf("busy: %v, %v; want AnotherSyncRunning", err, tr.States)
	}
	if c2, _ := e.db.GetConnector(ctx, tenant, "eng-wiki"); c2.SyncState != idle.SyncState {
		t.Fatalf("a busy run changed the connector: %+v", c2.SyncState)
	}
	e.db.ReleaseLease(ctx, connector.LeaseName(tenant, "eng-wiki"), "other-run")

	// the listing fails: Abort records why, keeps the cursor, releases the lease; the execution fails
	before, _ := e.db.GetConnector(ctx, tenant, "eng-wiki")
	e.src.failList = rag.Errorf("confluence", rag.KindPermission, "401 Unauthorized")
	_, tr, err = e.syncNow()
	var ae *aslrun.Error
	if !errors.As(err, &ae) || ae.Name != "SyncFailed" || !visited(tr, "Abort") {
		t.Fatalf("failed listing: %v, %v; want SyncFailed through Abort", err, tr.States)
	}
	after, _ := e.db.GetConnector(ctx, tenant, "eng-wiki")
	if after.Status != rag.SyncFailed || !strings.Contains(after.LastError, "401 Unauthorized") || after.Cursor != before.Cursor {
		t.Fatalf("after a failed listing: %+v; want failed with the reason, cursor %q", after.SyncState, before.Cursor)
	}
	if ok, _ := e.db.AcquireLease(ctx, connector.LeaseName(tenant, "eng-wiki"), "probe", time.Minute); !ok {
		t.Fatal("Abort left the lease held")
	}
	e.db.ReleaseLease(ctx, connector.LeaseName(tenant, "eng-wiki"), "probe")
	e.src.failList = nil

	// a document whose ingestion fails (a PDF that is not one): a failed item with the ingestion's
	// reason; page-21 beside it is indexed
	e.src.put("broken.pdf", "this is not a PDF")
	res, _, err = e.syncNow()
	if err != nil || res.Status != rag.SyncPartial || len(res.Failed) != 1 || res.Failed[0].ID != "broken.pdf" || res.Added != 1 {
		t.Fatalf("sync with a broken PDF = %+v, %v; want partial: broken.pdf failed, page-21 added", res, err)
	}
	if it, _ := e.db.GetConnectorItem(ctx, tenant, "eng-wiki", "broken.pdf"); !strings.Contains(it.Error, "IngestFailed") {
		t.Fatalf("broken.pdf record = %+v; want the ingestion's failure", it)
	}
	if !strings.Contains(e.text("page-21"), "Later") {
		t.Fatal("page-21 not indexed beside the failed item")
	}
}

// A step's bad input is Invalid (the ASL never retries it): an unknown step, a run name that is not an
// execution name, a staged key outside the run's prefix.
func TestStepsRefuseBadInput(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	for name, env := range map[string]Envelope{
		"unknown step": {Step: "Explode", Input: json.RawMessage(`{}`)},
		"bad run":      {Step: "Begin", Input: json.RawMessage(`{"connector":"eng-wiki","run":"../x"}`)},
		"bad name":     {Step: "Commit", Input: json.RawMessage(`{"connector":"a/b","run":"r1"}`)},
		"not json":     {Step: "Item", Input: json.RawMessage(`[1]`)},
		"outside":      {Step: "Item", Input: json.RawMessage(`{"connector":"eng-wiki","run":"r1","item":{"id":"x","staged":"sources/t1/secret"}}`)},
	} {
		if _, err := e.flow.Dispatch(ctx, env); !rag.Is(err, rag.KindInvalid) {
			t.Errorf("%s: %v; want Invalid", name, err)
		}
	}
	if got := Reason("States.TaskFailed", `{"Error":"IngestFailed","Cause":"rolled back"}`); got != "States.TaskFailed: ingestion IngestFailed: rolled back" {
		t.Errorf("Reason of a failed child = %q", got)
	}
	if got := Reason("Unavailable", `{"errorMessage":"db down","errorType":"Unavailable"}`); got != "Unavailable: db down" {
		t.Errorf("Reason of a Lambda error = %q", got)
	}
}

// A running sync's progress is in the connector's row while the Map runs (the state machine, run by
// aslrun: 14 items over the Distributed Map, at most 8 at once, so the later items start after earlier
// ones reported): each item's result is added as it comes, and when Commit starts the counts are
// already those of the whole run. A step run again (an instance that died after writing) replaces its
// result in the counts instead of counting the item twice.
func TestProgressDuringSync(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	for i := range 14 {
		e.src.put(fmt.Sprintf("page-%02d", i), fmt.Sprintf("# Page %d\n\nLedger %d is kept %d years.\n", i, i, i+3))
	}
	e.src.failFetch["page-05"] = true
	type snap struct {
		step   string
		status string
		counts map[string]int
	}
	var mu sync.Mutex
	var seen []snap
	e.observe = func(step string) {
		c, err := e.db.GetConnector(ctx, tenant, "eng-wiki")
		if err != nil {
			t.Errorf("GetConnector during the sync: %v", err)
			return
		}
		var m map[string]int
		json.Unmarshal([]byte(c.Progress), &m)
		mu.Lock()
		seen = append(seen, snap{step, c.Status, m})
		mu.Unlock()
	}
	res, tr, err := e.syncNow()
	if err != nil || res.Added != 13 || len(res.Failed) != 1 || !visited(tr, "FetchMany") {
		t.Fatalf("sync = %+v, %v (states %v); want 13 added and page-05 failed through the Distributed Map", res, err, tr.States)
	}
	var midway, atCommit bool
	for _, s := range seen {
		switch {
		case s.step == "Item" && s.status == rag.SyncRunning && s.counts["total"] == 14 && s.counts["listed"] == 14 &&
			s.counts["done"] > 0 && s.counts["done"] < 14:
			midway = true
			if s.counts["done"] != s.counts["added"]+s.counts["failed"] {
				t.Errorf("progress midway = %v; done is not the sum of its counts", s.counts)
			}
		case s.step == "Commit":
			atCommit = true
			want := map[string]int{"listed": 14, "total": 14, "done": 14, "added": 13, "failed": 1, "calls": 15}
			for k, v := range want {
				if s.counts[k] != v {
					t.Errorf("progress when Commit starts = %v; want %v", s.counts, want)
					break
				}
			}
		}
	}
	if !midway || !atCommit {
		t.Fatalf("progress seen before the steps: %+v; want a running sync part done, then the whole run's counts before Commit", seen)
	}

	// a retried Fail for an item already counted as failed, then a late Record turning it into an add:
	// the counts move the item, never count it twice
	run := RunRef{Connector: "eng-wiki", Run: "retry-run"}
	if err := e.db.SaveSyncState(ctx, tenant, "eng-wiki", rag.SyncState{Status: rag.SyncRunning, Progress: `{"done":0}`}); err != nil {
		t.Fatal(err)
	}
	fail := FailIn{RunRef: run, ID: "page-05"}
	fail.Error.Error = "States.TaskFailed"
	for range 2 {
		if _, err := e.flow.Fail(ctx, fail); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := e.db.GetConnector(ctx, tenant, "eng-wiki")
	if c.Progress != `{"done":1,"failed":1}` {
		t.Fatalf("progress after a Fail retried = %s; want one failed item", c.Progress)
	}
	if err := e.flow.putOutcome(ctx, run, outcome{ID: "page-05", Action: connector.ActAdd, Calls: 2}); err != nil {
		t.Fatal(err)
	}
	c, _ = e.db.GetConnector(ctx, tenant, "eng-wiki")
	if c.Progress != `{"added":1,"calls":2,"done":1,"failed":0}` {
		t.Fatalf("progress after the item's result changed = %s; want it moved from failed to added", c.Progress)
	}
}

// A removal started from the HTTP API on AWS ({"connector": NAME, "remove": true}, awsops.Remove) runs
// the sync state machine's Remove step only: every document the connector indexed is deleted
// everywhere, then the connector; a removal run again (a retried start) finds nothing left and ends
// well.
func TestRemoveThroughStateMachine(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	for i := range 3 {
		e.src.put(fmt.Sprintf("page-%d", i), fmt.Sprintf("# Page %d\n\nLedger %d.\n", i, i))
	}
	if res, _, err := e.syncNow(); err != nil || res.Added != 3 {
		t.Fatalf("sync = %+v, %v", res, err)
	}
	d, _ := e.doc("page-1")
	for run := range 2 {
		out, tr, err := e.sync.Run(ctx, fmt.Sprintf("api-eng-wiki-remove-%d", run), json.RawMessage(`{"connector":"eng-wiki","remove":true}`))
		if err != nil || !visited(tr, "Remove") || visited(tr, "Begin") {
			t.Fatalf("removal %d: %v (states %v)", run, err, tr.States)
		}
		var got struct {
			Removed OpOut `json:"removed"`
		}
		json.Unmarshal(out, &got)
		if want := []int{3, 0}[run]; got.Removed.Deleted != want {
			t.Fatalf("removal %d deleted %d documents; want %d", run, got.Removed.Deleted, want)
		}
	}
	if _, err := e.db.GetConnector(ctx, tenant, "eng-wiki"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("connector after the removal: %v; want NotFound", err)
	}
	if got, err := e.db.GetDocument(ctx, tenant, d.ID); err == nil && got.Status != rag.StatusDeleted {
		t.Fatalf("page-1's document after the removal: %+v", got)
	}
	// a sync input without "remove" is a sync, as before
	if _, tr, _ := e.syncNow(); !visited(tr, "Begin") || visited(tr, "Remove") {
		t.Fatalf("a sync after the removal went through %v", tr.States)
	}
}

// pagedSource is a crawl-like source (Complete listings) that lists one item a minute on a shared
// clock and stops when its time runs out, carrying on from a token: a listing of 12 items within a
// budget of 4 minutes needs three invocations. An id written "-id" is listed as deleted.
type pagedSource struct {
	mu      sync.Mutex
	clock   *time.Time
	ids     []string
	body    map[string]string
	fetches map[string]int
	pages   int
}

func (p *pagedSource) Validate(context.Context) error { return nil }

func (p *pagedSource) Changes(context.Context, string, []connector.Known) (connector.Listing, error) {
	return connector.Listing{}, errors.New("a paged source is listed by pages")
}

func (p *pagedSource) ChangesPage(_ context.Context, _ string, token string, _ []connector.Known, until time.Time) (Page, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pages++
	var pos int
	fmt.Sscan(token, &pos)
	var out Page
	out.Listing.Calls = 1
	for ; pos < len(p.ids); pos++ {
		if !p.clock.Before(until) {
			out.Next = fmt.Sprint(pos)
			return out, nil
		}
		id, deleted := strings.CutPrefix(p.ids[pos], "-") // "-id": the feed reports id deleted
		out.Listing.Changes = append(out.Listing.Changes, connector.Change{ID: id, Deleted: deleted})
		*p.clock = p.clock.Add(time.Minute)
	}
	out.Listing.Complete, out.Listing.Cursor = true, "crawl"
	return out, nil
}

func (p *pagedSource) Fetch(_ context.Context, id string, _ connector.Known) (connector.Item, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fetches[id]++
	b, ok := p.body[id]
	if !ok {
		return connector.Item{Calls: 1}, fmt.Errorf("%s: %w", id, connector.ErrGone)
	}
	return connector.Item{ID: id, Name: id + ".md", Data: []byte(b), Version: fmt.Sprint(len(b)), Calls: 1}, nil
}

// A listing longer than one invocation: Begin lists until its time budget (injected: 4 minutes of a
// clock the source advances a minute per item) runs out and returns a token; the state machine feeds
// the page to the Map, then loops through List until the listing is done. Every item is fetched and
// indexed exactly once; in the next sync, an item gone from the site is deleted exactly once, after
// the last page, and one named on a later page than before is not handed twice.
func TestPagedListing(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	src := &pagedSource{clock: &clock, body: map[string]string{}, fetches: map[string]int{}}
	for i := range 12 {
		id := fmt.Sprintf("page-%02d", i)
		src.ids = append(src.ids, id)
		src.body[id] = fmt.Sprintf("# Page %d\n\nLedger %d is kept %d years.\n", i, i, i+3)
	}
	e.flow.Source = func(context.Context, rag.Connector) (connector.Source, error) { return src, nil }
	e.flow.Now = func() time.Time { src.mu.Lock(); defer src.mu.Unlock(); return clock }
	e.flow.ListBudget = 4 * time.Minute
	e.flow.InlineMax = 3 // the pages of 4 go through the Distributed Map, each with its own manifest

	res, tr, err := e.syncNow()
	if err != nil {
		t.Fatalf("first sync: %v (states %v)", err, tr.States)
	}
	lists := 0
	for _, s := range tr.States {
		if s == "ListMore" {
			lists++
		}
	}
	if src.pages != 3 || lists != 2 || res.Added != 12 || res.Listed != 12 || len(res.Failed) != 0 || res.Status != rag.SyncOK {
		t.Fatalf("first sync = %+v: %d pages, %d List steps; want 12 added over three invocations (Begin and two List)", res, src.pages, lists)
	}
	e.mu.Lock()
	ingests := len(e.ingests)
	e.mu.Unlock()
	for _, id := range src.ids {
		if src.fetches[id] != 1 {
			t.Errorf("%s fetched %d times; want once", id, src.fetches[id])
		}
		if _, ok := e.doc(id); !ok {
			t.Errorf("%s not indexed", id)
		}
	}
	if ingests != 12 {
		t.Fatalf("%d ingestion executions; want one per item", ingests)
	}

	// page-03 and page-09 are gone; page-00 is listed last now, so a page boundary moves
	for id := range src.fetches {
		src.fetches[id] = 0
	}
	delete(src.body, "page-03")
	delete(src.body, "page-09")
	// and page-05 is named on the first page and again on the last (an item changed while listed)
	src.ids = []string{"page-01", "page-02", "page-04", "page-05", "page-06", "page-07", "page-08", "page-10", "page-11", "page-00", "page-05"}
	src.pages = 0
	res, tr, err = e.syncNow()
	if err != nil || src.pages != 3 || res.Deleted != 2 || res.Unchanged != 10 || res.Added+res.Updated != 0 {
		t.Fatalf("second sync = %+v, %v (%d pages, states %v); want 2 deleted and 10 unchanged over three pages", res, err, src.pages, tr.States)
	}
	for _, id := range src.ids {
		if src.fetches[id] != 1 {
			t.Errorf("%s fetched %d times in the second sync; want once", id, src.fetches[id])
		}
	}
	for _, id := range []string{"page-03", "page-09"} {
		if _, ok := e.doc(id); ok {
			t.Errorf("%s still indexed after it left the site", id)
		}
		if src.fetches[id] != 0 {
			t.Errorf("%s was fetched (%d): a deletion of a complete listing needs no request", id, src.fetches[id])
		}
	}
	c, _ := e.db.GetConnector(ctx, tenant, "eng-wiki")
	var p map[string]int
	json.Unmarshal([]byte(c.Progress), &p)
	if c.Cursor != "crawl" || p["deleted"] != 2 || p["done"] != 12 {
		t.Fatalf("connector after the second sync: cursor %q, progress %s; want the last page's cursor and 12 done", c.Cursor, c.Progress)
	}
}

// An item whose state changes while a paged listing goes on ends as the page listed last says: one
// listed on the first page and deleted on a later one is deleted, and one deleted on the first page
// and back on a later one is indexed (handing each item only once per run kept the first page's
// word and moved the cursor past the second).
func TestPagedListingLastPageWins(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	src := &pagedSource{clock: &clock, body: map[string]string{}, fetches: map[string]int{}}
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		src.ids = append(src.ids, id)
		src.body[id] = "# Page " + id + "\n\nLedger " + id + " is kept seven years.\n"
	}
	e.flow.Source = func(context.Context, rag.Connector) (connector.Source, error) { return src, nil }
	e.flow.Now = func() time.Time { src.mu.Lock(); defer src.mu.Unlock(); return clock }
	e.flow.ListBudget = 4 * time.Minute
	if res, tr, err := e.syncNow(); err != nil || res.Added != 6 {
		t.Fatalf("first sync = %+v, %v (states %v); want 6 added", res, err, tr.States)
	}

	// b is listed (and fetched) on the first page, then reported deleted on the second: the feed moved
	// on while the listing went on
	src.ids, src.pages = []string{"a", "b", "c", "d", "e", "f", "-b"}, 0
	res, tr, err := e.syncNow()
	if err != nil || src.pages != 2 || res.Deleted != 1 || res.Unchanged != 5 || len(res.Failed) != 0 {
		t.Fatalf("second sync = %+v, %v (%d pages, states %v); want b deleted over two pages", res, err, src.pages, tr.States)
	}
	if _, ok := e.doc("b"); ok {
		t.Fatal("b is still indexed: the later page's deletion was skipped")
	}
	c, _ := e.db.GetConnector(ctx, tenant, "eng-wiki")
	var p map[string]int
	json.Unmarshal([]byte(c.Progress), &p)
	if p["total"] != 6 || p["done"] != 6 {
		t.Fatalf("progress %s; want 6 items, b counted once", c.Progress)
	}

	// c is reported deleted on the first page, then back on the second
	src.ids, src.pages = []string{"-c", "a", "d", "e", "f", "c"}, 0
	if res, tr, err = e.syncNow(); err != nil || src.pages != 2 || len(res.Failed) != 0 {
		t.Fatalf("third sync = %+v, %v (%d pages, states %v)", res, err, src.pages, tr.States)
	}
	if _, ok := e.doc("c"); !ok {
		t.Fatal("c is not indexed: the later page's restore was skipped")
	}
	for _, id := range []string{"a", "d", "e", "f"} {
		if _, ok := e.doc(id); !ok {
			t.Errorf("%s lost", id)
		}
	}
}

// A sharing change reaches the access list on AWS as it does locally (connector.RecordAccess): the
// sync state machine, run by aslrun over the real steps, applies an item's new permissions when its
// content is unchanged (the source answers NotModified, no ingestion starts), and records a narrowed
// list before the item's new content is ingested.
func TestSharingChangeThroughStateMachine(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	e.src.conditional = true
	e.src.perms["policy"] = []string{"user:Ann@Example.com", "user:bob@example.com"}
	e.src.put("policy", "# Leave policy\n\nStaff may carry over five days of leave.\n")
	e.src.put("open", "# Open page\n\nEveryone reads this.\n")
	if res, _, err := e.syncNow(); err != nil || res.Added != 2 {
		t.Fatalf("first sync = %+v, %v; want 2 added", res, err)
	}
	c, _ := e.db.GetConnector(ctx, tenant, "eng-wiki")
	doc, _ := e.doc("policy")
	guard := access.Guard{Store: e.db}
	reads := func(email string) bool {
		t.Helper()
		denied, err := guard.Denied(ctx, rag.Principal{Tenant: tenant, Role: rag.RoleMember, Email: email}, []string{c.KBID})
		if err != nil {
			t.Fatal(err)
		}
		return !denied[doc.ID]
	}
	if !reads("ann@example.com") || !reads("bob@example.com") || reads("eve@example.com") {
		t.Fatal("after the first sync: want ann and bob to read the policy, eve not")
	}

	// shared with carol instead of bob, content unchanged: the fetch answers NotModified
	e.src.share("policy", "user:ann@example.com", "user:carol@example.com")
	started := len(e.ingests)
	res, _, err := e.syncNow()
	if err != nil || res.Unchanged != 1 || res.NotModified != 1 || res.Updated != 0 || len(e.ingests) != started {
		t.Fatalf("sharing-only sync = %+v, %v, %d ingestions; want 1 unchanged (not modified), none ingested", res, err, len(e.ingests)-started)
	}
	if reads("bob@example.com") || !reads("carol@example.com") || !reads("ann@example.com") {
		t.Fatal("after the sharing change: want bob refused, carol and ann reading")
	}
	it, _ := e.db.GetConnectorItem(ctx, tenant, "eng-wiki", "policy")
	if got, _ := access.RecordList(it.Metadata); !slices.Equal(got, []string{"user:ann@example.com", "user:carol@example.com"}) || it.Version != "1" || it.State != `{"v":1}` {
		t.Fatalf("record after the sharing change = %+v (list %v); want the new list, version and state kept", it, got)
	}
	if open, _ := e.db.GetConnectorItem(ctx, tenant, "eng-wiki", "open"); strings.Contains(open.Metadata, "permissions") {
		t.Fatalf("an item without permissions gained a list: %s", open.Metadata)
	}

	// narrowed to ann with new content: carol is refused before the new content's ingestion starts
	e.src.perms["policy"] = []string{"user:ann@example.com"}
	e.src.put("policy", "# Leave policy\n\nStaff may carry over ten days of leave.\n")
	var during []bool
	e.beforeIngest = func(string) { during = append(during, reads("carol@example.com"), reads("ann@example.com")) }
	if res, _, err = e.syncNow(); err != nil || res.Updated != 1 {
		t.Fatalf("narrowing sync = %+v, %v; want 1 updated", res, err)
	}
	if !slices.Equal(during, []bool{false, true}) {
		t.Fatalf("as the new content's ingestion started, carol/ann read = %v; want [false true]", during)
	}
	if reads("carol@example.com") || !reads("ann@example.com") || !strings.Contains(e.text("policy"), "ten days") {
		t.Fatal("after the narrowing sync: want carol refused, ann reading the new text")
	}
}
