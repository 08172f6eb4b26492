package ingest

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// overlapOnce makes the fake Step Functions overlap two executions: the first time stage runs in the
// current execution, during runs (a second event's execution, run to its end inside the first one's
// task, as if it ran meanwhile on other instances).
func overlapOnce(w *wfEnv, stage string, during func()) {
	inner := w.sfn.runner.Invoke
	var fired atomic.Bool // the Map's iterations run side by side
	w.sfn.runner.Invoke = func(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
		var env Envelope
		if json.Unmarshal(input, &env) == nil && env.Stage == stage && fired.CompareAndSwap(false, true) {
			during()
		}
		return inner(ctx, resource, input)
	}
}

// hasText reports whether the document's rows hold text.
func (w *wfEnv) hasText(t *testing.T, docID, text string) bool {
	t.Helper()
	rows, err := w.sql.ListChunks(context.Background(), tenant, docID)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rows {
		if strings.Contains(c.Content, text) {
			return true
		}
	}
	return false
}

// TestOverlappingVersionIsFollowedUp: v2 of a file is uploaded while v1's execution embeds. v2's
// execution meets the lease in Prepare, retries Conflict until it gives up, and its MarkFailed cannot
// take the lease (v1 holds it). When v1 commits it sees the newer put and starts the follow-up, which
// ingests v2: the newest version is what serves, not v1's content left ready.
func TestOverlappingVersionIsFollowedUp(t *testing.T) {
	w := newWorkflowEnv(t)
	w.wf.Executions, w.wf.Name = w.sfn, awsrt.ExecutionName
	const key = "inbox/kb/policy.md"
	var v2 SourceChange
	overlapOnce(w, "EmbedBatch", func() {
		v2 = w.bucket.put(key, manual("Version two: refunds within 60 days."))
		if res := w.handle(t, v2); res.Action != ActionStarted {
			t.Errorf("v2: %q, want started", res.Action)
		}
	})
	w.handle(t, w.bucket.put(key, manual("Version one: refunds within 30 days.")))

	if w.sfn.runs.Load() != 3 {
		t.Fatalf("%d executions, want v2's (gave up), v1's and the follow-up", w.sfn.runs.Load())
	}
	w.sfn.mu.Lock()
	v2Trace, v2Err, v1Err, fuErr := w.sfn.traces[0], w.sfn.results[0], w.sfn.results[2], w.sfn.results[1]
	w.sfn.mu.Unlock()
	if v2Err == nil || v2Trace.Errors["Prepare"] != "Conflict" || v2Trace.Retries["Prepare"] != 8 {
		t.Fatalf("v2's own execution: %v, retries %v, errors %v; want it to give up on the lease", v2Err, v2Trace.Retries, v2Trace.Errors)
	}
	if v1Err != nil || fuErr != nil {
		t.Fatalf("v1's execution %v, the follow-up %v", v1Err, fuErr)
	}
	d, ok := w.doc(t, "kb", key)
	if !ok || d.Status != rag.StatusReady || d.SourceSequencer != v2.Sequencer {
		t.Fatalf("document %+v, want ready at v2's sequencer %s", d, v2.Sequencer)
	}
	if !w.hasText(t, d.ID, "60 days") || w.hasText(t, d.ID, "30 days") {
		t.Fatal("the document serves v1's content: the newer version was lost")
	}
	w.consistent(t, d.ID)
	// the follow-up's name is deterministic: following the same version up again starts nothing
	name, err := w.wf.FollowUp(context.Background(), Job{Doc: Doc{Tenant: tenant, KBID: d.KBID, DocumentID: d.ID}, SourceURI: key,
		Bucket: "docs", Key: key, Sequencer: "1", Holder: "x"})
	if err != nil || name == "" || w.sfn.runs.Load() != 3 {
		t.Fatalf("repeated follow-up: %q %v, %d executions (want ExecutionAlreadyExists, still 3)", name, err, w.sfn.runs.Load())
	}
	if ok, _ := w.sql.AcquireLease(context.Background(), LeaseName(tenant, d.KBID, key), "other", time.Minute); !ok {
		t.Fatal("a lease was left held")
	}
}

// TestOverlappingVersionAfterFailure: v1 fails terminally while v2's execution gave up on the lease;
// v1's MarkFailed sees it was superseded, leaves the document to v2 and starts the follow-up, which
// ingests v2.
func TestOverlappingVersionAfterFailure(t *testing.T) {
	w := newWorkflowEnv(t)
	w.wf.Executions, w.wf.Name = w.sfn, awsrt.ExecutionName
	const key = "inbox/kb/notes.md"
	parse := w.wf.Stages.Parse
	if parse == nil {
		parse = extract.Extract
	}
	w.wf.Stages.Parse = func(ctx context.Context, name string, data []byte, l extract.Limits) (extract.Result, error) {
		if strings.Contains(string(data), "BROKEN") {
			return extract.Result{}, extract.Terminal("v1 does not parse")
		}
		return parse(ctx, name, data, l)
	}
	overlapOnce(w, "Extract", func() {
		w.handle(t, w.bucket.put(key, manual("Version two parses: 12 seats.")))
	})
	w.handle(t, w.bucket.put(key, []byte("# BROKEN\n\nv1")))
	if w.sfn.runs.Load() != 3 {
		t.Fatalf("%d executions, want 3", w.sfn.runs.Load())
	}
	d, ok := w.doc(t, "kb", key)
	if !ok || d.Status != rag.StatusReady || !w.hasText(t, d.ID, "12 seats") {
		t.Fatalf("document %+v: want v2 ready", d)
	}
	w.consistent(t, d.ID)
}

// TestCommitKeepsTombstone: a knowledge-base delete marks every document deleted before it takes their
// leases; an execution that then reaches Commit must not make its document ready again.
func TestCommitKeepsTombstone(t *testing.T) {
	w := newWorkflowEnv(t)
	const key = "inbox/kb/gone.md"
	overlapOnce(w, "Commit", func() {
		d, ok := w.doc(t, "kb", key)
		if !ok {
			t.Fatal("no document")
		}
		d.Status = rag.StatusDeleted
		if err := w.sql.UpdateDocument(context.Background(), &d); err != nil {
			t.Fatal(err)
		}
	})
	w.handle(t, w.bucket.put(key, manual("Seats: 4.")))
	if d, ok := w.doc(t, "kb", key); !ok || d.Status != rag.StatusDeleted {
		t.Fatalf("document %+v after Commit, want still deleted", d)
	}
}

// TestWorkflowWaitsOutThrottling: the stage functions' reserved concurrency is shared by every
// execution, so a burst of uploads is throttled (Lambda.TooManyRequestsException). Ten throttles in a
// row on one task are waited out with a growing, capped delay; the document ends ready.
func TestWorkflowWaitsOutThrottling(t *testing.T) {
	w := newWorkflowEnv(t)
	w.wf.BatchSize = 1000 // one batch: the Map's iterations would otherwise retry side by side
	inner := w.sfn.runner.Invoke
	var throttled atomic.Int64
	w.sfn.runner.Invoke = func(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
		var env Envelope
		if json.Unmarshal(input, &env) == nil && env.Stage == "EmbedBatch" && throttled.Add(1) <= 10 {
			return nil, &aslrun.Error{Name: "Lambda.TooManyRequestsException", Cause: "Rate Exceeded."}
		}
		return inner(ctx, resource, input)
	}
	w.handle(t, w.bucket.put("inbox/kb/burst.md", manual("Seats: 7.")))
	if _, err := w.sfn.last(); err != nil {
		t.Fatalf("execution failed after %d throttles: %v", throttled.Load(), err)
	}
	if d, _ := w.doc(t, "kb", "inbox/kb/burst.md"); d.Status != rag.StatusReady {
		t.Fatalf("status %s", d.Status)
	}
	var total time.Duration
	for _, d := range w.delays {
		if d > 60*time.Second { // 120 s cap x 0.5 (FULL jitter, Rand 0.5 here)
			t.Errorf("delay %v above the cap", d)
		}
		total += d
	}
	if len(w.delays) != 10 || total < 3*time.Minute {
		t.Fatalf("%d delays totalling %v: want 10 growing waits, minutes in all", len(w.delays), total)
	}
}

// flakyStarts fails the first execution start after arm (a Step Functions outage during FollowUp).
type flakyStarts struct {
	Executions
	armed atomic.Bool
}

func (f *flakyStarts) Start(ctx context.Context, name string, input []byte) (bool, error) {
	if f.armed.CompareAndSwap(true, false) {
		return false, rag.Errorf("fake", rag.KindUnavailable, "StartExecution: service unavailable")
	}
	return f.Executions.Start(ctx, name, input)
}

// TestCommitRetryAfterFailedFollowUp: v1's Commit committed and released the lease, then its follow-up
// failed to start (Unavailable), so the ASL retries Commit. The retry runs while v2's execution holds
// the lease at its own Commit: it must not commit v1 again (ready over v2's work, v2's staging deleted),
// only start the follow-up. Then the retry with the lease free, after v2 committed, changes nothing
// either; v2 serves and the stores agree.
func TestCommitRetryAfterFailedFollowUp(t *testing.T) {
	w := newWorkflowEnv(t)
	flaky := &flakyStarts{Executions: w.sfn}
	w.wf.Executions, w.wf.Name = flaky, awsrt.ExecutionName
	ctx := context.Background()
	const key = "inbox/kb/plan.md"
	var v1Commit FinishIn
	inner := w.sfn.runner.Invoke
	w.sfn.runner.Invoke = func(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
		var env Envelope
		if json.Unmarshal(input, &env) == nil && env.Stage == "Commit" && v1Commit.Job.Holder == "" {
			json.Unmarshal(env.Input, &v1Commit)
		}
		return inner(ctx, resource, input)
	}
	w.handle(t, w.bucket.put(key, manual("Version one: 5 seats.")))
	d1, ok := w.doc(t, "kb", key)
	if !ok || d1.Status != rag.StatusReady || v1Commit.Job.Holder == "" {
		t.Fatalf("v1: %+v, commit input captured %v", d1, v1Commit.Job.Holder != "")
	}
	kb1, _ := w.sql.GetKB(ctx, tenant, d1.KBID)

	var retryErr error
	overlapOnce(w, "Commit", func() { // v2's execution is at its Commit and holds the lease
		staged := blobKeys(t, w.wf.Stages.staging(), StagingPrefix(tenant, d1.ID))
		dBefore, _ := w.doc(t, "kb", key) // as v2's Prepare left it: v2's sequencer, v1's content
		kbBefore, _ := w.sql.GetKB(ctx, tenant, d1.KBID)
		flaky.armed.Store(true)
		if _, err := w.wf.Commit(ctx, v1Commit); err == nil {
			t.Error("the armed follow-up start did not fail")
		}
		_, retryErr = w.wf.Commit(ctx, v1Commit) // the ASL's retry
		if got := blobKeys(t, w.wf.Stages.staging(), StagingPrefix(tenant, d1.ID)); len(got) != len(staged) || len(staged) == 0 {
			t.Errorf("v1's Commit retry under v2's lease touched v2's staging: %d payloads before, %d after", len(staged), len(got))
		}
		// a re-commit would write the document (UpdatedAt) and bump the knowledge base's version
		d, _ := w.doc(t, "kb", key)
		kbAfter, _ := w.sql.GetKB(ctx, tenant, d1.KBID)
		if !d.UpdatedAt.Equal(dBefore.UpdatedAt) || d.Status != dBefore.Status || d.SourceSequencer != dBefore.SourceSequencer ||
			d.ContentHash != d1.ContentHash || kbAfter.Version != kbBefore.Version {
			t.Errorf("v1's retry re-committed: %+v (before %+v), knowledge-base version %d -> %d", d, dBefore, kbBefore.Version, kbAfter.Version)
		}
	})
	v2 := w.bucket.put(key, manual("Version two: 9 seats."))
	w.handle(t, v2)
	if retryErr != nil {
		t.Fatalf("v1's Commit retry: %v", retryErr)
	}
	if _, err := w.sfn.last(); err != nil {
		t.Fatalf("v2's execution: %v", err)
	}
	d, ok := w.doc(t, "kb", key)
	if !ok || d.Status != rag.StatusReady || d.SourceSequencer != v2.Sequencer || !w.hasText(t, d.ID, "9 seats") || w.hasText(t, d.ID, "5 seats") {
		t.Fatalf("document %+v after v2; want v2 ready", d)
	}
	// the same retry once v2 is done and the lease free: nothing is committed again
	before, _ := w.sql.GetKB(ctx, tenant, d.KBID)
	if _, err := w.wf.Commit(ctx, v1Commit); err != nil {
		t.Fatalf("late retry: %v", err)
	}
	after, _ := w.sql.GetKB(ctx, tenant, d.KBID)
	if d2, _ := w.doc(t, "kb", key); d2.ContentHash != d.ContentHash || d2.SourceSequencer != v2.Sequencer || after.Version != before.Version {
		t.Fatalf("late retry changed the document or the knowledge base: %+v, version %d -> %d", d2, before.Version, after.Version)
	}
	if before.Version <= kb1.Version {
		t.Fatalf("knowledge-base version %d after v2, %d after v1", before.Version, kb1.Version)
	}
	w.consistent(t, d.ID)
	if ok, _ := w.sql.AcquireLease(ctx, LeaseName(tenant, d.KBID, key), "other", time.Minute); !ok {
		t.Fatal("a lease was left held")
	}
}
