package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
	"github.com/docmind/docmind/shared/store/sqldb"
)

const aslFile = "../../infra/statemachines/ingest.asl.json"

// fakeBucket is a versioned S3 bucket: every put makes a new version and a larger sequencer. Sequencers
// grow in length (FF, 100, ...) so the padding rule is exercised.
type fakeBucket struct {
	mu       sync.Mutex
	versions map[string][]byte // key + "\x00" + version
	seq      int
	current  map[string]string // key -> its current version ("" after a removal)
}

func (b *fakeBucket) put(key string, data []byte) SourceChange {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.versions == nil {
		b.versions, b.seq = map[string][]byte{}, 0xF0
	}
	b.seq += 0x10
	v := fmt.Sprintf("v%d", b.seq)
	b.versions[key+"\x00"+v] = data
	if b.current == nil {
		b.current = map[string]string{}
	}
	b.current[key] = v
	return SourceChange{Bucket: "docs", Key: key, VersionID: v, Sequencer: fmt.Sprintf("%X", b.seq)}
}

func (b *fakeBucket) remove(key string) SourceChange {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq += 0x10
	delete(b.current, key)
	return SourceChange{Removed: true, Bucket: "docs", Key: key, VersionID: fmt.Sprintf("dm%d", b.seq), Sequencer: fmt.Sprintf("%X", b.seq)}
}

func (b *fakeBucket) GetObject(_ context.Context, bucket, key, version string, limit int64) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if version == "" {
		version = b.current[key]
	}
	d, ok := b.versions[key+"\x00"+version]
	if !ok {
		return nil, rag.Errorf("fake", rag.KindNotFound, "NoSuchVersion")
	}
	return d, nil
}

// fakeSFN is Step Functions for one state machine: execution names are unique (a second Start of a name
// is ExecutionAlreadyExists) and each execution runs the ASL file through aslrun, synchronously.
type fakeSFN struct {
	t       *testing.T
	runner  *aslrun.Runner
	mu      sync.Mutex
	names   map[string]bool
	runs    atomic.Int64
	traces  []*aslrun.Trace
	results []error
}

func (f *fakeSFN) Start(ctx context.Context, name string, input []byte) (bool, error) {
	if !awsrt.ValidExecutionName(name) {
		f.t.Errorf("invalid execution name %q", name)
	}
	f.mu.Lock()
	if f.names[name] {
		f.mu.Unlock()
		return false, nil
	}
	f.names[name] = true
	f.mu.Unlock()
	f.runs.Add(1)
	_, tr, err := f.runner.Run(ctx, name, input)
	f.mu.Lock()
	f.traces, f.results = append(f.traces, tr), append(f.results, err)
	f.mu.Unlock()
	return true, nil
}

func (f *fakeSFN) last() (*aslrun.Trace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.traces[len(f.traces)-1], f.results[len(f.results)-1]
}

type wfEnv struct {
	*env
	sql    *sqldb.DB
	bucket *fakeBucket
	wf     *Workflow
	sfn    *fakeSFN
	trig   *Trigger
	delays []time.Duration
}

// extractStages run on the large-memory extraction function, which alone may call Textract.
var extractStages = map[string]bool{"Extract": true, "TextractStatus": true, "TextractCollect": true}

func newWorkflowEnv(t *testing.T) *wfEnv { return newWorkflowEnvOn(t, nil) }

// newWorkflowEnvOn runs the workflow over db (nil: the embedded SQLite of newEnv).
func newWorkflowEnvOn(t *testing.T, db *sqldb.DB) *wfEnv {
	t.Helper()
	e := newEnv(t)
	if db != nil {
		e.db = &faultyRecords{DB: db}
		e.svc.Runner.Stages.Records = e.db
	}
	e.svc.Runner.Stages.Staging = memblob.New()
	def, err := os.ReadFile(aslFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := aslrun.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	w := &wfEnv{env: e, sql: e.db.DB, bucket: &fakeBucket{}}
	w.wf = &Workflow{Stages: e.svc.Runner.Stages, Leases: w.sql, Events: w.sql, Objects: w.bucket, BatchSize: 4}
	runner := &aslrun.Runner{Machine: m, ErrorName: awsrt.ErrorType, Rand: func() float64 { return 0.5 },
		Sleep: func(ctx context.Context, d time.Duration) error { w.delays = append(w.delays, d); return nil },
		Invoke: func(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
			if resource != "${StageFunctionArn}" && resource != "${ExtractFunctionArn}" {
				return nil, &aslrun.Error{Name: "States.Runtime", Cause: "unknown resource " + resource}
			}
			var env Envelope
			if err := json.Unmarshal(input, &env); err != nil {
				return nil, err
			}
			if extractStages[env.Stage] != (resource == "${ExtractFunctionArn}") {
				t.Errorf("stage %s invoked on %s: extraction runs on the large-memory function only", env.Stage, resource)
			}
			out, err := w.wf.Dispatch(ctx, env)
			if err != nil {
				return nil, err
			}
			return json.Marshal(out)
		}}
	w.sfn = &fakeSFN{t: t, runner: runner, names: map[string]bool{}}
	e.svc.Leases = w.sql // as on AWS: the trigger's and the service's deletes take the source's SQL lease
	w.trig = &Trigger{Service: e.svc, Events: w.sql, Leases: w.sql, Executions: w.sfn, Tenant: tenant, Name: awsrt.ExecutionName}
	return w
}

func (w *wfEnv) handle(t *testing.T, ch SourceChange) TriggerResult {
	t.Helper()
	res, err := w.trig.Handle(context.Background(), ch)
	if err != nil {
		t.Fatalf("Handle(%+v): %v", ch, err)
	}
	return res
}

func (w *wfEnv) doc(t *testing.T, kb, uri string) (rag.Document, bool) {
	t.Helper()
	k, err := w.sql.GetKBByName(context.Background(), tenant, kb)
	if err != nil {
		return rag.Document{}, false
	}
	d, err := w.sql.GetDocumentBySource(context.Background(), tenant, k.ID, uri)
	if rag.Is(err, rag.KindNotFound) {
		return d, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return d, true
}

func countChildren(t *testing.T, rows []rag.Chunk) int {
	n := 0
	for _, c := range rows {
		if c.Level == rag.LevelChild {
			n++
		}
	}
	return n
}

// The ASL file's Tasks and the Go stages are the same set, each Task's retries follow the rules, and
// nothing terminal is retried.
func TestASLMatchesStages(t *testing.T) {
	def, err := os.ReadFile(aslFile)
	if err != nil {
		t.Fatal(err)
	}
	m, err := aslrun.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	for name, s := range m.Tasks() {
		p, _ := s.Parameters.(map[string]any)
		stage, _ := p["stage"].(string)
		if stage == "" {
			t.Errorf("task %s names no stage", name)
		}
		stages = append(stages, stage)
		lambdaRetried, throttleWaits := false, false
		for _, r := range s.Retry {
			if slices.Contains(r.ErrorEquals, "Lambda.TooManyRequestsException") {
				// reserved concurrency is shared across executions: a burst must wait minutes, not fail
				throttleWaits = r.MaxAttempts != nil && *r.MaxAttempts >= 10 && r.MaxDelaySeconds >= 60
			}
			if r.BackoffRate == nil || r.MaxDelaySeconds <= 0 || r.JitterStrategy != "FULL" {
				t.Errorf("task %s: retrier %v lacks BackoffRate, MaxDelaySeconds or JitterStrategy FULL", name, r.ErrorEquals)
			}
			for _, e := range r.ErrorEquals {
				if slices.Contains([]string{"States.ALL", "States.TaskFailed", "Terminal", "Invalid", "NotFound", "Permission", "Internal", "Incomplete"}, e) {
					t.Errorf("task %s retries %s, which can never succeed on a retry", name, e)
				}
				if e == "Lambda.ServiceException" {
					lambdaRetried = true
				}
			}
		}
		if !lambdaRetried {
			t.Errorf("task %s does not retry the Lambda service exceptions", name)
		}
		if !throttleWaits {
			t.Errorf("task %s: Lambda.TooManyRequestsException needs its own retrier of >= 10 attempts up to >= 60 s", name)
		}
		if name != "MarkFailed" && name != "EmbedBatch" {
			last := len(s.Catch) - 1
			if last < 0 || s.Catch[last].Next != "MarkFailed" || !slices.Equal(s.Catch[last].ErrorEquals, []string{"States.ALL"}) {
				t.Errorf("task %s: every failure must end up caught by MarkFailed", name)
			}
		}
	}
	sort.Strings(stages)
	stages = slices.Compact(stages) // a stage may serve several Tasks (PlanEmbed: plan and rebuild)
	if want := StageNames(); !slices.Equal(stages, want) {
		t.Fatalf("ASL tasks %v, Go stages %v: every Task needs a handler and every handler a Task", stages, want)
	}
}

func TestWorkflowSuccess(t *testing.T) {
	w := newWorkflowEnv(t)
	ch := w.bucket.put("inbox/manuals/guide v2.md", manual("Limits: at most 5 users per seat and 3 seats per team."))
	res := w.handle(t, ch)
	if res.Action != ActionStarted {
		t.Fatalf("action %q, want started", res.Action)
	}
	tr, err := w.sfn.last()
	if err != nil {
		t.Fatalf("execution failed: %v (states %v)", err, tr.States)
	}
	d, ok := w.doc(t, "manuals", "inbox/manuals/guide v2.md")
	if !ok || d.Status != rag.StatusReady || d.ContentHash == "" || d.SourceSequencer != ch.Sequencer {
		t.Fatalf("document %+v, want ready with hash and sequencer", d)
	}
	w.consistent(t, d.ID)
	rows, _ := w.sql.ListChunks(context.Background(), tenant, d.ID)
	if n := countChildren(t, rows); n == 0 || d.ChunkCount != n || int(w.emb.texts.Load()) != n {
		t.Fatalf("children %d, chunk_count %d, texts embedded %d", n, d.ChunkCount, w.emb.texts.Load())
	}
	if !slices.Contains(tr.States, "EmbedBatch") || !slices.Contains(tr.States, "Verify") || tr.States[len(tr.States)-1] != "Done" {
		t.Fatalf("states %v", tr.States)
	}
	left, _ := w.wf.Stages.staging().List(context.Background(), "staging/")
	if len(left) != 0 {
		t.Errorf("staging leftovers after commit: %v", left)
	}
	ok, err = w.sql.AcquireLease(context.Background(), LeaseName(tenant, d.KBID, d.SourceURI), "someone-else", time.Minute)
	if err != nil || !ok {
		t.Fatalf("the source's lease was not released: %v %v", ok, err)
	}
	// the same content under a new version is a skip: zero embedding calls
	before := w.emb.texts.Load()
	w.sql.ReleaseLease(context.Background(), LeaseName(tenant, d.KBID, d.SourceURI), "someone-else")
	ch2 := w.bucket.put("inbox/manuals/guide v2.md", manual("Limits: at most 5 users per seat and 3 seats per team."))
	w.handle(t, ch2)
	tr, err = w.sfn.last()
	if err != nil || tr.States[len(tr.States)-1] != "Skipped" || w.emb.texts.Load() != before {
		t.Fatalf("unchanged re-upload: %v, states %v, embedded %d more", err, tr.States, w.emb.texts.Load()-before)
	}
	// the skip records the newer put: otherwise the document lags the recorded event and the
	// consistency check reports it stale on every run (stale_versions), with no repair able to clear it
	d2, _ := w.doc(t, "manuals", "inbox/manuals/guide v2.md")
	if d2.SourceSequencer != ch2.Sequencer || d2.SourceETag != ch2.VersionID || d2.ContentHash != d.ContentHash || d2.Status != rag.StatusReady {
		t.Fatalf("after an unchanged re-upload the document is at %q/%q (hash %q, %s), want %q/%q", d2.SourceSequencer, d2.SourceETag,
			d2.ContentHash, d2.Status, ch2.Sequencer, ch2.VersionID)
	}
	ok, err = w.sql.AcquireLease(context.Background(), LeaseName(tenant, d.KBID, d.SourceURI), "someone-else", time.Minute)
	if err != nil || !ok {
		t.Fatalf("the unchanged skip did not release the source's lease: %v %v", ok, err)
	}
}

func TestWorkflowTransientRetried(t *testing.T) {
	w := newWorkflowEnv(t)
	w.wf.BatchSize = 1000 // one batch, so both failures hit the same Map iteration and its backoff grows
	w.emb.fail.Store(2)   // the embeddings API answers 429 twice
	w.handle(t, w.bucket.put("inbox/kb/a.md", manual("Seats: 3.")))
	tr, err := w.sfn.last()
	if err != nil {
		t.Fatalf("execution failed: %v", err)
	}
	if tr.Retries["EmbedBatch"] != 2 {
		t.Fatalf("EmbedBatch retries = %d, want 2 (%v)", tr.Retries["EmbedBatch"], tr.Retries)
	}
	// Unavailable retrier: 1 s x 2^n capped at 20 s, FULL jitter (Rand 0.5 here)
	if len(w.delays) != 2 || w.delays[0] != 500*time.Millisecond || w.delays[1] != time.Second {
		t.Fatalf("retry delays %v, want [500ms 1s]", w.delays)
	}
	d, _ := w.doc(t, "kb", "inbox/kb/a.md")
	if d.Status != rag.StatusReady {
		t.Fatalf("status %s", d.Status)
	}
	w.consistent(t, d.ID)
}

func TestWorkflowTerminalCaughtAndMarkedFailed(t *testing.T) {
	w := newWorkflowEnv(t)
	parses := 0
	w.wf.Stages.Parse = func(ctx context.Context, name string, data []byte, l extract.Limits) (extract.Result, error) {
		parses++
		return extract.Result{}, extract.Terminal("the PDF's page tree loops")
	}
	w.handle(t, w.bucket.put("inbox/kb/poison.md", []byte("# x\n\nbody")))
	tr, err := w.sfn.last()
	var e *aslrun.Error
	if err == nil || !strings.Contains(err.Error(), "IngestFailed") {
		t.Fatalf("execution result %v, want IngestFailed", err)
	}
	_ = e
	if parses != 1 || tr.Retries["Extract"] != 0 || tr.Errors["Extract"] != "Terminal" {
		t.Fatalf("parses %d, retries %v, errors %v: a terminal error must not be retried", parses, tr.Retries, tr.Errors)
	}
	d, _ := w.doc(t, "kb", "inbox/kb/poison.md")
	if d.Status != rag.StatusFailed || !strings.Contains(d.Error, "page tree loops") || !strings.HasPrefix(d.Error, "Terminal") {
		t.Fatalf("document %s %q, want failed with the reason", d.Status, d.Error)
	}
	if rows, vecs := w.state(t, d.ID); rows != 0 || vecs != 0 {
		t.Fatalf("rows %d vectors %d after rollback", rows, vecs)
	}
	ok, _ := w.sql.AcquireLease(context.Background(), LeaseName(tenant, d.KBID, d.SourceURI), "other", time.Minute)
	if !ok {
		t.Fatal("MarkFailed did not release the lease")
	}
}

// droppingVectors loses the last record of every upsert without an error: what a vector store that
// acknowledged and then lost a write looks like.
type droppingVectors struct{ store.VectorIndex }

func (d droppingVectors) Upsert(ctx context.Context, recs []rag.VectorRecord) error {
	if len(recs) > 0 {
		recs = recs[:len(recs)-1]
	}
	return d.VectorIndex.Upsert(ctx, recs)
}

func TestWorkflowVerifyCatchesMissingVector(t *testing.T) {
	w := newWorkflowEnv(t)
	w.wf.Stages.Vectors = droppingVectors{w.vec}
	w.handle(t, w.bucket.put("inbox/kb/a.md", manual("Seats: 3.")))
	tr, err := w.sfn.last()
	if err == nil || tr.Errors["Verify"] != "Incomplete" || tr.Retries["Verify"] != 0 {
		t.Fatalf("result %v, errors %v, retries %v; want Verify to fail Incomplete without retries", err, tr.Errors, tr.Retries)
	}
	if slices.Contains(tr.States, "Commit") || !slices.Contains(tr.States, "PlanRebuild") || !slices.Contains(tr.States, "IncompleteAfterRebuild") {
		t.Fatalf("states %v: want one rebuild, still short, then MarkFailed and no Commit", tr.States)
	}
	d, _ := w.doc(t, "kb", "inbox/kb/a.md")
	if d.Status != rag.StatusFailed || !strings.Contains(d.Error, "Incomplete") {
		t.Fatalf("document %s %q", d.Status, d.Error)
	}
	if rows, vecs := w.state(t, d.ID); rows != 0 || vecs != 0 {
		t.Fatalf("rows %d vectors %d after rollback", rows, vecs)
	}
}

// An update that fails keeps the previous version serving (the runner's rule, through MarkFailed).
func TestWorkflowFailedUpdateKeepsServing(t *testing.T) {
	w := newWorkflowEnv(t)
	w.handle(t, w.bucket.put("inbox/kb/a.md", manual("Seats: 3.")))
	d, _ := w.doc(t, "kb", "inbox/kb/a.md")
	rows0, vec0 := w.state(t, d.ID)
	w.vec.failAlways = true
	w.handle(t, w.bucket.put("inbox/kb/a.md", manual("Seats: 4, and a new paragraph about licences that did not exist before.")))
	if _, err := w.sfn.last(); err == nil {
		t.Fatal("the update succeeded with the vector store down")
	}
	w.vec.failAlways = false
	d, _ = w.doc(t, "kb", "inbox/kb/a.md")
	rows, vecs := w.state(t, d.ID)
	if d.Status != rag.StatusReady || rows != rows0 || vecs != vec0 || !strings.Contains(d.Error, "serving the previous version") {
		t.Fatalf("after a failed update: %s %q rows %d/%d vectors %d/%d", d.Status, d.Error, rows, rows0, vecs, vec0)
	}
}

// ING-01: one ObjectCreated event x100, 50 sequential then 50 with 20-way concurrency.
func TestING01ReplayedEvent(t *testing.T) { ing01(t, newWorkflowEnv(t)) }

// TestConformanceING01MySQL replays against MySQL: the in-process server in make test, MariaDB with a
// full connection pool (real racing transactions) in make test-integration.
func TestConformanceING01MySQL(t *testing.T) {
	opts := mysql.Options{MaxOpenConns: 10}
	if !mysqltest.Real() {
		opts.MaxOpenConns = 1 // go-mysql-server does not isolate concurrent transactions
	}
	db, err := mysql.Open(context.Background(), mysqltest.Database(t), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	ing01(t, newWorkflowEnvOn(t, db))
}

func ing01(t *testing.T, w *wfEnv) {
	ch := w.bucket.put("inbox/kb/员工 手册+v1.md", manual("Seats: 3 per team."))
	actions := map[string]int{}
	var mu sync.Mutex
	count := func(r TriggerResult) { mu.Lock(); actions[r.Action]++; mu.Unlock() }
	for range 50 {
		count(w.handle(t, ch))
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for range 50 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := w.trig.Handle(context.Background(), ch)
			if err != nil {
				t.Error(err)
			}
			count(r)
		}()
	}
	wg.Wait()
	k, _ := w.sql.GetKBByName(context.Background(), tenant, "kb")
	docs, _ := w.sql.ListDocuments(context.Background(), tenant, k.ID, "")
	if len(docs) != 1 {
		t.Fatalf("%d documents, want 1", len(docs))
	}
	rows, _ := w.sql.ListChunks(context.Background(), tenant, docs[0].ID)
	ids := map[string]bool{}
	for _, c := range rows {
		ids[c.ID] = true
	}
	n := countChildren(t, rows)
	vecs, _ := w.vec.Count(context.Background(), rag.Filter{Tenant: tenant, DocumentIDs: []string{docs[0].ID}})
	runs := w.sfn.runs.Load()
	embedRatio := float64(w.emb.texts.Load()) / float64(n)
	t.Logf("ING-01: events 100, sfn_runs %d, actions %v, documents %d, chunks %d, dup_rows %d, vectors %d (dup_vectors %d), embed_call_ratio %.2f",
		runs, actions, len(docs), len(rows), len(rows)-len(ids), vecs, vecs-n, embedRatio)
	if runs != 1 || actions[ActionStarted] != 1 || actions[ActionDuplicate] != 99 || len(ids) != len(rows) || vecs != n || embedRatio != 1 || docs[0].Status != rag.StatusReady {
		t.Fatal("ING-01 failed")
	}
	// a cold race: 20 first deliveries of a new key in a new knowledge base at once (the knowledge base,
	// the document row and the sequencer record are all created concurrently)
	ch2 := w.bucket.put("inbox/kb2/race.md", manual("Seats: 9."))
	var started atomic.Int64
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := w.trig.Handle(context.Background(), ch2)
			if err != nil {
				t.Error(err)
			}
			if r.Action == ActionStarted {
				started.Add(1)
			}
		}()
	}
	wg.Wait()
	k2, err := w.sql.GetKBByName(context.Background(), tenant, "kb2")
	if err != nil {
		t.Fatal(err)
	}
	docs2, _ := w.sql.ListDocuments(context.Background(), tenant, k2.ID, "")
	if started.Load() != 1 || len(docs2) != 1 || docs2[0].Status != rag.StatusReady {
		t.Fatalf("cold race: %d started, %d documents (%+v)", started.Load(), len(docs2), docs2)
	}
}

// ING-02: put v1, put v2 and a delete of one key, delivered in all 6 orders with duplicates: the event
// with the highest sequencer decides the final state. Two sequences: the delete last, and in the middle.
func TestING02AllOrderings(t *testing.T) {
	perms := [][3]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}}
	const key = "inbox/kb/policy.md"
	stale := 0
	for _, deleteAt := range []int{2, 1} {
		for _, p := range perms {
			t.Run(fmt.Sprintf("delete%d-%v", deleteAt, p), func(t *testing.T) {
				w := newWorkflowEnv(t)
				var evs [3]SourceChange
				contents := []string{"Seats: 1.", "Seats: 2, the second version."}
				v := 0
				for i := range 3 {
					if i == deleteAt {
						evs[i] = w.bucket.remove(key)
					} else {
						evs[i] = w.bucket.put(key, manual(contents[v]))
						v++
					}
				}
				for _, i := range p {
					for range 2 {
						if r := w.handle(t, evs[i]); r.Action == ActionStale {
							stale++
						}
					}
				}
				d, exists := w.doc(t, "kb", "inbox/kb/policy.md")
				if deleteAt == 2 {
					if exists {
						t.Fatalf("order %v: document %s %s survives the newest event, a delete", p, d.ID, d.Status)
					}
					if n, _ := w.vec.Count(context.Background(), rag.Filter{Tenant: tenant}); n != 0 {
						t.Fatalf("order %v: %d vectors resurrected", p, n)
					}
					return
				}
				if !exists || d.Status != rag.StatusReady || d.SourceSequencer != evs[2].Sequencer {
					t.Fatalf("order %v: document %+v; want ready at the newest put %s", p, d, evs[2].Sequencer)
				}
				rows, _ := w.sql.ListChunks(context.Background(), tenant, d.ID)
				if !slices.ContainsFunc(rows, func(c rag.Chunk) bool { return strings.Contains(c.Content, "second version") }) {
					t.Fatalf("order %v: the newest content is not indexed", p)
				}
				w.consistent(t, d.ID)
			})
		}
	}
	t.Logf("ING-02: 12 orderings x 2 deliveries, final state = highest sequencer in all that passed; stale_events_dropped %d", stale)
}

// ING-09: the largest state payload for a document of 20,000 chunks stays <= 32 KiB.
func TestING09StatePayloadBound(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 chunks: skipped with -short")
	}
	w := newWorkflowEnv(t)
	w.wf.BatchSize = 256
	var b strings.Builder
	for s := range 400 {
		fmt.Fprintf(&b, "# Section %d\n\n", s)
		for p := range 50 {
			fmt.Fprintf(&b, "Paragraph %d of section %d says that item %d costs %d credits per month.\n\n", p, s, s*50+p, p*7+s)
		}
	}
	w.wf.Stages.Limits.MaxFileBytes = 64 << 20
	w.handle(t, w.bucket.put("inbox/kb/big.md", []byte(b.String())))
	tr, err := w.sfn.last()
	if err != nil {
		t.Fatalf("execution: %v", err)
	}
	d, _ := w.doc(t, "kb", "inbox/kb/big.md")
	t.Logf("ING-09: %d child chunks, %d Map iterations, max_state_bytes %d (in %s)", d.ChunkCount, strings.Count(strings.Join(tr.States, ","), "EmbedBatch"), tr.MaxStateBytes, tr.Largest)
	if d.ChunkCount < 20000 {
		t.Fatalf("only %d chunks; the test needs 20,000", d.ChunkCount)
	}
	if tr.MaxStateBytes > 32<<10 {
		t.Fatalf("max_state_bytes %d > 32 KiB", tr.MaxStateBytes)
	}
}

func TestSplitInboxKey(t *testing.T) {
	for _, c := range []struct {
		key, kb, rel string
		ok           bool
	}{
		{"inbox/hr/员工 手册.pdf", "hr", "员工 手册.pdf", true},
		{"inbox/hr/a/b+c.md", "hr", "a/b+c.md", true},
		{"inbox/hr/", "", "", false},
		{"inbox/hr", "", "", false},
		{"inbox/.deleted-hr-20261130T100000Z/a.md", "", "", false},
		{"inbox/hr/.draft.md", "", "", false},
		{"sources/t/kb/doc/source.md", "", "", false},
		{"inbox/hr//a.md", "", "", false},
	} {
		kb, rel, ok := SplitInboxKey(c.key)
		if kb != c.kb || rel != c.rel || ok != c.ok {
			t.Errorf("SplitInboxKey(%q) = %q, %q, %v", c.key, kb, rel, ok)
		}
	}
}

// dropOnce loses the last record of the first upsert only: a write the store acknowledged and lost once.
type dropOnce struct {
	store.VectorIndex
	done atomic.Bool
}

func (d *dropOnce) Upsert(ctx context.Context, recs []rag.VectorRecord) error {
	if len(recs) > 0 && d.done.CompareAndSwap(false, true) {
		recs = recs[:len(recs)-1]
	}
	return d.VectorIndex.Upsert(ctx, recs)
}

// A short strong count rebuilds the document's vectors once, as the local runner does, and then commits.
func TestWorkflowRebuildsOnceAfterIncomplete(t *testing.T) {
	w := newWorkflowEnv(t)
	w.wf.Stages.Vectors = &dropOnce{VectorIndex: w.vec}
	w.handle(t, w.bucket.put("inbox/kb/a.md", manual("Seats: 3.")))
	tr, err := w.sfn.last()
	if err != nil {
		t.Fatalf("execution: %v (states %v)", err, tr.States)
	}
	if !slices.Contains(tr.States, "PlanRebuild") || tr.States[len(tr.States)-1] != "Done" {
		t.Fatalf("states %v; want one rebuild, then Done", tr.States)
	}
	d, _ := w.doc(t, "kb", "inbox/kb/a.md")
	if d.Status != rag.StatusReady {
		t.Fatalf("status %s %q", d.Status, d.Error)
	}
	w.consistent(t, d.ID)
	if got := w.emb.texts.Load(); got != int64(2*d.ChunkCount) {
		t.Fatalf("embedded %d texts for %d children; want every child twice (first pass, full rebuild)", got, d.ChunkCount)
	}
}

// An upload onto a source whose older document's delete was interrupted (status deleted) finishes that
// delete and ingests the new version; the tombstoned document never serves again.
func TestTriggerFinishesInterruptedDelete(t *testing.T) {
	w := newWorkflowEnv(t)
	w.handle(t, w.bucket.put("inbox/kb/a.md", manual("Seats: 3.")))
	old, _ := w.doc(t, "kb", "inbox/kb/a.md")
	old.Status = rag.StatusDeleted
	if err := w.sql.UpdateDocument(context.Background(), &old); err != nil {
		t.Fatal(err)
	}
	w.handle(t, w.bucket.put("inbox/kb/a.md", manual("Seats: 4, the new version.")))
	if _, err := w.sfn.last(); err != nil {
		t.Fatal(err)
	}
	d, ok := w.doc(t, "kb", "inbox/kb/a.md")
	if !ok || d.ID == old.ID || d.Status != rag.StatusReady {
		t.Fatalf("document %+v; want a new, ready document", d)
	}
	if _, err := w.sql.GetDocument(context.Background(), tenant, old.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("the interrupted delete was not finished: %v", err)
	}
	if rows, vecs := w.state(t, old.ID); rows != 0 || vecs != 0 {
		t.Fatalf("old document keeps %d rows, %d vectors", rows, vecs)
	}
	w.consistent(t, d.ID)
}
