package ingest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// The queue holds references: an upload's source is in the blob store when Upload returns, the worker
// reads it back and ingests what is queued as one batch.
func TestQueueStoresUploadsAndIngestsThemInABatch(t *testing.T) {
	ctx := context.Background()
	e, _, cc := batchEnv(t)
	q := &Queue{Service: e.svc, Size: 8}
	kb, err := e.svc.KB(ctx, tenant, "kb", true)
	if err != nil {
		t.Fatal(err)
	}
	var docs []rag.Document
	for i := range 5 {
		d, err := q.Upload(ctx, tenant, kb.ID, fmt.Sprintf("u%d.md", i), manual(fmt.Sprintf("Upload %d allows %d seats.", i, i+2)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Runner.Stages.Blobs.Stat(ctx, sourceKey(tenant, d.KBID, d.ID, d.FileName)); err != nil {
			t.Fatalf("upload %d: source not stored when Upload returned: %v", i, err)
		}
		docs = append(docs, d)
	}
	// a full queue refuses, and says so on the document
	small := &Queue{Service: e.svc, Size: 1}
	if _, err := small.Upload(ctx, tenant, kb.ID, "a.md", manual("a")); err != nil {
		t.Fatal(err)
	}
	d, err := small.Upload(ctx, tenant, kb.ID, "b.md", manual("b"))
	if !rag.Is(err, rag.KindUnavailable) || d.Status != rag.StatusFailed {
		t.Errorf("upload into a full queue = %+v, %v; want failed and Unavailable", d, err)
	}

	run, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { q.Run(run); close(done) }()
	defer func() { stop(); <-done }()
	for _, d := range docs {
		for {
			got, err := e.db.GetDocument(ctx, tenant, d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status == rag.StatusReady {
				e.consistent(t, d.ID)
				break
			}
			if got.Status == rag.StatusFailed {
				t.Fatalf("upload %s failed: %s", d.FileName, got.Error)
			}
			time.Sleep(5 * time.Millisecond) // polling, no deadline: the test's own timeout bounds it
		}
	}
	if got := cc.commits.Load(); got < 1 || got > 2 {
		t.Errorf("batch commits for 5 queued uploads = %d, want 1 or 2 (two workers may split them)", got)
	}
}
