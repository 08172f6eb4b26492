package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// A deleted drop-folder document stays deleted: its file is moved to inbox/.deleted-<kb>-<time>/ (the
// review of issue #11: the file stayed, and the next scan or reconcile ingested it again).
func TestDeleteRetiresTheDropFolderFile(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.svc.Inbox = t.TempDir()
	b := e.svc.Runner.Stages.Blobs
	disk := filepath.Join(e.svc.Inbox, "big", "sub", "large.md")
	os.MkdirAll(filepath.Dir(disk), 0o755)
	os.WriteFile(disk, manual("The age limit is 65 years."), 0o644)
	os.WriteFile(disk+".bak", []byte("kept"), 0o644)
	b.Put(ctx, "inbox/big/sub/large.md", strings.NewReader("s3 copy"), "text/markdown")
	b.Put(ctx, "inbox/big/sub/large.md.bak", strings.NewReader("kept"), "text/markdown")
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "big", URI: "inbox/big/sub/large.md", Name: "large.md", Data: manual("The age limit is 65 years.")})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(ctx, tenant, rep.DocumentID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(disk); !os.IsNotExist(err) {
		t.Fatalf("the drop-folder file is still in place (%v): the next scan ingests it again", err)
	}
	moved, _ := filepath.Glob(filepath.Join(e.svc.Inbox, DeletedInboxPrefix+"big-*", "sub", "large.md"))
	if len(moved) != 1 {
		t.Fatalf("retired files %v, want inbox/.deleted-big-<time>/sub/large.md", moved)
	}
	if _, err := os.Stat(disk + ".bak"); err != nil {
		t.Errorf("a neighbour with the same prefix was moved: %v", err)
	}
	keys := blobKeys(t, b, "inbox/")
	if len(keys) != 2 || keys[0] != "inbox/.deleted-"+strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(moved[0]))), DeletedInboxPrefix)+"/sub/large.md" || keys[1] != "inbox/big/sub/large.md.bak" {
		t.Fatalf("inbox objects %v, want the file under inbox/.deleted-big-<time>/ and its neighbour in place", keys)
	}
}

// A tombstone means the file was moved already: finishing the delete (a repeated DELETE, reconcile, the
// upload of a new file under the same path) leaves the new file alone.
func TestFinishingADeleteKeepsANewFile(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.svc.Inbox = t.TempDir()
	kd := &killedDelete{VectorIndex: e.vec, kills: 1}
	e.svc.Runner.Stages.Vectors = kd
	disk := filepath.Join(e.svc.Inbox, "manuals", "a.md")
	os.MkdirAll(filepath.Dir(disk), 0o755)
	os.WriteFile(disk, manual("v1"), 0o644)
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "manuals", URI: "inbox/manuals/a.md", Name: "a.md", Data: manual("v1")})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(ctx, tenant, rep.DocumentID); err == nil {
		t.Fatal("the killed delete reported success")
	}
	os.WriteFile(disk, manual("v2, written after the delete"), 0o644)
	if err := e.svc.Delete(ctx, tenant, rep.DocumentID); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(disk); err != nil || string(got) != string(manual("v2, written after the delete")) {
		t.Fatalf("the new file: %q, %v; want it left in place", got, err)
	}
	if _, err := e.db.GetDocument(ctx, tenant, rep.DocumentID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("document after the finished delete: %v", err)
	}
}

// deniedInbox is a blob store whose role may not list or read the drop folder (the AWS ingest function's).
type deniedInbox struct{ store.Blobs }

func (d deniedInbox) List(ctx context.Context, prefix string) ([]store.BlobInfo, error) {
	if strings.HasPrefix(prefix, "inbox/") {
		return nil, rag.Errorf("fake.s3", rag.KindPermission, "AccessDenied: s3:ListBucket on %s", prefix)
	}
	return d.Blobs.List(ctx, prefix)
}

// An S3 removal's delete (DeleteRemoved, which the trigger calls) never looks for the drop-folder file:
// the object is gone, and the ingest function's role cannot list inbox/, so looking would fail every
// removal into the dead-letter queue.
func TestDeleteRemovedDoesNotTouchTheDropFolder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.svc.Runner.Stages.Blobs = deniedInbox{e.svc.Runner.Stages.Blobs}
	var ids []string
	for _, name := range []string{"a.md", "b.md"} {
		rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "manuals", URI: "inbox/manuals/" + name, Name: name, Data: manual("text of " + name)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, rep.DocumentID)
	}
	if err := e.svc.DeleteRemoved(ctx, tenant, ids[0]); err != nil {
		t.Fatalf("the removal's delete: %v", err)
	}
	if _, err := e.db.GetDocument(ctx, tenant, ids[0]); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("document after the removal's delete: %v", err)
	}
	if err := e.svc.Delete(ctx, tenant, ids[1]); !rag.Is(err, rag.KindPermission) {
		t.Fatalf("a user's delete, which moves the file aside, under the same role: %v; want the Permission error", err)
	}
}
