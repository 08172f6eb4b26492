package ingest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// kbWithDocs ingests one document per uri into a new knowledge base "kk" and returns it.
func kbWithDocs(t *testing.T, e *env, uris ...string) rag.KnowledgeBase {
	t.Helper()
	ctx := context.Background()
	for _, u := range uris {
		if _, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kk", URI: u, Name: "f.md", Data: manual("text of " + u)}); err != nil {
			t.Fatal(err)
		}
	}
	kb, err := e.db.GetKBByName(ctx, tenant, "kk")
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// within runs f and fails the test when it has not returned after limit: a deadlock regression fails
// instead of hanging the package until go test's own timeout.
func within(t *testing.T, limit time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("%s still blocked after %s (deadlock)", what, limit)
	}
}

// TestDeleteKBDoesNotWaitForAnInProcessLock: another call of this process holds one document's source
// lock. The delete answers Conflict at once, having changed nothing, instead of waiting while it holds
// the other documents' locks.
func TestDeleteKBDoesNotWaitForAnInProcessLock(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	kb := kbWithDocs(t, e, "inbox/kk/a.md", "inbox/kk/b.md", "inbox/kk/c.md")
	unlock := e.svc.lock(kb.ID + "\x00" + "inbox/kk/b.md")
	var err error
	within(t, time.Minute, "DeleteKB", func() { err = e.svc.DeleteKB(ctx, tenant, kb.ID) })
	unlock()
	if !rag.Is(err, rag.KindConflict) {
		t.Fatalf("DeleteKB while b.md's lock is held: %v, want Conflict", err)
	}
	if pending, _ := e.db.ListKBDeletions(ctx, tenant); len(pending) != 0 {
		t.Fatalf("the refused delete was recorded: %+v", pending)
	}
	docs, _ := e.db.ListDocuments(ctx, tenant, kb.ID, "")
	if len(docs) != 3 {
		t.Fatalf("%d documents after the refused delete, want 3", len(docs))
	}
	for _, d := range docs {
		if d.Status != rag.StatusReady {
			t.Fatalf("the refused delete changed %s: %s", d.SourceURI, d.Status)
		}
	}
	// the locks it took were released: the same delete now succeeds
	within(t, time.Minute, "DeleteKB", func() { err = e.svc.DeleteKB(ctx, tenant, kb.ID) })
	if err != nil {
		t.Fatalf("DeleteKB once the lock is free: %v", err)
	}
}

// racingDelete runs hook once, when the first delete has locked its documents and records itself.
type racingDelete struct {
	*sqldb.DB
	once sync.Once
	hook func()
}

func (r *racingDelete) MarkKBDeleting(ctx context.Context, kb rag.KnowledgeBase) error {
	r.once.Do(r.hook)
	return r.DB.MarkKBDeleting(ctx, kb)
}

// TestTwoKBDeletesDoNotDeadlock is the review's goroutine dump: delete A holds a.md's lock; a document
// 0.md is created after A listed the documents; delete B lists both, takes 0.md (it sorts first) and
// meets a.md; A then meets 0.md in its purge. When both waited, neither ever returned. Now the one that
// meets a held lock answers Conflict, both return, and a repeated delete finishes the job.
func TestTwoKBDeletesDoNotDeadlock(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	kb := kbWithDocs(t, e, "inbox/kk/a.md")
	errB := make(chan error, 1)
	rd := &racingDelete{DB: e.db.DB}
	rd.hook = func() {
		if _, err := e.svc.Ingest(ctx, tenant, Source{KBID: kb.ID, URI: "inbox/kk/0.md", Name: "0.md", Data: manual("created since")}); err != nil {
			t.Errorf("ingest 0.md: %v", err)
		}
		go func() { errB <- e.svc.DeleteKB(ctx, tenant, kb.ID) }()
		time.Sleep(100 * time.Millisecond) // let B reach a.md's lock (scheduling only; no assertion on time)
	}
	e.svc.Runner.Stages.Records = rd
	var errA, errB2 error
	within(t, time.Minute, "two deletes of one knowledge base", func() {
		errA = e.svc.DeleteKB(ctx, tenant, kb.ID)
		errB2 = <-errB
	})
	if errA != nil && !rag.Is(errA, rag.KindConflict) {
		t.Fatalf("first delete: %v, want success or Conflict", errA)
	}
	if errB2 != nil && !rag.Is(errB2, rag.KindConflict) && !rag.Is(errB2, rag.KindNotFound) {
		t.Fatalf("second delete: %v, want success, Conflict or NotFound", errB2)
	}
	var err error
	within(t, time.Minute, "the repeated delete", func() { err = e.svc.DeleteKB(ctx, tenant, kb.ID) })
	if err != nil && !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("repeated delete: %v", err)
	}
	if _, err := e.db.GetKB(ctx, tenant, kb.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("knowledge base after the deletes: %v, want NotFound", err)
	}
	if docs, _ := e.db.ListDocuments(ctx, tenant, kb.ID, ""); len(docs) != 0 {
		t.Fatalf("%d documents left", len(docs))
	}
}

// renewLog records every lease acquisition.
type renewLog struct {
	*sqldb.DB
	mu    sync.Mutex
	calls map[string][]string // lease name -> holders, in order
}

func (r *renewLog) AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error) {
	r.mu.Lock()
	r.calls[name] = append(r.calls[name], holder)
	r.mu.Unlock()
	return r.DB.AcquireLease(ctx, name, holder, ttl)
}

// TestDeleteKBRenewsEachLeaseBeforeItsPurge: every lease is taken up front with one TTL, so a long
// delete renews each (same holder) just before it purges that source, rather than outliving it.
func TestDeleteKBRenewsEachLeaseBeforeItsPurge(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	uris := []string{"inbox/kk/a.md", "inbox/kk/b.md", "inbox/kk/c.md"}
	kb := kbWithDocs(t, e, uris...)
	log := &renewLog{DB: e.db.DB, calls: map[string][]string{}}
	e.svc.Leases = log
	if err := e.svc.DeleteKB(ctx, tenant, kb.ID); err != nil {
		t.Fatal(err)
	}
	for _, u := range uris {
		got := log.calls[LeaseName(tenant, kb.ID, u)]
		if len(got) != 2 || got[0] != got[1] {
			t.Errorf("%s: lease acquisitions by %v, want taken and renewed once by one holder", u, got)
		}
	}
}
