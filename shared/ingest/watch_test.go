package ingest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// waitFor polls cond (the watcher works in the background) and fails after a generous bound; the bound
// is a hang detector, not a speed assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWatcherIngestsChangesAndDeletes(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "manuals", "sub"), 0o755)
	os.WriteFile(filepath.Join(root, "manuals", "a.md"), manual("first"), 0o644) // present before start
	os.WriteFile(filepath.Join(root, "stray.md"), []byte("# not in a kb folder"), 0o644)
	var mu sync.Mutex
	var reports []Report
	w := &Watcher{Service: e.svc, Tenant: tenant, Root: root, Debounce: 50 * time.Millisecond,
		OnReport: func(r Report) { mu.Lock(); reports = append(reports, r); mu.Unlock() }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	docBy := func(uri string) (rag.Document, bool) {
		kb, err := e.db.GetKBByName(context.Background(), tenant, "manuals")
		if err != nil {
			return rag.Document{}, false
		}
		d, err := e.db.GetDocumentBySource(context.Background(), tenant, kb.ID, uri)
		return d, err == nil && d.Status == rag.StatusReady
	}
	waitFor(t, "the file present at start", func() bool { _, ok := docBy("inbox/manuals/a.md"); return ok })

	os.WriteFile(filepath.Join(root, "manuals", "sub", "b.txt"), []byte("Plain text about refunds. Refunds take five days."), 0o644)
	waitFor(t, "a new file in a subfolder", func() bool { _, ok := docBy("inbox/manuals/sub/b.txt"); return ok })

	a, _ := docBy("inbox/manuals/a.md")
	os.WriteFile(filepath.Join(root, "manuals", "a.md"), manual("second version"), 0o644)
	waitFor(t, "the changed file", func() bool { d, _ := docBy("inbox/manuals/a.md"); return d.ContentHash != a.ContentHash })

	os.Remove(filepath.Join(root, "manuals", "a.md"))
	waitFor(t, "the removed file's document to go", func() bool {
		_, err := e.db.GetDocument(context.Background(), tenant, a.ID)
		return rag.Is(err, rag.KindNotFound)
	})
	if rows, vecs := e.state(t, a.ID); rows != 0 || vecs != 0 {
		t.Fatalf("removed file left %d rows and %d vectors", rows, vecs)
	}

	// a new knowledge base folder with a file, created while running
	os.MkdirAll(filepath.Join(root, "policies"), 0o755)
	os.WriteFile(filepath.Join(root, "policies", "p.md"), []byte("# Policy\n\nBe kind."), 0o644)
	waitFor(t, "a new knowledge base", func() bool {
		kb, err := e.db.GetKBByName(context.Background(), tenant, "policies")
		if err != nil {
			return false
		}
		docs, _ := e.db.ListDocuments(context.Background(), tenant, kb.ID, rag.StatusReady)
		return len(docs) == 1
	})
	mu.Lock()
	defer mu.Unlock()
	for _, r := range reports {
		if r.File == "stray.md" {
			t.Fatal("a file outside a knowledge-base folder was ingested")
		}
	}
}

func TestSyncDeletesDocumentsOfFilesRemovedWhileStopped(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "kb"), 0o755)
	p := filepath.Join(root, "kb", "gone.md")
	os.WriteFile(p, []byte("# Gone\n\nsoon"), 0o644)
	w := &Watcher{Service: e.svc, Tenant: tenant, Root: root}
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	kb, _ := e.db.GetKBByName(context.Background(), tenant, "kb")
	if docs, _ := e.db.ListDocuments(context.Background(), tenant, kb.ID, ""); len(docs) != 1 {
		t.Fatalf("%d docs after sync", len(docs))
	}
	os.Remove(p)
	if err := w.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if docs, _ := e.db.ListDocuments(context.Background(), tenant, kb.ID, ""); len(docs) != 0 {
		t.Fatalf("%d docs after the file was removed", len(docs))
	}
	// the deletion is in the audit log as an API or CLI deletion would be
	entries, err := e.db.ListAudit(context.Background(), tenant, 50)
	found := false
	for _, en := range entries {
		found = found || (en.Action == "document.delete" && en.Actor == "operator:inbox" && filepath.Base(en.Target) == "gone.md")
	}
	if err != nil || !found {
		t.Fatalf("no document.delete by operator:inbox in the audit log: %+v, %v", entries, err)
	}
}
