package ingest

import (
	"context"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// blockingVectors holds DeleteDocument until released: a delete caught in the middle of its purge.
type blockingVectors struct {
	store.VectorIndex
	entered, release chan struct{}
}

func (b *blockingVectors) DeleteDocument(ctx context.Context, tenant, kbID, docID string) error {
	b.entered <- struct{}{}
	<-b.release
	return b.VectorIndex.DeleteDocument(ctx, tenant, kbID, docID)
}

// instance is another Lambda instance's Service over the same stores: its own in-process locks, the
// shared SQL lease.
func (e *env) instance() *Service {
	return &Service{Runner: e.svc.Runner, Leases: e.db.DB}
}

// TestServiceTakesSourceLease: Delete, DeleteKB and Retry take the source's SQL lease when Leases is
// set. While an execution of the state machine holds it, each is Conflict and leaves the document as
// it was; once released, the delete goes through.
func TestServiceTakesSourceLease(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.svc.Leases = e.db.DB
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "inbox/kb/a.md", Name: "a.md", Data: manual("Seats: 3.")})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := e.db.GetDocument(ctx, tenant, rep.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	lease := LeaseName(tenant, doc.KBID, doc.SourceURI)
	if ok, err := e.db.AcquireLease(ctx, lease, "ingest-execution-1", time.Hour); err != nil || !ok {
		t.Fatalf("Ingest left the lease held: %v %v", ok, err)
	}
	other := e.instance()
	if err := other.Delete(ctx, tenant, doc.ID); !rag.Is(err, rag.KindConflict) {
		t.Fatalf("Delete while an execution holds the lease: %v, want Conflict", err)
	}
	if err := other.Retry(ctx, tenant, doc.ID); !rag.Is(err, rag.KindConflict) {
		t.Fatalf("Retry while an execution holds the lease: %v, want Conflict", err)
	}
	if err := other.DeleteKB(ctx, tenant, doc.KBID); !rag.Is(err, rag.KindConflict) {
		t.Fatalf("DeleteKB while an execution holds a document's lease: %v, want Conflict", err)
	}
	if rows, vecs := e.state(t, doc.ID); rows == 0 || vecs == 0 {
		t.Fatalf("rows %d vectors %d: a refused delete purged the document", rows, vecs)
	}
	e.db.ReleaseLease(ctx, lease, "ingest-execution-1")
	if err := other.DeleteKB(ctx, tenant, doc.KBID); err != nil {
		t.Fatalf("DeleteKB after the release: %v", err)
	}
	if _, err := e.db.GetDocument(ctx, tenant, doc.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("document after DeleteKB: %v", err)
	}
	if ok, _ := e.db.AcquireLease(ctx, lease, "later", time.Minute); !ok {
		t.Fatal("DeleteKB left the lease held")
	}
}

// TestServiceLeaseTwoInstances: two instances contend for one source. A's delete is stopped in the
// middle of its purge; B's ingest and delete of the same source are Conflict meanwhile (their
// in-process locks are their own: only the lease keeps them out); A finishes, then B ingests anew.
// Without Leases B would have raced A's purge.
func TestServiceLeaseTwoInstances(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a, b := e.instance(), e.instance()
	src := Source{KBName: "kb", URI: "inbox/kb/b.md", Name: "b.md", Data: manual("Refunds: 30 days.")}
	rep, err := a.Ingest(ctx, tenant, src)
	if err != nil {
		t.Fatal(err)
	}
	bv := &blockingVectors{VectorIndex: e.vec, entered: make(chan struct{}), release: make(chan struct{})}
	e.svc.Runner.Stages.Vectors = bv
	done := make(chan error, 1)
	go func() { done <- a.Delete(ctx, tenant, rep.DocumentID) }()
	<-bv.entered // A holds the lease, mid-purge
	src2 := src
	src2.Data = manual("Refunds: 60 days.")
	if _, err := b.Ingest(ctx, tenant, src2); !rag.Is(err, rag.KindConflict) {
		t.Errorf("B's ingest during A's delete: %v, want Conflict", err)
	}
	if err := b.Delete(ctx, tenant, rep.DocumentID); !rag.Is(err, rag.KindConflict) {
		t.Errorf("B's delete during A's delete: %v, want Conflict", err)
	}
	close(bv.release)
	if err := <-done; err != nil {
		t.Fatalf("A's delete: %v", err)
	}
	e.svc.Runner.Stages.Vectors = e.vec
	rep2, err := b.Ingest(ctx, tenant, src2)
	if err != nil || rep2.Status != rag.StatusReady {
		t.Fatalf("B's ingest after A: %+v %v", rep2, err)
	}
	e.consistent(t, rep2.DocumentID)
}

// TestHoldingLease: a caller that holds the source's lease (the S3 trigger's removal, the consistency
// check's restore) runs the service under it instead of meeting its own hold.
func TestHoldingLease(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.svc.Leases = e.db.DB
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "inbox/kb/c.md", Name: "c.md", Data: manual("Seats: 9.")})
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := e.db.GetDocument(ctx, tenant, rep.DocumentID)
	lease := LeaseName(tenant, doc.KBID, doc.SourceURI)
	if ok, _ := e.db.AcquireLease(ctx, lease, "delete-1", time.Minute); !ok {
		t.Fatal("lease")
	}
	if err := e.svc.Delete(HoldingLease(ctx, lease), tenant, doc.ID); err != nil {
		t.Fatalf("Delete under the caller's hold: %v", err)
	}
	if ok, _ := e.db.AcquireLease(ctx, lease, "someone", time.Minute); ok {
		t.Fatal("the service released the caller's lease")
	}
}
