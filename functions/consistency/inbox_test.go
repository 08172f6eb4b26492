package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/s3"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// fakeSFN is Step Functions' StartExecution as the SDK calls it: names are unique, a repeat is
// ExecutionAlreadyExists (infra/rie_test.go's fake has the same shape).
type fakeSFN struct {
	mu      sync.Mutex
	execs   map[string]string // name -> input
	order   []string
	repeats int // starts answered with ExecutionAlreadyExists
}

func (f *fakeSFN) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Name  string `json:"name"`
		Input string `json:"input"`
		ARN   string `json:"stateMachineArn"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("X-Amz-Target") != "AWSStepFunctions.StartExecution" || body.ARN != testMachine {
		w.WriteHeader(400)
		json.NewEncoder(w).Encode(map[string]string{"__type": "InvalidArn", "message": r.Header.Get("X-Amz-Target") + " " + body.ARN})
		return
	}
	if _, ok := f.execs[body.Name]; ok {
		f.repeats++
		w.WriteHeader(400)
		json.NewEncoder(w).Encode(map[string]string{"__type": "ExecutionAlreadyExists", "message": "Execution Already Exists: " + body.Name})
		return
	}
	f.execs[body.Name] = body.Input
	f.order = append(f.order, body.Name)
	json.NewEncoder(w).Encode(map[string]any{"executionArn": "arn:aws:states:us-east-1:123456789012:execution:ingest:" + body.Name,
		"startDate": float64(time.Now().Unix())})
}

func (f *fakeSFN) jobs(t *testing.T) []ingest.Job {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []ingest.Job
	for _, name := range f.order {
		var j ingest.Job
		if err := json.Unmarshal([]byte(f.execs[name]), &j); err != nil {
			t.Fatalf("execution %s input: %v", name, err)
		}
		if j.Holder != name {
			t.Fatalf("execution %s holds the lease as %q", name, j.Holder)
		}
		out = append(out, j)
	}
	return out
}

const (
	testBucket  = "docs"
	testTenant  = "acme"
	testMachine = "arn:aws:states:us-east-1:123456789012:stateMachine:ingest"
)

// awsWorld is the consistency function over SQLite and the in-memory index (as in main_test.go) with the
// AWS side real in protocol: a versioned gofakes3 bucket reached through the SDK (path style) and a
// fake Step Functions endpoint.
type awsWorld struct {
	db      *sqldb.DB
	vec     *memvec.Index
	blobs   *s3.Store
	s3      *awss3.Client
	sfn     *fakeSFN
	svc     *ingest.Service
	trigger *ingest.Trigger // the ingest function's trigger, for the S3 path's own events
	inbox   *s3Inbox
	now     time.Time // the inbox's clock: an hour ahead, so every object is past MinAge
}

func newAWSWorld(t *testing.T) *awsWorld {
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
	backend := s3mem.New()
	if err := backend.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	s3srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3srv.Close)
	creds := credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")
	w := &awsWorld{db: db, vec: memvec.New(32), sfn: &fakeSFN{execs: map[string]string{}}, now: time.Now().Add(time.Hour)}
	w.s3 = awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s3srv.URL), UsePathStyle: true, Credentials: creds})
	if _, err := w.s3.PutBucketVersioning(ctx, &awss3.PutBucketVersioningInput{Bucket: aws.String(testBucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatalf("enable versioning: %v", err)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	if w.blobs, err = s3.New(ctx, s3.Options{Bucket: testBucket, Region: "us-east-1", Endpoint: s3srv.URL, UsePathStyle: true}); err != nil {
		t.Fatal(err)
	}
	sfnsrv := httptest.NewServer(w.sfn)
	t.Cleanup(sfnsrv.Close)
	sc := sfn.New(sfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(sfnsrv.URL), Credentials: creds})
	w.svc = &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: db, Vectors: w.vec, Blobs: w.blobs, Embedder: embed.NewOffline(32),
		Chunking: chunk.Options{ChildChars: 120, Overlap: 20, ParentChars: 400}}}}
	exec := awsenv.Executions{Client: sc, StateMachineARN: testMachine}
	w.trigger = &ingest.Trigger{Service: w.svc, Events: db, Leases: db, Tenant: testTenant, Name: awsrt.ExecutionName, Executions: exec}
	// the wiring of wire(), over these stores
	repair := &ingest.Trigger{Service: w.svc, Events: db, Leases: db, Tenant: testTenant, Name: repairName, Executions: exec}
	w.inbox = &s3Inbox{Bucket: testBucket, Tenant: testTenant, Objects: w.blobs, Heads: w.s3, Events: db, Trigger: repair,
		Restore: &sourceRestore{Service: w.svc, Records: db, Leases: db, Objects: awsenv.Objects{S3: w.s3}},
		Now:     func() time.Time { return w.now }}
	return w
}

func (w *awsWorld) checker() *reconcile.Checker {
	return &reconcile.Checker{Records: w.db, Vectors: w.vec, Blobs: w.blobs, Embedder: w.svc.Runner.Stages.Embedder, Documents: w.svc,
		Inbox: w.inbox, Lease: w.db, Tenants: []string{testTenant}}
}

func (w *awsWorld) handler(metrics io.Writer) *handler {
	return &handler{check: w.checker(), log: slog.New(slog.DiscardHandler), metrics: metrics, now: time.Now}
}

// put uploads a drop-folder object (no notification: the test plays the dropped event) and returns its version.
func (w *awsWorld) put(t *testing.T, key, text string) string {
	t.Helper()
	out, err := w.s3.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String(testBucket), Key: aws.String(key), Body: strings.NewReader(text)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.VersionId)
}

func doc(name string) string {
	return "# " + name + "\n\n" + strings.Repeat("The waiting period for "+name+" is ninety days. ", 10)
}

// ING-08 on AWS: three drop-folder objects whose S3 notifications were lost are reported and each
// starts one execution with the S3 path's payload; the next run finds their documents and starts none;
// a replayed repair meets ExecutionAlreadyExists and counts as done.
func TestInboxWithoutDocuments(t *testing.T) {
	w := newAWSWorld(t)
	ctx := context.Background()
	missed := map[string]string{} // key -> version
	for _, k := range []string{"inbox/manuals/a.md", "inbox/manuals/policies/b 2026.txt", "inbox/手册/员工 手册.md"} {
		missed[k] = w.put(t, k, doc(k))
	}
	// what the S3 path skips, so the check must too
	for _, k := range []string{"inbox/.deleted-old-1764500000/x.md", "inbox/manuals/.draft.md", "inbox/manuals/~$lock.md",
		"inbox/manuals/photo.xyz", "inbox/top.md", "inbox/manuals/notes.md~", "sources/acme/kb/doc/source.md"} {
		w.put(t, k, doc(k))
	}
	// one object that went through the S3 path: its document exists
	w.put(t, "inbox/manuals/seen.md", doc("seen"))
	if res, err := w.trigger.Handle(ctx, ingest.SourceChange{Bucket: testBucket, Key: "inbox/manuals/seen.md", Sequencer: "0055AED6DCD90281E5"}); err != nil || res.Action != ingest.ActionStarted {
		t.Fatalf("the S3 path's own event: %+v, %v", res, err)
	}
	base := len(w.sfn.jobs(t))

	var metrics bytes.Buffer
	res, err := w.handler(&metrics).handle(ctx, Event{})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Drift[reconcile.SourcesWithoutDocument]; got != 3 {
		t.Fatalf("drift %s = %d, want 3 (the objects without a document); report %+v", reconcile.SourcesWithoutDocument, got, res)
	}
	if res.Repaired[reconcile.SourcesWithoutDocument] != 3 || res.Remaining[reconcile.SourcesWithoutDocument] != 0 || len(res.Errors) != 0 {
		t.Fatalf("repair: %+v", res)
	}
	if classes, _ := parseEMF(t, metrics.String()); classes[reconcile.SourcesWithoutDocument].Drift != 3 {
		t.Fatalf("EMF record: %+v", classes[reconcile.SourcesWithoutDocument])
	}
	jobs := w.sfn.jobs(t)[base:]
	if len(jobs) != 3 {
		t.Fatalf("%d executions started, want 3", len(jobs))
	}
	for _, j := range jobs {
		ver, ok := missed[j.Key]
		kb, rel, _ := ingest.SplitInboxKey(j.Key)
		d, err := w.db.GetDocument(ctx, testTenant, j.DocumentID)
		switch {
		case !ok:
			t.Errorf("an execution for %s, which has a document or is skipped", j.Key)
		case j.VersionID != ver || ver == "":
			t.Errorf("%s: execution reads version %q, want the current %q", j.Key, j.VersionID, ver)
		case j.SourceURI != ingest.SourceURI(kb, rel) || j.Bucket != testBucket || j.Tenant != testTenant || j.Sequencer != "1":
			t.Errorf("%s: job %+v", j.Key, j)
		case err != nil || d.SourceURI != j.SourceURI || d.Status != rag.StatusPending:
			t.Errorf("%s: document %+v, %v; want it pending under the job's uri", j.Key, d, err)
		case !strings.HasPrefix(j.Holder, "repair-") || !awsrt.ValidExecutionName(j.Holder):
			t.Errorf("%s: execution name %q", j.Key, j.Holder)
		}
	}

	t.Run("SecondRunStartsNone", func(t *testing.T) {
		res, err := w.handler(io.Discard).handle(ctx, Event{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Drift[reconcile.SourcesWithoutDocument] != 0 || len(w.sfn.jobs(t)) != base+3 {
			t.Fatalf("second run: drift %v, %d executions (want %d)", res.Drift, len(w.sfn.jobs(t)), base+3)
		}
	})
	t.Run("ReplayedRepairIsDone", func(t *testing.T) {
		before := w.sfn.repeats
		if err := w.inbox.Ingest(ctx, testTenant, "inbox/manuals/a.md"); err != nil {
			t.Fatalf("replayed repair: %v", err)
		}
		if w.sfn.repeats != before+1 || len(w.sfn.jobs(t)) != base+3 {
			t.Fatalf("replay: %d ExecutionAlreadyExists answers (want %d), %d executions %+v", w.sfn.repeats, before+1, len(w.sfn.jobs(t)), w.sfn.jobs(t))
		}
	})
	t.Run("LaterS3EventSupersedesTheRepair", func(t *testing.T) {
		// the missed object is uploaded again and this time the notification arrives: the repair's
		// recorded sequencer must not make it stale
		k := "inbox/manuals/a.md"
		v := w.put(t, k, doc("a, second edition"))
		res, err := w.trigger.Handle(ctx, ingest.SourceChange{Bucket: testBucket, Key: k, VersionID: v, Sequencer: "0055AED6DCD90281F0"})
		if err != nil || res.Action != ingest.ActionStarted {
			t.Fatalf("the next real event: %+v, %v; want started", res, err)
		}
	})
}

// Objects younger than MinAge may still have their notification in the queue: not drift yet.
func TestInboxSkipsYoungObjects(t *testing.T) {
	w := newAWSWorld(t)
	w.put(t, "inbox/manuals/new.md", doc("new"))
	w.now = time.Now()
	files, err := w.inbox.Files(context.Background(), testTenant)
	if err != nil || len(files) != 0 {
		t.Fatalf("young object listed: %v, %v", files, err)
	}
	w.now = time.Now().Add(11 * time.Minute)
	if files, err = w.inbox.Files(context.Background(), testTenant); err != nil || len(files) != 1 || files[0] != "inbox/manuals/new.md" {
		t.Fatalf("after MinAge: %v, %v", files, err)
	}
	if other, err := w.inbox.Files(context.Background(), "globex"); err != nil || len(other) != 0 {
		t.Fatalf("another tenant's request: %v, %v; the bucket is %s's", other, err, testTenant)
	}
}

// A key whose removal was recorded, uploaded again with the notification lost: the repair records a
// sequencer just above the tombstone (below it the trigger would drop the repair as stale).
func TestInboxRepairAfterTombstone(t *testing.T) {
	w := newAWSWorld(t)
	ctx := context.Background()
	k := "inbox/manuals/back.md"
	if _, err := w.trigger.Handle(ctx, ingest.SourceChange{Removed: true, Bucket: testBucket, Key: k, Sequencer: "0055AED6DCD90281E5"}); err != nil {
		t.Fatal(err)
	}
	v := w.put(t, k, doc("back"))
	res, err := w.handler(io.Discard).handle(ctx, Event{})
	if err != nil || res.Repaired[reconcile.SourcesWithoutDocument] != 1 {
		t.Fatalf("report %+v, %v", res, err)
	}
	jobs := w.sfn.jobs(t)
	if len(jobs) != 1 || awsrt.CompareSequencer(jobs[0].Sequencer, "0055AED6DCD90281E6") != 0 || jobs[0].VersionID != v {
		t.Fatalf("jobs %+v; want one at sequencer 0055AED6DCD90281E6, version %s", jobs, v)
	}
}

// documents_without_source: a ready document whose stored source is gone while its object is in the
// drop folder is ingested again from the object (the state machine would skip it as unchanged).
func TestInboxRestoresStoredSource(t *testing.T) {
	w := newAWSWorld(t)
	ctx := context.Background()
	k := "inbox/manuals/kept.md"
	w.put(t, k, doc("kept"))
	rep, err := w.svc.Ingest(ctx, testTenant, ingest.Source{KBName: "manuals", URI: k, Name: "kept.md", Data: []byte(doc("kept"))})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := w.db.GetDocument(ctx, testTenant, rep.DocumentID)
	objs, err := w.blobs.List(ctx, "sources/"+testTenant+"/"+d.KBID+"/"+d.ID+"/")
	if err != nil || len(objs) != 1 {
		t.Fatalf("stored source %v, %v", objs, err)
	}
	w.blobs.Delete(ctx, objs[0].Key)
	chk := w.checker()
	chk.Now = func() time.Time { return time.Now().Add(time.Hour) } // past the blobs' grace
	res, err := chk.Run(ctx, reconcile.Options{Repair: true})
	if err != nil || res.Drift[reconcile.DocumentsWithoutSource] != 1 || res.Repaired[reconcile.DocumentsWithoutSource] != 1 {
		t.Fatalf("report %+v, %v", res, err)
	}
	if _, err := w.blobs.Stat(ctx, objs[0].Key); err != nil {
		t.Fatalf("stored source not restored: %v", err)
	}
	if len(w.sfn.jobs(t)) != 0 {
		t.Fatalf("the restore started executions: %v", w.sfn.order)
	}
	if d2, _ := w.db.GetDocument(ctx, testTenant, d.ID); d2.Status != rag.StatusReady {
		t.Fatalf("document %+v after the restore", d2)
	}
}

func TestRepairSequencer(t *testing.T) {
	for _, c := range []struct {
		name     string
		rec      sqldb.SourceEvent
		recorded bool
		version  string
		want     string
	}{
		{"nothing recorded", sqldb.SourceEvent{}, false, "v1", "1"},
		{"this version's put recorded", sqldb.SourceEvent{Sequencer: "00ab", Event: sqldb.SourcePut, VersionID: "v1"}, true, "v1", "AB"},
		{"an older version's put", sqldb.SourceEvent{Sequencer: "00AB", Event: sqldb.SourcePut, VersionID: "v0"}, true, "v1", "AC"},
		{"a removal", sqldb.SourceEvent{Sequencer: "0FFF", Event: sqldb.SourceDelete, VersionID: "v1"}, true, "v1", "1000"},
		{"unversioned bucket", sqldb.SourceEvent{Sequencer: "9", Event: sqldb.SourcePut}, true, "", "A"},
	} {
		got, err := repairSequencer(c.rec, c.recorded, c.version)
		if err != nil || got != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		}
	}
}

// stale_versions on AWS: v2 of an object was recorded by the S3 path but its execution gave up (the
// lease) and no follow-up ran, so the document is ready at v1's sequencer. The scheduled run starts one
// execution for v2's recorded version and sequencer (which the workflow's Prepare accepts); a replayed
// repair is ExecutionAlreadyExists while the document still lags: remaining, not repaired.
func TestStaleVersionIsIngestedAgain(t *testing.T) {
	w := newAWSWorld(t)
	ctx := context.Background()
	k := "inbox/manuals/plan.md"
	d, v2 := w.lagging(t, k, "plan one", "plan two", "0055AED6DCD90281E5", "0055AED6DCD90281F0")
	chk := w.checker()
	chk.Now = func() time.Time { return time.Now().Add(time.Hour) } // past Grace
	res, err := chk.Run(ctx, reconcile.Options{Repair: true})
	if err != nil || res.Drift[reconcile.StaleVersions] != 1 || res.Repaired[reconcile.StaleVersions] != 1 {
		t.Fatalf("report %+v, %v", res, err)
	}
	jobs := w.sfn.jobs(t)
	if len(jobs) != 1 || jobs[0].VersionID != v2 || awsrt.CompareSequencer(jobs[0].Sequencer, "0055AED6DCD90281F0") != 0 || jobs[0].DocumentID != d.ID {
		t.Fatalf("jobs %+v; want one for version %s at sequencer 0055AED6DCD90281F0", jobs, v2)
	}
	// the execution for v2 exists, yet the document still lags it: not repaired, still remaining
	if res, err = chk.Run(ctx, reconcile.Options{Repair: true}); err != nil || res.Repaired[reconcile.StaleVersions] != 0 ||
		res.Remaining[reconcile.StaleVersions] != 1 || len(res.Errors) != 1 || w.sfn.repeats != 1 {
		t.Fatalf("replayed repair: %+v, %v, %d repeats", res, err, w.sfn.repeats)
	}
	// once the execution prepared v2, the document is current
	d, _ = w.db.GetDocument(ctx, testTenant, d.ID)
	d.SourceSequencer = jobs[0].Sequencer
	w.db.UpdateDocument(ctx, &d)
	if res, err = chk.Run(ctx, reconcile.Options{}); err != nil || res.Drift[reconcile.StaleVersions] != 0 {
		t.Fatalf("after v2 was prepared: %+v, %v", res.Drift, err)
	}
}

// An unchanged re-upload is not stale: v2 carries v1's bytes, so v2's execution skips as unchanged, and
// its Prepare records v2's sequencer on the document. Before, the document stayed at v1's sequencer, the
// check reported it on every run and each "repair" skipped again (then met ExecutionAlreadyExists).
func TestUnchangedReuploadIsNotStale(t *testing.T) {
	w := newAWSWorld(t)
	ctx := context.Background()
	k := "inbox/manuals/same.md"
	d, v2 := w.lagging(t, k, "same", "same", "100", "110")
	wf := &ingest.Workflow{Stages: w.svc.Runner.Stages, Leases: w.db, Events: w.db, Objects: awsenv.Objects{S3: w.s3}}
	out, err := wf.Prepare(ctx, ingest.Job{Doc: ingest.Doc{Tenant: testTenant, KBID: d.KBID, DocumentID: d.ID}, SourceURI: k,
		Bucket: testBucket, Key: k, VersionID: v2, Sequencer: "110", FileName: "same.md", Holder: "exec-v2"})
	if err != nil || !out.Skip || out.Reason != "unchanged" {
		t.Fatalf("prepare of the unchanged v2: %+v, %v", out, err)
	}
	got, _ := w.db.GetDocument(ctx, testTenant, d.ID)
	if got.SourceSequencer != "110" || got.SourceETag != v2 || got.Status != rag.StatusReady {
		t.Fatalf("document at %q/%q (%s), want v2's sequencer 110 and version %s", got.SourceSequencer, got.SourceETag, got.Status, v2)
	}
	chk := w.checker()
	chk.Now = func() time.Time { return time.Now().Add(time.Hour) } // past Grace
	res, err := chk.Run(ctx, reconcile.Options{Repair: true})
	if err != nil || res.Drift[reconcile.StaleVersions] != 0 || len(w.sfn.jobs(t)) != 0 {
		t.Fatalf("report %+v, %v, executions %+v; want no stale version and no repair", res, err, w.sfn.jobs(t))
	}
}

// lagging ingests key with body v1 and records it at sequencer seq1 (as v1's execution prepared it), then
// puts body v2 and records that put at seq2 through the S3 path only, as if its execution had not run:
// the document and the version id of v2.
func (w *awsWorld) lagging(t *testing.T, key, v1, v2, seq1, seq2 string) (rag.Document, string) {
	t.Helper()
	ctx := context.Background()
	w.put(t, key, doc(v1))
	rep, err := w.svc.Ingest(ctx, testTenant, ingest.Source{KBName: "manuals", URI: key, Name: path.Base(key), Data: []byte(doc(v1))})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := w.db.GetDocument(ctx, testTenant, rep.DocumentID)
	d.SourceSequencer = seq1
	if err := w.db.UpdateDocument(ctx, &d); err != nil {
		t.Fatal(err)
	}
	version := w.put(t, key, doc(v2))
	if _, err := w.db.RecordSourceEvent(ctx, sqldb.SourceEvent{Tenant: testTenant, KBID: d.KBID, SourceURI: key,
		Sequencer: seq2, VersionID: version, Event: sqldb.SourcePut}); err != nil {
		t.Fatal(err)
	}
	return d, version
}
