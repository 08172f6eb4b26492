package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// killedDelete removes the document's vectors and then fails, as a process killed mid-delete would
// leave things (the case: a large document, vectors gone, rows and source still there).
type killedDelete struct {
	store.VectorIndex
	kills int
}

func (k *killedDelete) DeleteDocument(ctx context.Context, tenant, kbID, docID string) error {
	if err := k.VectorIndex.DeleteDocument(ctx, tenant, kbID, docID); err != nil {
		return err
	}
	if k.kills > 0 {
		k.kills--
		return rag.E("fake", rag.KindUnavailable, errors.New("killed"))
	}
	return nil
}

func blobKeys(t *testing.T, b store.Blobs, prefix string) []string {
	t.Helper()
	objs, err := b.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

func TestInterruptedDeleteIsATombstoneFinishedByRetry(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	kd := &killedDelete{VectorIndex: e.vec, kills: 1}
	e.svc.Runner.Stages.Vectors = kd
	src := Source{KBName: "manuals", URI: "inbox/manuals/a.md", Name: "a.md", Data: manual("The age limit is 65 years.")}
	rep, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(ctx, tenant, rep.DocumentID); err == nil {
		t.Fatal("the killed delete reported success")
	}
	doc, err := e.db.GetDocument(ctx, tenant, rep.DocumentID)
	if err != nil || doc.Status != rag.StatusDeleted {
		t.Fatalf("after an interrupted delete: %+v, %v; want status deleted (never served again)", doc, err)
	}
	if _, _, err := e.svc.Stored(ctx, tenant, rep.DocumentID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("re-processing a document being deleted: %v, want NotFound (it would come back)", err)
	}
	if err := e.svc.Delete(ctx, tenant, rep.DocumentID); err != nil {
		t.Fatalf("repeated delete: %v", err)
	}
	if _, err := e.db.GetDocument(ctx, tenant, rep.DocumentID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("document after the repeated delete: %v, want NotFound", err)
	}
	if rows, vecs := e.state(t, rep.DocumentID); rows != 0 || vecs != 0 {
		t.Fatalf("after delete: %d rows, %d vectors", rows, vecs)
	}
	if keys := blobKeys(t, e.svc.Runner.Stages.Blobs, "sources/"); len(keys) != 0 {
		t.Fatalf("source blobs left: %v", keys)
	}
}

func TestIngestFinishesAnInterruptedDelete(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.svc.Runner.Stages.Vectors = &killedDelete{VectorIndex: e.vec, kills: 1}
	src := Source{KBName: "manuals", URI: "inbox/manuals/a.md", Name: "a.md", Data: manual("The age limit is 65 years.")}
	rep, _ := e.svc.Ingest(ctx, tenant, src)
	e.svc.Delete(ctx, tenant, rep.DocumentID)
	again, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil || again.Status != rag.StatusReady || again.DocumentID == rep.DocumentID {
		t.Fatalf("ingest over a tombstone: %+v, %v; want a new ready document", again, err)
	}
	if _, err := e.db.GetDocument(ctx, tenant, rep.DocumentID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("the tombstone survived: %v", err)
	}
	e.consistent(t, again.DocumentID)
}

func TestDeleteKBRemovesEverythingAndRetiresTheInbox(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.svc.Runner.Stages.Vectors = e.vec.VectorIndex // the index itself, which can list its records
	root := t.TempDir()
	e.svc.Inbox = root
	dir := filepath.Join(root, "manuals")
	os.MkdirAll(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "a.md"), manual("The age limit is 65 years."), 0o644)
	os.WriteFile(filepath.Join(dir, "sub", "b.md"), manual("The age limit is 70 years."), 0o644)
	w := &Watcher{Service: e.svc, Tenant: tenant, Root: root}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	other, err := e.svc.Ingest(ctx, tenant, Source{KBName: "other", URI: "upload/x", Name: "x.md", Data: manual("Other.")})
	if err != nil {
		t.Fatal(err)
	}
	kb, err := e.db.GetKBByName(ctx, tenant, "manuals")
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := e.db.ListDocuments(ctx, tenant, kb.ID, "")
	if len(docs) != 2 {
		t.Fatalf("%d documents ingested from the inbox, want 2", len(docs))
	}
	// a staging leftover and an orphan vector of the knowledge base, as older crashes leave them
	e.svc.Runner.Stages.staging().Put(ctx, StagingPrefix(tenant, docs[0].ID)+"chunks.json", strings.NewReader("[]"), "")
	e.vec.Upsert(ctx, []rag.VectorRecord{{ID: "orphan1", Tenant: tenant, KBID: kb.ID, DocumentID: "doc_gone", ChunkID: "c", Vector: e.emb.vector("x")}})

	if err := e.svc.DeleteKB(ctx, tenant, kb.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.GetKB(ctx, tenant, kb.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("knowledge base after DeleteKB: %v, want NotFound", err)
	}
	if n, _ := e.vec.Count(ctx, rag.Filter{Tenant: tenant, KBIDs: []string{kb.ID}}); n != 0 {
		t.Fatalf("%d vectors of the deleted knowledge base remain", n)
	}
	if keys := blobKeys(t, e.svc.Runner.Stages.Blobs, SourcePrefix(tenant, kb.ID, "")); len(keys) != 0 {
		t.Fatalf("sources left: %v", keys)
	}
	if keys := blobKeys(t, e.svc.Runner.Stages.Blobs, "staging/"); len(keys) != 0 {
		t.Fatalf("staging left: %v", keys)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("inbox/manuals still exists: %v", err)
	}
	entries, _ := os.ReadDir(root)
	var kept []string
	for _, en := range entries {
		kept = append(kept, en.Name())
	}
	if len(kept) != 1 || !strings.HasPrefix(kept[0], DeletedInboxPrefix+"manuals-") {
		t.Fatalf("inbox holds %v, want one .deleted-manuals-<time> folder", kept)
	}
	if _, err := os.Stat(filepath.Join(root, kept[0], "sub", "b.md")); err != nil {
		t.Fatalf("the user's files were not kept: %v", err)
	}
	// the next scan does not re-create it
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.GetKBByName(ctx, tenant, "manuals"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("the scan re-created the deleted knowledge base: %v", err)
	}
	// another knowledge base is untouched
	if d, err := e.db.GetDocument(ctx, tenant, other.DocumentID); err != nil || d.Status != rag.StatusReady {
		t.Fatalf("other knowledge base's document: %+v, %v", d, err)
	}
	e.consistent(t, other.DocumentID)
	if err := e.svc.DeleteKB(ctx, tenant, kb.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("second DeleteKB: %v, want NotFound", err)
	}
}

func TestDeleteKBRenamesTheBlobDropFolder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	b := e.svc.Runner.Stages.Blobs
	if _, err := e.svc.Ingest(ctx, tenant, Source{KBName: "s3kb", URI: "inbox/s3kb/a b.md", Name: "a b.md", Data: manual("x")}); err != nil {
		t.Fatal(err)
	}
	b.Put(ctx, "inbox/s3kb/a b.md", strings.NewReader("x"), "text/markdown")
	kb, _ := e.db.GetKBByName(ctx, tenant, "s3kb")
	if err := e.svc.DeleteKB(ctx, tenant, kb.ID); err != nil {
		t.Fatal(err)
	}
	if keys := blobKeys(t, b, "inbox/s3kb/"); len(keys) != 0 {
		t.Fatalf("drop-folder objects left in place: %v", keys)
	}
	keys := blobKeys(t, b, "inbox/")
	if len(keys) != 1 || !strings.HasPrefix(keys[0], "inbox/"+DeletedInboxPrefix+"s3kb-") || !strings.HasSuffix(keys[0], "/a b.md") {
		t.Fatalf("inbox objects %v, want inbox/.deleted-s3kb-<time>/a b.md", keys)
	}
}

// TestDeleteKBFinishesAfterItsRowsWent: a kill after the SQL rows went but before the vectors, sources
// and record did; the repeated delete (by id) finds the record and finishes.
func TestDeleteKBFinishesAfterItsRowsWent(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.svc.Runner.Stages.Vectors = e.vec.VectorIndex
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "manuals", URI: "upload/a", Name: "a.md", Data: manual("x")})
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := e.db.GetKBByName(ctx, tenant, "manuals")
	if err := e.db.MarkKBDeleting(ctx, kb); err != nil {
		t.Fatal(err)
	}
	if err := e.db.DB.DeleteKB(ctx, tenant, kb.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteKB(ctx, tenant, kb.ID); err != nil {
		t.Fatalf("finishing the delete: %v", err)
	}
	if _, vecs := e.state(t, rep.DocumentID); vecs != 0 {
		t.Fatalf("%d vectors left", vecs)
	}
	if keys := blobKeys(t, e.svc.Runner.Stages.Blobs, "sources/"); len(keys) != 0 {
		t.Fatalf("sources left: %v", keys)
	}
	if left, _ := e.db.ListKBDeletions(ctx, tenant); len(left) != 0 {
		t.Fatalf("deletion records left: %v", left)
	}
	if err := e.svc.DeleteKB(ctx, tenant, kb.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("a finished delete repeated: %v, want NotFound", err)
	}
}

// TestDocThenKBDeleteInTheSameSecond: the retired names have one-second resolution. A document delete
// moved a.md to .deleted-manuals-<t>/, then the knowledge base's delete in the same second renamed the
// folder onto it: "file exists", after the delete was recorded (503, half-deleted). Both now succeed,
// in the local folder and in the blob drop folder, and no retired file is overwritten.
func TestDocThenKBDeleteInTheSameSecond(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	root := t.TempDir()
	e.svc.Inbox = root
	at := time.Date(2026, 11, 30, 16, 41, 15, 0, time.UTC)
	e.svc.Now = func() time.Time { return at }
	b := e.svc.Runner.Stages.Blobs
	dir := filepath.Join(root, "kk")
	os.MkdirAll(dir, 0o755)
	for _, n := range []string{"a.md", "b.md"} {
		os.WriteFile(filepath.Join(dir, n), manual("local "+n), 0o644)
		b.Put(ctx, "inbox/kk/"+n, strings.NewReader("blob "+n), "text/markdown")
	}
	if err := (&Watcher{Service: e.svc, Tenant: tenant, Root: root}).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	kb, err := e.db.GetKBByName(ctx, tenant, "kk")
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.db.GetDocumentBySource(ctx, tenant, kb.ID, "inbox/kk/a.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(ctx, tenant, a.ID); err != nil {
		t.Fatal(err)
	}
	// a.md comes back under the same path and goes again, still in the same second: not onto the first
	os.WriteFile(filepath.Join(dir, "a.md"), manual("local a.md, second copy"), 0o644)
	if err := e.svc.retireInboxFile(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteKB(ctx, tenant, kb.ID); err != nil {
		t.Fatalf("kb delete in the same second: %v", err)
	}
	base := DeletedInboxName("kk", at)
	want := map[string]string{ // retired file -> content
		filepath.Join(base, "a.md"):      "local a.md",
		filepath.Join(base+"-2", "a.md"): "local a.md, second copy",
		filepath.Join(base+"-3", "b.md"): "local b.md", // -2 holds the second a.md
	}
	for rel, text := range want {
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil || !strings.Contains(string(got), text) {
			t.Errorf("%s: %q, %v; want %q", rel, got, err, text)
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("inbox/kk still there: %v", err)
	}
	keys := blobKeys(t, b, "inbox/")
	wantKeys := []string{"inbox/" + base + "-3/b.md", "inbox/" + base + "/a.md"}
	if strings.Join(keys, " ") != strings.Join(wantKeys, " ") {
		t.Fatalf("blob drop folder %v, want %v", keys, wantKeys)
	}
	if _, err := e.db.GetKB(ctx, tenant, kb.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("knowledge base after delete: %v", err)
	}
}

// TestDeleteKBConflictChangesNothing: an ingestion elsewhere holds one document's lease. The delete
// answers Conflict before it records anything: the knowledge base, its folder and its documents are as
// they were (before, the 409 came after the delete was recorded, the folder renamed and every document
// tombstoned). Once the lease is free the same delete succeeds.
func TestDeleteKBConflictChangesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.svc.Leases = e.db.DB
	root := t.TempDir()
	e.svc.Inbox = root
	dir := filepath.Join(root, "kk")
	os.MkdirAll(dir, 0o755)
	for _, n := range []string{"a.md", "b.md", "c.md"} {
		os.WriteFile(filepath.Join(dir, n), manual("text of "+n), 0o644)
	}
	if err := (&Watcher{Service: e.svc, Tenant: tenant, Root: root}).Sync(ctx); err != nil {
		t.Fatal(err)
	}
	kb, err := e.db.GetKBByName(ctx, tenant, "kk")
	if err != nil {
		t.Fatal(err)
	}
	busy := LeaseName(tenant, kb.ID, "inbox/kk/b.md")
	if ok, err := e.db.AcquireLease(ctx, busy, "exec-elsewhere", time.Hour); !ok || err != nil {
		t.Fatalf("lease: %v %v", ok, err)
	}
	if err := e.svc.DeleteKB(ctx, tenant, kb.ID); !rag.Is(err, rag.KindConflict) {
		t.Fatalf("DeleteKB with a lease held: %v, want Conflict", err)
	}
	if pending, _ := e.db.ListKBDeletions(ctx, tenant); len(pending) != 0 {
		t.Fatalf("the refused delete was recorded: %+v", pending)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.md")); err != nil {
		t.Fatalf("the refused delete moved the drop folder: %v", err)
	}
	docs, _ := e.db.ListDocuments(ctx, tenant, kb.ID, "")
	for _, d := range docs {
		if d.Status != rag.StatusReady {
			t.Fatalf("the refused delete changed %s: %s", d.SourceURI, d.Status)
		}
	}
	if len(docs) != 3 {
		t.Fatalf("%d documents, want 3", len(docs))
	}
	// the locks taken before the conflict were released: the other sources are free
	if ok, _ := e.db.AcquireLease(ctx, LeaseName(tenant, kb.ID, "inbox/kk/a.md"), "probe", time.Minute); !ok {
		t.Fatal("the refused delete left a.md's lease held")
	}
	e.db.ReleaseLease(ctx, LeaseName(tenant, kb.ID, "inbox/kk/a.md"), "probe")
	e.db.ReleaseLease(ctx, busy, "exec-elsewhere")
	if err := e.svc.DeleteKB(ctx, tenant, kb.ID); err != nil {
		t.Fatalf("DeleteKB once the lease is free: %v", err)
	}
	if _, err := e.db.GetKB(ctx, tenant, kb.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("knowledge base after the delete: %v", err)
	}
}
