package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
	"github.com/docmind/docmind/shared/store"
)

// killAfterVectors deletes a document's vectors and then "dies": the state a kill -9 during a delete
// leaves once the vectors are gone (the slow part of deleting a large document).
type killAfterVectors struct{ store.VectorIndex }

func (k killAfterVectors) DeleteDocument(ctx context.Context, tenant, kbID, docID string) error {
	if err := k.VectorIndex.DeleteDocument(ctx, tenant, kbID, docID); err != nil {
		return err
	}
	k.VectorIndex.Flush(ctx)
	return errors.New("killed")
}

func reconcileJSONOf(t *testing.T, data string, args ...string) (int, reconcileJSON) {
	t.Helper()
	code, out, errOut := runCLI(t, nil, append([]string{"reconcile", "--data", data, "--json"}, args...)...)
	var r reconcileJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("reconcile %v: exit %d, %q (%s): %v", args, code, out, errOut, err)
	}
	for _, cl := range reconcile.Classes {
		if _, ok := r.Drift[cl]; !ok {
			t.Fatalf("--json lacks drift.%s: %s", cl, out)
		}
		if _, ok := r.Repaired[cl]; !ok {
			t.Fatalf("--json lacks repaired.%s: %s", cl, out)
		}
	}
	return code, r
}

// withStores opens the data directory's stores and an ingestion service whose vector deletes die.
func withStores(t *testing.T, data string, fn func(s *Stores, svc *ingest.Service)) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = data
	s, err := OpenStores(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	svc, err := ingestService(cfg, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	fn(s, svc)
}

func largeDoc(n int) string {
	var b strings.Builder
	b.WriteString("# Policy\n\n")
	for i := range n {
		fmt.Fprintf(&b, "## Clause %d\n\nClause %d covers case %d: the insured sum is %d yuan and the waiting period %d days.\n\n", i, i, i, 1000+i, i%90)
	}
	return b.String()
}

// The first case: kill -9 during DELETE of a large document. The delete now marks the document
// deleted first, so the kill leaves a tombstone (never served), and one `reconcile --repair` finishes it.
func TestReconcileFinishesAKilledDocumentDelete(t *testing.T) {
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "policy.md")
	os.WriteFile(file, []byte(largeDoc(300)), 0o644)
	if code, out, errOut := runCLI(t, nil, "ingest", "--kb", "manuals", "--data", data, file); code != 0 {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	if code, r := reconcileJSONOf(t, data); code != 0 || sum(r.Drift) != 0 {
		t.Fatalf("fresh ingest: exit %d, drift %v", code, r.Drift)
	}
	var docID string
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		kb, _ := s.SQL.GetKBByName(context.Background(), "local", "manuals")
		docs, _ := s.SQL.ListDocuments(context.Background(), "local", kb.ID, "")
		docID = docs[0].ID
		svc.Runner.Stages.Vectors = killAfterVectors{s.Vectors}
		if err := svc.Delete(context.Background(), "local", docID); err == nil {
			t.Fatal("the killed delete succeeded")
		}
	})
	repairedInOneRun(t, data, reconcile.DeletedDocuments, true)
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		ctx := context.Background()
		if _, err := s.SQL.GetDocument(ctx, "local", docID); !rag.Is(err, rag.KindNotFound) {
			t.Errorf("document after repair: %v", err)
		}
		if n, _ := s.SQL.CountChunks(ctx, rag.Filter{Tenant: "local"}, ""); n != 0 {
			t.Errorf("%d chunk rows left", n)
		}
		if n, _ := s.Vectors.Count(ctx, rag.Filter{Tenant: "local"}); n != 0 {
			t.Errorf("%d vectors left", n)
		}
		if objs, _ := s.Blobs.List(ctx, "sources/"); len(objs) != 0 {
			t.Errorf("%d source blobs left", len(objs))
		}
		entries, err := s.SQL.ListAudit(ctx, "local", 50)
		found := false
		for _, en := range entries {
			found = found || (en.Action == "reconcile.repair" && en.Actor == "operator:reconcile" && en.Target == docID)
		}
		if err != nil || !found {
			t.Errorf("the repair's deletion is not in the audit log: %+v, %v", entries, err)
		}
	})
}

// The second case: `kb delete` of a drop-folder knowledge base, killed part way. The delete is
// recorded and the folder renamed first, so one `reconcile --repair` finishes it, and the knowledge base
// is not re-created from its files.
func TestReconcileFinishesAKilledKBDelete(t *testing.T) {
	data := t.TempDir()
	inbox := filepath.Join(data, "inbox", "manuals")
	os.MkdirAll(filepath.Join(inbox, "sub"), 0o755)
	for i := range 6 {
		os.WriteFile(filepath.Join(inbox, fmt.Sprintf("p%d.md", i)), []byte(largeDoc(5+i)), 0o644)
	}
	os.WriteFile(filepath.Join(inbox, "sub", "deep.md"), []byte(largeDoc(3)), 0o644)
	var kbID string
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		w := &ingest.Watcher{Service: svc, Tenant: "local", Root: filepath.Join(data, "inbox")}
		if err := w.Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
		kb, err := s.SQL.GetKBByName(context.Background(), "local", "manuals")
		if err != nil {
			t.Fatal(err)
		}
		kbID = kb.ID
		svc.Runner.Stages.Vectors = killAfterVectors{s.Vectors}
		if err := svc.DeleteKB(context.Background(), "local", kb.ID); err == nil {
			t.Fatal("the killed kb delete succeeded")
		}
	})
	repairedInOneRun(t, data, reconcile.DeletedKnowledgeBases, true)
	if _, err := os.Stat(inbox); !os.IsNotExist(err) {
		t.Fatalf("inbox/manuals is still there: %v", err)
	}
	entries := assertKBGoneAfterScan(t, data, kbID, "manuals")
	if _, err := os.Stat(filepath.Join(data, "inbox", entries[0].Name(), "sub", "deep.md")); err != nil {
		t.Fatalf("the user's files were not kept: %v", err)
	}
}

// A kb delete killed right after it recorded itself (before the folder was renamed): the scan must not
// also count the folder's files as sources without a document, whose repair failed once the delete's
// repair had moved them ("no such file", exit 1). One `reconcile --repair` ends consistent.
func TestReconcileFinishesAKBDeleteKilledBeforeTheRename(t *testing.T) {
	data := t.TempDir()
	inbox := filepath.Join(data, "inbox", "manuals")
	os.MkdirAll(inbox, 0o755)
	for i := range 3 {
		os.WriteFile(filepath.Join(inbox, fmt.Sprintf("p%d.md", i)), []byte(largeDoc(3+i)), 0o644)
	}
	var kbID string
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		ctx := context.Background()
		if err := (&ingest.Watcher{Service: svc, Tenant: "local", Root: filepath.Join(data, "inbox")}).Sync(ctx); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(inbox, "new.md"), []byte(largeDoc(2)), 0o644) // not ingested yet
		kb, err := s.SQL.GetKBByName(ctx, "local", "manuals")
		if err != nil {
			t.Fatal(err)
		}
		kbID = kb.ID
		if err := s.SQL.MarkKBDeleting(ctx, kb); err != nil { // the kill comes next
			t.Fatal(err)
		}
	})
	repairedInOneRun(t, data, reconcile.DeletedKnowledgeBases, true)
	entries := assertKBGoneAfterScan(t, data, kbID, "manuals")
	if _, err := os.Stat(filepath.Join(data, "inbox", entries[0].Name(), "new.md")); err != nil {
		t.Fatalf("the user's files were not kept: %v", err)
	}
}

// kb delete removes sources and the folder at once (the issue: 601 source files and inbox/<kb>/ were left,
// and the next serve re-created the knowledge base).
func TestKBDeleteRemovesSourcesAndRetiresInbox(t *testing.T) {
	data := t.TempDir()
	inbox := filepath.Join(data, "inbox", "docs")
	os.MkdirAll(inbox, 0o755)
	os.WriteFile(filepath.Join(inbox, "a.md"), []byte(largeDoc(4)), 0o644)
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		if err := (&ingest.Watcher{Service: svc, Tenant: "local", Root: filepath.Join(data, "inbox")}).Sync(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	if code, out, errOut := runCLI(t, nil, "kb", "delete", "docs", "--data", data); code != 0 {
		t.Fatalf("kb delete: %d %s %s", code, out, errOut)
	}
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		if objs, _ := s.Blobs.List(context.Background(), "sources/"); len(objs) != 0 {
			t.Errorf("%d source blobs left", len(objs))
		}
		if n, _ := s.Vectors.Count(context.Background(), rag.Filter{Tenant: "local"}); n != 0 {
			t.Errorf("%d vectors left", n)
		}
	})
	if _, err := os.Stat(inbox); !os.IsNotExist(err) {
		t.Fatalf("inbox/docs still there: %v", err)
	}
	if code, r := reconcileJSONOf(t, data); code != 0 || sum(r.Drift) != 0 {
		t.Fatalf("after kb delete: exit %d, drift %v", code, r.Drift)
	}
}

// The corrupt-snapshot message's advice: with vectors.bin (and its log) deleted, one reconcile --repair
// re-embeds every ready document from its chunk rows.
func TestReconcileRebuildsADeletedVectorFile(t *testing.T) {
	data := t.TempDir()
	dir := t.TempDir()
	for i := range 3 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("d%d.md", i)), []byte(largeDoc(10+i)), 0o644)
	}
	if code, out, errOut := runCLI(t, nil, "ingest", "--kb", "manuals", "--data", data, dir); code != 0 {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	os.Remove(filepath.Join(data, "vectors.bin"))
	os.Remove(filepath.Join(data, "vectors.bin.log"))
	code, r := reconcileJSONOf(t, data, "--repair")
	if code != 0 || r.Drift[reconcile.ReadyWithoutVectors] != 3 || r.Repaired[reconcile.ReadyWithoutVectors] != 3 {
		t.Fatalf("repair: exit %d, drift %v, repaired %v", code, r.Drift, r.Repaired)
	}
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		ctx := context.Background()
		rows, _ := s.SQL.CountChunks(ctx, rag.Filter{Tenant: "local"}, rag.LevelChild)
		n, _ := s.Vectors.Count(ctx, rag.Filter{Tenant: "local"})
		if rows == 0 || n != rows {
			t.Fatalf("%d vectors for %d child rows", n, rows)
		}
	})
}

// The serve ticker repairs drift on its own: a document that loses a vector gets it back.
func TestServeTickerRepairs(t *testing.T) {
	m, _ := startServer(t, func(m *Main) {
		m.NoDemo, m.NoWatch, m.Config.Server.ReconcileInterval = true, true, 50*time.Millisecond
	})
	ctx := context.Background()
	rep, err := m.Ingest.Ingest(ctx, "local", ingest.Source{KBName: "manuals", URI: "upload/x", Name: "x.md", Data: []byte(largeDoc(6))})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := m.Stores.Vectors.(store.VectorLister).ListVectors(ctx, rag.Filter{Tenant: "local", DocumentIDs: []string{rep.DocumentID}})
	if err != nil || len(refs) < 2 {
		t.Fatalf("vectors: %d, %v", len(refs), err)
	}
	if err := m.Stores.Vectors.Delete(ctx, "local", []string{refs[0].ID}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second) // a generous bound on a loaded machine; a run takes milliseconds
	for {
		n, _ := m.Stores.Vectors.Count(ctx, rag.Filter{Tenant: "local", DocumentIDs: []string{rep.DocumentID}})
		if n == len(refs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ticker did not restore the vector: %d of %d", n, len(refs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The serve ticker's schedule: hourly by default, DOCMIND_RECONCILE_INTERVAL sets it, 0 turns it off
// (Serve starts the loop only for a positive interval), a negative value is refused at start.
func TestReconcileIntervalSetting(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "DOCMIND_RECONCILE_INTERVAL" {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{{"", time.Hour, true}, {"15m", 15 * time.Minute, true}, {"0", 0, true}, {"-1m", 0, false}} {
		cfg, err := config.Load("", env(c.value))
		if !c.ok {
			if err == nil {
				t.Errorf("DOCMIND_RECONCILE_INTERVAL=%q accepted", c.value)
			}
			continue
		}
		if err != nil || cfg.Server.ReconcileInterval != c.want {
			t.Errorf("DOCMIND_RECONCILE_INTERVAL=%q: %v, %v; want %v", c.value, cfg.Server.ReconcileInterval, err, c.want)
		}
	}
}

// assertKBGoneAfterScan checks that a deleted knowledge base stays gone: the next scan of the drop folder
// (what `docmind serve` runs at start) does not bring it back, no vector or source blob of it is left,
// and inbox/ holds only its retired folder, whose entries it returns.
func assertKBGoneAfterScan(t *testing.T, data, kbID, name string) []os.DirEntry {
	t.Helper()
	withStores(t, data, func(s *Stores, svc *ingest.Service) {
		ctx := context.Background()
		if err := (&ingest.Watcher{Service: svc, Tenant: "local", Root: filepath.Join(data, "inbox")}).Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if kbs, _ := s.SQL.ListKBs(ctx, "local"); len(kbs) != 0 {
			t.Errorf("knowledge bases after the repair and a scan: %v", kbs)
		}
		if n, _ := s.Vectors.Count(ctx, rag.Filter{Tenant: "local", KBIDs: []string{kbID}}); n != 0 {
			t.Errorf("%d vectors left", n)
		}
		if objs, _ := s.Blobs.List(ctx, "sources/"); len(objs) != 0 {
			t.Errorf("%d source blobs left", len(objs))
		}
	})
	entries, _ := os.ReadDir(filepath.Join(data, "inbox"))
	if len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), ".deleted-"+name+"-") {
		t.Fatalf("inbox entries %v, want the retired folder only", entries)
	}
	return entries
}

// repairedInOneRun is how an interrupted delete must end: reconcile reports class (alone, when only),
// exits 1 and repairs nothing; one --repair repairs it and exits 0; the next run finds no drift.
func repairedInOneRun(t *testing.T, data, class string, only bool) {
	t.Helper()
	code, r := reconcileJSONOf(t, data)
	if code != exitFail || r.Drift[class] != 1 || only && sum(r.Drift) != 1 || sum(r.Repaired) != 0 {
		t.Fatalf("after the kill: exit %d, drift %v, repaired %v; want %s 1", code, r.Drift, r.Repaired, class)
	}
	if code, r = reconcileJSONOf(t, data, "--repair"); code != 0 || r.Repaired[class] != 1 {
		t.Fatalf("one repair: exit %d, drift %v, repaired %v", code, r.Drift, r.Repaired)
	}
	if code, r = reconcileJSONOf(t, data); code != 0 || sum(r.Drift) != 0 {
		t.Fatalf("after the repair: exit %d, drift %v; want consistent", code, r.Drift)
	}
}
