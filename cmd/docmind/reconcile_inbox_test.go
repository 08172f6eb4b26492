package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
)

// dropFolderDoc puts inbox/big/large.md under data, scans it in (what `docmind serve` does at start) and
// returns the document's id.
func dropFolderDoc(t *testing.T, data string, clauses int) string {
	t.Helper()
	dir := filepath.Join(data, "inbox", "big")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "large.md"), []byte(largeDoc(clauses)), 0o644); err != nil {
		t.Fatal(err)
	}
	var id string
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		ctx := context.Background()
		if err := (&ingest.Watcher{Service: svc, Tenant: "local", Root: filepath.Join(data, "inbox")}).Sync(ctx); err != nil {
			t.Fatal(err)
		}
		kb, err := s.SQL.GetKBByName(ctx, "local", "big")
		if err != nil {
			t.Fatal(err)
		}
		docs, _ := s.SQL.ListDocuments(ctx, "local", kb.ID, "")
		if len(docs) != 1 || docs[0].SourceURI != "inbox/big/large.md" {
			t.Fatalf("documents after the scan: %+v", docs)
		}
		id = docs[0].ID
	})
	return id
}

// assertStaysDeleted: the drop folder no longer holds the file (it is under inbox/.deleted-big-<time>/),
// and the next scan, what the next `docmind serve` runs at start, does not bring the document back.
func assertStaysDeleted(t *testing.T, data string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(data, "inbox", "big", "large.md")); !os.IsNotExist(err) {
		t.Errorf("inbox/big/large.md is still in the drop folder (%v)", err)
	}
	if moved, _ := filepath.Glob(filepath.Join(data, "inbox", ".deleted-big-*", "large.md")); len(moved) != 1 {
		t.Errorf("retired copies %v, want inbox/.deleted-big-<time>/large.md", moved)
	}
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		ctx := context.Background()
		if err := (&ingest.Watcher{Service: svc, Tenant: "local", Root: filepath.Join(data, "inbox")}).Sync(ctx); err != nil {
			t.Fatal(err)
		}
		kb, err := s.SQL.GetKBByName(ctx, "local", "big")
		if err != nil {
			t.Fatal(err)
		}
		if docs, _ := s.SQL.ListDocuments(ctx, "local", kb.ID, ""); len(docs) != 0 {
			t.Errorf("the next scan re-ingested the deleted document: %+v", docs)
		}
	})
}

// The review of issue #11, finding 1: DELETE /api/documents/{id} of a drop-folder document answered 204,
// then `reconcile` reported sources_without_document for inbox/big/large.md (exit 1), and the serve
// ticker's repair (or the next serve's scan) ingested it again.
func TestHTTPDeleteOfADropFolderDocumentLasts(t *testing.T) {
	data := t.TempDir()
	id := dropFolderDoc(t, data, 40)
	cfg := testConfig(data)
	m := &Main{Config: cfg, Version: "test", NoDemo: true, NoWatch: true}
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	req, _ := http.NewRequest(http.MethodDelete, "http://"+m.Addr()+"/api/documents/"+id, nil)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
	}
	cancel()
	if serr := <-done; serr != nil {
		t.Errorf("Serve: %v", serr)
	}
	m.Close()
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE /api/documents/%s: %v %v", id, resp, err)
	}
	if code, r := reconcileJSONOf(t, data); code != 0 || sum(r.Drift) != 0 {
		t.Fatalf("reconcile after the delete: exit %d, drift %v; want consistent", code, r.Drift)
	}
	if code, r := reconcileJSONOf(t, data, "--repair"); code != 0 || sum(r.Repaired) != 0 {
		t.Fatalf("reconcile --repair after the delete: exit %d, repaired %v; want nothing to repair", code, r.Repaired)
	}
	assertStaysDeleted(t, data)
}

// testConfig is the default configuration over data, served on a free loopback port.
func testConfig(data string) config.Config {
	cfg := config.Default()
	cfg.DataDir = data
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.MaxBodyBytes = 1 << 20
	return cfg
}

// The same with kill -9 during the delete (after the vectors went): one `reconcile --repair` finishes it,
// the next reconcile exits 0 and a restart does not re-ingest the file.
func TestKillDuringDropFolderDeleteIsRepaired(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a child process and kills it")
	}
	data := t.TempDir()
	id := dropFolderDoc(t, data, 300)
	killDelete(t, data, "doc", id)
	repairedInOneRun(t, data, reconcile.DeletedDocuments, true)
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		if _, err := s.SQL.GetDocument(context.Background(), "local", id); !rag.Is(err, rag.KindNotFound) {
			t.Errorf("document after the repair: %v", err)
		}
	})
	assertStaysDeleted(t, data)
}

// ageDocuments moves every document's last change back by d, as if ingested that long ago (reconcile
// leaves documents changed within its grace to the watcher).
func ageDocuments(t *testing.T, data string, d time.Duration) {
	t.Helper()
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		if _, err := s.SQL.SQL().ExecContext(context.Background(), `UPDATE documents SET updated_at = updated_at - ?`, d.Milliseconds()); err != nil {
			t.Fatal(err)
		}
	})
}

// The review of issue #11, finding 5, locally: a drop-folder file removed while the server was stopped
// left its document searchable and `reconcile -v` said consistent. It is documents_without_source now,
// and one repair deletes the document.
func TestReconcileDeletesTheDocumentOfARemovedDropFolderFile(t *testing.T) {
	data := t.TempDir()
	dir := filepath.Join(data, "inbox", "k3")
	os.MkdirAll(dir, 0o755)
	for _, name := range []string{"doc4.txt", "doc5.txt"} {
		os.WriteFile(filepath.Join(dir, name), []byte(largeDoc(5)), 0o644)
	}
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		if err := (&ingest.Watcher{Service: svc, Tenant: "local", Root: filepath.Join(data, "inbox")}).Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	ageDocuments(t, data, 2*time.Hour)
	if err := os.Remove(filepath.Join(dir, "doc5.txt")); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, nil, "reconcile", "--data", data, "-v")
	if code != exitFail || !strings.Contains(out, reconcile.DocumentsWithoutSource) || !strings.Contains(out, "inbox/k3/doc5.txt") {
		t.Fatalf("reconcile -v after the removal: exit %d\n%s", code, out)
	}
	code, r := reconcileJSONOf(t, data, "--repair")
	if code != 0 || r.Drift[reconcile.DocumentsWithoutSource] != 1 || r.Repaired[reconcile.DocumentsWithoutSource] != 1 || sum(r.Drift) != 1 {
		t.Fatalf("repair: exit %d, drift %v, repaired %v", code, r.Drift, r.Repaired)
	}
	if code, r = reconcileJSONOf(t, data); code != 0 || sum(r.Drift) != 0 {
		t.Fatalf("after the repair: exit %d, drift %v", code, r.Drift)
	}
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		ctx := context.Background()
		kb, _ := s.SQL.GetKBByName(ctx, "local", "k3")
		docs, _ := s.SQL.ListDocuments(ctx, "local", kb.ID, "")
		if len(docs) != 1 || docs[0].SourceURI != "inbox/k3/doc4.txt" {
			t.Fatalf("documents after the repair: %+v; want doc4.txt's only", docs)
		}
	})
}

// The review of issue #11 (finding 6): the documents_without_source repair deleted a CLI-ingested
// document (file:///tmp/rv11d/src/doc4.txt) whose stored copy was gone although the file was still on
// disk. It ingests it again from the file now; only when the file is gone too is the document deleted.
func TestReconcileRestoresAFileSourceFromDisk(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "doc4.txt")
	os.WriteFile(file, []byte(largeDoc(6)), 0o644)
	if code, out, errOut := runCLI(t, nil, "ingest", "--kb", "cli", "--data", data, file); code != 0 {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	var id string
	dropStoredSource := func() {
		t.Helper()
		withStores(t, data, func(s *Stores, svc *ingest.Service) {
			ctx := context.Background()
			objs, _ := s.Blobs.List(ctx, "sources/")
			if len(objs) != 1 {
				t.Fatalf("stored sources %v, want the one document's", objs)
			}
			id = strings.Split(objs[0].Key, "/")[3]
			if err := s.Blobs.Delete(ctx, objs[0].Key); err != nil {
				t.Fatal(err)
			}
		})
	}
	dropStoredSource()
	code, r := reconcileJSONOf(t, data, "--repair")
	if code != 0 || r.Drift[reconcile.DocumentsWithoutSource] != 1 || r.Repaired[reconcile.DocumentsWithoutSource] != 1 {
		t.Fatalf("repair: exit %d, drift %v, repaired %v", code, r.Drift, r.Repaired)
	}
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		ctx := context.Background()
		if d, err := s.SQL.GetDocument(ctx, "local", id); err != nil || d.Status != rag.StatusReady {
			t.Fatalf("the document after the repair: %+v, %v; want it kept, ready", d, err)
		}
		if objs, _ := s.Blobs.List(ctx, "sources/"); len(objs) != 1 {
			t.Fatalf("stored sources after the repair: %v; want the copy stored again", objs)
		}
	})
	if code, r = reconcileJSONOf(t, data); code != 0 || sum(r.Drift) != 0 {
		t.Fatalf("after the repair: exit %d, drift %v", code, r.Drift)
	}

	dropStoredSource()
	os.Remove(file)
	if code, r = reconcileJSONOf(t, data, "--repair"); code != 0 || r.Repaired[reconcile.DocumentsWithoutSource] != 1 {
		t.Fatalf("repair with the file gone too: exit %d, drift %v, repaired %v", code, r.Drift, r.Repaired)
	}
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		if _, err := s.SQL.GetDocument(context.Background(), "local", id); !rag.Is(err, rag.KindNotFound) {
			t.Fatalf("the document whose file and stored copy are both gone: %v; want it deleted", err)
		}
	})
}
