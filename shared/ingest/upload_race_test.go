package ingest

import (
	"context"
	"io"
	"sync"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// hookBlobs runs hook once, when the first stored source is read.
type hookBlobs struct {
	store.Blobs
	once sync.Once
	hook func()
}

func (h *hookBlobs) Get(ctx context.Context, key string) (io.ReadCloser, store.BlobInfo, error) {
	h.once.Do(h.hook)
	return h.Blobs.Get(ctx, key)
}

// A queued upload is ingested into the knowledge base it was stored in, by id: when that knowledge
// base is deleted and another created under its name after the worker read the stored source, the
// upload fails instead of landing in the new one. Before the fix the worker looked the name up again.
func TestQueuedUploadNeverLandsInARecreatedKnowledgeBase(t *testing.T) {
	for _, n := range []int{1, 3} { // one source takes Ingest, several the batch path
		t.Run(map[int]string{1: "single", 3: "batch"}[n], func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t)
			q := &Queue{Service: e.svc}
			old, err := e.svc.KB(ctx, tenant, "kb", true)
			if err != nil {
				t.Fatal(err)
			}
			var jobs []job
			for i := range n {
				d, err := q.Upload(ctx, tenant, old.ID, "upload"+string(rune('a'+i))+".md", manual("Private upload."))
				if err != nil {
					t.Fatal(err)
				}
				jobs = append(jobs, job{tenant, d.ID})
			}
			var recreated rag.KnowledgeBase
			e.svc.Runner.Stages.Blobs = &hookBlobs{Blobs: e.svc.Runner.Stages.Blobs, hook: func() {
				if err := e.db.DeleteKB(ctx, tenant, old.ID); err != nil { // its rows, as a delete's last step
					t.Errorf("delete: %v", err)
				}
				recreated = rag.KnowledgeBase{Tenant: tenant, Name: "kb"}
				if err := e.db.CreateKB(ctx, &recreated); err != nil {
					t.Errorf("re-create: %v", err)
				}
			}}
			q.ingest(ctx, jobs)
			if recreated.ID == "" {
				t.Fatal("the hook did not run")
			}
			docs, err := e.db.ListDocuments(ctx, tenant, recreated.ID, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 0 {
				t.Errorf("the re-created knowledge base got %d documents, want none", len(docs))
			}
			if stored, _ := e.svc.Runner.Stages.Blobs.List(ctx, SourcePrefix(tenant, recreated.ID, "")); len(stored) != 0 {
				t.Errorf("the re-created knowledge base holds %d stored sources, want none", len(stored))
			}
		})
	}
}

// Upload takes the id the caller checked: a knowledge base deleted before the document row is written
// is NotFound, and nothing is stored.
func TestQueueUploadIntoADeletedKnowledgeBase(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	q := &Queue{Service: e.svc}
	kb, err := e.svc.KB(ctx, tenant, "kb", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.db.DeleteKB(ctx, tenant, kb.ID); err != nil {
		t.Fatal(err)
	}
	again, err := e.svc.KB(ctx, tenant, "kb", true)
	if err != nil {
		t.Fatal(err)
	}
	d, err := q.Upload(ctx, tenant, kb.ID, "a.md", manual("a"))
	if !rag.Is(err, rag.KindNotFound) || d.ID != "" {
		t.Errorf("Upload into a deleted knowledge base = %+v, %v; want NotFound", d, err)
	}
	for _, id := range []string{kb.ID, again.ID} {
		if stored, _ := e.svc.Runner.Stages.Blobs.List(ctx, SourcePrefix(tenant, id, "")); len(stored) != 0 {
			t.Errorf("%d sources stored under %s, want none", len(stored), id)
		}
	}
}
