package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// until polls cond, for states another goroutine reaches (a reservation queued), which take
// microseconds; a minute without it means the state is never reached.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(200 * time.Microsecond) {
		if time.Since(start) > time.Minute {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// bigManual is a markdown source whose extraction estimate is about 40 MiB.
func bigManual() []byte {
	return append(manual("This one is large."), bytes.Repeat([]byte("\nFiller paragraph about nothing in particular.\n"), 70_000)...)
}

// A document whose extraction would need more than the whole budget fails Terminal, once, with a
// message naming its size, the estimate and the setting; the documents around it ingest, in a batch
// and one by one, and the budget is whole again afterwards.
func TestExtractBudgetRefusesAnOversizeDocumentAndIngestsTheRest(t *testing.T) {
	e, _, _ := batchEnv(t)
	b := extract.NewBudget(32 << 20)
	e.svc.Runner.Stages.Limits.Budget = b
	big := bigManual()
	if est := extract.EstimateMemory("big.md", big, extract.Limits{}); est.Bytes <= b.Size() {
		t.Fatalf("test setup: the big source's estimate %d fits the budget %d", est.Bytes, b.Size())
	}
	srcs := batchSources(3)
	srcs = append(srcs[:1], append([]Source{{KBName: "kb", URI: "big.md", Name: "big.md", Data: big}}, srcs[1:]...)...)
	reps := e.svc.IngestBatch(context.Background(), tenant, srcs)
	for i, rep := range reps {
		if i == 1 {
			continue
		}
		if rep.Status != rag.StatusReady || rep.Error != "" {
			t.Errorf("%s next to the oversize one: %s %q", rep.File, rep.Status, rep.Error)
		}
		e.consistent(t, rep.DocumentID)
	}
	checkRefused := func(rep Report) {
		t.Helper()
		if rep.Status != rag.StatusFailed || rep.Retries != 0 {
			t.Errorf("oversize document: status %s, retries %d, want failed with none", rep.Status, rep.Retries)
		}
		doc, err := e.db.GetDocument(context.Background(), tenant, rep.DocumentID)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"big.md is 3.", "needs about", "32.0 MiB", "DOCMIND_EXTRACT_MEMORY"} {
			if !strings.Contains(doc.Error, want) {
				t.Errorf("the document's error %q does not say %q", doc.Error, want)
			}
		}
		if rows, vecs := e.state(t, rep.DocumentID); doc.Status != rag.StatusFailed || rows != 0 || vecs != 0 {
			t.Errorf("oversize document: status %s, %d rows, %d vectors", doc.Status, rows, vecs)
		}
	}
	checkRefused(reps[1])

	rep, err := e.svc.Ingest(context.Background(), tenant, Source{KBName: "kb", URI: "big2.md", Name: "big.md", Data: big})
	if !rag.Is(err, rag.KindTerminal) {
		t.Fatalf("Ingest of the oversize document: %v, want Terminal", err)
	}
	checkRefused(rep)
	if rep, err := e.svc.Ingest(context.Background(), tenant, Source{KBName: "kb", URI: "after.md", Name: "after.md", Data: manual("Still fine.")}); err != nil || rep.Status != rag.StatusReady {
		t.Fatalf("the next document: %v %+v", err, rep)
	}
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Errorf("budget in use %d, waiting %d after the documents", b.InUse(), b.Waiting())
	}
}

// An extraction that waited for the budget says so in its stage timings (extract_wait), in the report
// and on the document row; one that did not wait has no such key.
func TestExtractWaitInStageTimings(t *testing.T) {
	e := newEnv(t)
	b := extract.NewBudget(64 << 20)
	e.svc.Runner.Stages.Limits.Budget = b
	ctx := context.Background()

	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "a.md", Name: "a.md", Data: manual("No wait.")})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.StageMS["extract_wait"]; ok {
		t.Errorf("an uncontended extraction reports extract_wait: %v", rep.StageMS)
	}

	release, _, err := b.ReserveMemory(ctx, "other", 0, extract.Estimate{Format: "text", Bytes: b.Size()}) // another extraction holds it all
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan Report, 1)
	go func() {
		rep, _ := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "b.md", Name: "b.md", Data: manual("Waits for the budget.")})
		done <- rep
	}()
	until(t, "the extraction to queue", func() bool { return b.Waiting() == 1 })
	release()
	rep = <-done
	if rep.Status != rag.StatusReady || rep.StageMS["extract_wait"] < 1 {
		t.Fatalf("after waiting: status %s, stage_ms %v, want ready with extract_wait >= 1", rep.Status, rep.StageMS)
	}
	doc, err := e.db.GetDocument(ctx, tenant, rep.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	var stored map[string]int64
	if err := json.Unmarshal([]byte(doc.StageMillis), &stored); err != nil || stored["extract_wait"] < 1 {
		t.Errorf("the document's stage_ms %q lacks extract_wait (%v)", doc.StageMillis, err)
	}
}

// A batch whose extractions do not fit the budget together still ingests every document: the
// extractions take turns, and the budget is whole again afterwards.
func TestIngestBatchTakesTurnsUnderASmallBudget(t *testing.T) {
	e, _, _ := batchEnv(t)
	srcs := batchSources(6)
	est := extract.EstimateMemory(srcs[0].Name, srcs[0].Data, extract.Limits{})
	b := extract.NewBudget(est.Bytes + est.Bytes/2) // one at a time
	e.svc.Runner.Stages.Limits.Budget = b
	for _, rep := range e.svc.IngestBatch(context.Background(), tenant, srcs) {
		if rep.Status != rag.StatusReady {
			t.Errorf("%s: %s %q", rep.File, rep.Status, rep.Error)
		}
	}
	if b.InUse() != 0 || b.Waiting() != 0 {
		t.Errorf("budget in use %d, waiting %d after the batch", b.InUse(), b.Waiting())
	}
}

// Cancelled while its extraction waits for the budget, an ingestion ends promptly with the context's
// error, takes nothing from the budget, and the document is not marked ready.
func TestIngestCancelledWhileWaitingForTheBudget(t *testing.T) {
	e := newEnv(t)
	b := extract.NewBudget(64 << 20)
	e.svc.Runner.Stages.Limits.Budget = b
	release, _, err := b.ReserveMemory(context.Background(), "other", 0, extract.Estimate{Format: "text", Bytes: b.Size()})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "c.md", Name: "c.md", Data: manual("Cancelled.")})
		errc <- err
	}()
	until(t, "the extraction to queue", func() bool { return b.Waiting() == 1 })
	cancel()
	if err := <-errc; !rag.Is(err, rag.KindUnavailable) {
		t.Fatalf("cancelled ingestion: %v, want Unavailable", err)
	}
	if b.InUse() != b.Size() || b.Waiting() != 0 {
		t.Errorf("after the cancel: in use %d (want only the holder's %d), waiting %d", b.InUse(), b.Size(), b.Waiting())
	}
}
