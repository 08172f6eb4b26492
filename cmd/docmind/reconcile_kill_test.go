package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
	"github.com/docmind/docmind/shared/store"
)

// The two interrupted deletes with a real SIGKILL: the tests in reconcile_test.go stop the delete
// with an error, which still runs deferred closes; here the process dies with its files open (the SQLite
// database, the vector file and its log, the data directory's lock) at the worst moment, right after the
// document's vectors were deleted and flushed.

// envKillDelete carries the child's arguments: data dir, "doc" or "kb", the id, the marker file.
const envKillDelete = "DOCMIND_TEST_KILL_DELETE"

// pauseAfterVectors deletes a document's vectors, flushes them, tells the parent (the marker file) and
// blocks until the parent kills the process.
type pauseAfterVectors struct {
	store.VectorIndex
	marker string
}

func (p pauseAfterVectors) DeleteDocument(ctx context.Context, tenant, kbID, docID string) error {
	if err := p.VectorIndex.DeleteDocument(ctx, tenant, kbID, docID); err != nil {
		return err
	}
	if err := p.VectorIndex.Flush(ctx); err != nil {
		return err
	}
	if err := os.WriteFile(p.marker, []byte(docID), 0o644); err != nil {
		return err
	}
	select {} // the parent's SIGKILL ends the process here
}

// The child half of TestKillDuringDeleteIsRepaired.
func TestKillHelperDelete(t *testing.T) {
	args := os.Getenv(envKillDelete)
	if args == "" {
		t.Skip("the child process of TestKillDuringDeleteIsRepaired")
	}
	a := strings.Split(args, "\x1f")
	data, mode, id, marker := a[0], a[1], a[2], a[3]
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		svc.Runner.Stages.Vectors = pauseAfterVectors{VectorIndex: s.Vectors, marker: marker}
		var err error
		if mode == "kb" {
			err = svc.DeleteKB(context.Background(), "local", id)
		} else {
			err = svc.Delete(context.Background(), "local", id)
		}
		fmt.Fprintf(os.Stderr, "the delete returned (%v) instead of blocking for the kill\n", err)
		os.Exit(3)
	})
}

// killDelete runs the delete in a child process and SIGKILLs it once the document's vectors are gone.
func killDelete(t *testing.T, data, mode, id string) {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "vectors-deleted")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelperDelete$")
	cmd.Env = append(os.Environ(), envKillDelete+"="+strings.Join([]string{data, mode, id, marker}, "\x1f"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(2 * time.Minute)
	for {
		if _, err := os.Stat(marker); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the delete's process ended before the kill (%v):\n%s", err, out.String())
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("the delete never reached its vectors:\n%s", out.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the child was not killed: %v\n%s", err, out.String())
	}
}

func TestKillDuringDeleteIsRepaired(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process and kills it")
	}
	t.Run("document", func(t *testing.T) {
		data := t.TempDir()
		file := filepath.Join(t.TempDir(), "policy.md")
		os.WriteFile(file, []byte(largeDoc(300)), 0o644)
		if code, out, errOut := runCLI(t, nil, "ingest", "--kb", "manuals", "--data", data, file); code != 0 {
			t.Fatalf("ingest: %d %s %s", code, out, errOut)
		}
		var docID string
		withStores(t, data, func(s *Stores, svc *ingest.Service) {
			kb, _ := s.SQL.GetKBByName(context.Background(), "local", "manuals")
			docs, _ := s.SQL.ListDocuments(context.Background(), "local", kb.ID, "")
			docID = docs[0].ID
		})
		killDelete(t, data, "doc", docID)
		withStores(t, data, func(s *Stores, svc *ingest.Service) {
			// the kill left the tombstone, not a ready document without vectors (the state)
			if d, err := s.SQL.GetDocument(context.Background(), "local", docID); err != nil || d.Status != rag.StatusDeleted {
				t.Fatalf("after the kill: %+v, %v; want status deleted", d, err)
			}
		})
		repairedInOneRun(t, data, reconcile.DeletedDocuments, true)
		withStores(t, data, func(s *Stores, svc *ingest.Service) {
			ctx := context.Background()
			if _, err := s.SQL.GetDocument(ctx, "local", docID); !rag.Is(err, rag.KindNotFound) {
				t.Errorf("document after the repair: %v", err)
			}
			if n, _ := s.SQL.CountChunks(ctx, rag.Filter{Tenant: "local"}, ""); n != 0 {
				t.Errorf("%d chunk rows left", n)
			}
			if objs, _ := s.Blobs.List(ctx, "sources/"); len(objs) != 0 {
				t.Errorf("%d source blobs left", len(objs))
			}
		})
	})

	t.Run("knowledge base", func(t *testing.T) {
		data := t.TempDir()
		inbox := filepath.Join(data, "inbox", "manuals")
		os.MkdirAll(inbox, 0o755)
		for i := range 5 {
			os.WriteFile(filepath.Join(inbox, fmt.Sprintf("p%d.md", i)), []byte(largeDoc(20+i)), 0o644)
		}
		var kbID string
		withStores(t, data, func(s *Stores, svc *ingest.Service) {
			if err := (&ingest.Watcher{Service: svc, Tenant: "local", Root: filepath.Join(data, "inbox")}).Sync(context.Background()); err != nil {
				t.Fatal(err)
			}
			kb, err := s.SQL.GetKBByName(context.Background(), "local", "manuals")
			if err != nil {
				t.Fatal(err)
			}
			kbID = kb.ID
		})
		killDelete(t, data, "kb", kbID)
		repairedInOneRun(t, data, reconcile.DeletedKnowledgeBases, false)
		assertKBGoneAfterScan(t, data, kbID, "manuals")
	})
}

// DELETE /api/kbs/{kb} on a running server does what `kb delete` does (the issue: 601 source files and
// inbox/<kb>/ were left, and the next scan re-created the knowledge base and re-ingested everything).
func TestHTTPDeleteKBRemovesSourcesAndRetiresInbox(t *testing.T) {
	m, base := startServer(t, func(m *Main) {
		m.NoDemo, m.NoWatch = true, true
		dir := filepath.Join(m.Config.DataDir, "inbox", "docs")
		os.MkdirAll(dir, 0o755)
		for i := range 3 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%d.md", i)), []byte(largeDoc(4+i)), 0o644)
		}
	})
	ctx := context.Background()
	root := filepath.Join(m.Config.DataDir, "inbox")
	watcher := &ingest.Watcher{Service: m.Ingest, Tenant: m.Config.Tenant, Root: root}
	if err := watcher.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	kb, err := m.Stores.SQL.GetKBByName(ctx, m.Config.Tenant, "docs")
	if err != nil {
		t.Fatal(err)
	}
	if objs, _ := m.Stores.Blobs.List(ctx, "sources/"); len(objs) != 3 {
		t.Fatalf("%d stored sources after the scan, want 3", len(objs))
	}
	req, _ := http.NewRequest(http.MethodDelete, base+"/api/kbs/"+kb.ID, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /api/kbs/%s: %d", kb.ID, resp.StatusCode)
	}
	if objs, _ := m.Stores.Blobs.List(ctx, "sources/"); len(objs) != 0 {
		t.Errorf("%d stored sources left", len(objs))
	}
	if n, _ := m.Stores.Vectors.Count(ctx, rag.Filter{Tenant: m.Config.Tenant, KBIDs: []string{kb.ID}}); n != 0 {
		t.Errorf("%d vectors left", n)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), ".deleted-docs-") {
		t.Fatalf("inbox entries %v, want only inbox/.deleted-docs-<time>/", entries)
	}
	if files, _ := os.ReadDir(filepath.Join(root, entries[0].Name())); len(files) != 3 {
		t.Errorf("the retired folder keeps %d files, want the user's 3", len(files))
	}
	if err := watcher.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if kbs, _ := m.Stores.SQL.ListKBs(ctx, m.Config.Tenant); len(kbs) != 0 {
		t.Errorf("the next scan re-created %v", kbs)
	}
}
