package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The drop folders (the local inbox/ and inbox/ in the bucket) feed one tenant. Another tenant may have
// a knowledge base of the same name; deleting it must not retire the first tenant's folder (on AWS the
// API serves every tenant, and the ingest function feeds DOCMIND_TENANT from the bucket's inbox/).
func TestDeleteKBOfAnotherTenantLeavesTheDropFolder(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const other = "tenant-b"
	b := e.svc.Runner.Stages.Blobs
	e.svc.Inbox, e.svc.InboxTenant = t.TempDir(), tenant
	os.MkdirAll(filepath.Join(e.svc.Inbox, "s3kb"), 0o755)
	os.WriteFile(filepath.Join(e.svc.Inbox, "s3kb", "a b.md"), []byte("x"), 0o644)
	b.Put(ctx, "inbox/s3kb/a b.md", strings.NewReader("x"), "text/markdown")
	for _, tn := range []string{tenant, other} {
		if _, err := e.svc.Ingest(ctx, tn, Source{KBName: "s3kb", URI: "inbox/s3kb/a b.md", Name: "a b.md", Data: manual("x")}); err != nil {
			t.Fatal(err)
		}
	}
	theirs, err := e.db.GetKBByName(ctx, other, "s3kb")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteKB(ctx, other, theirs.ID); err != nil {
		t.Fatal(err)
	}
	if keys := blobKeys(t, b, "inbox/"); len(keys) != 1 || keys[0] != "inbox/s3kb/a b.md" {
		t.Fatalf("after another tenant's delete, inbox objects %v; want inbox/s3kb/a b.md untouched", keys)
	}
	if _, err := os.Stat(filepath.Join(e.svc.Inbox, "s3kb", "a b.md")); err != nil {
		t.Fatalf("after another tenant's delete, the local folder: %v", err)
	}
	ours, _ := e.db.GetKBByName(ctx, tenant, "s3kb")
	if err := e.svc.DeleteKB(ctx, tenant, ours.ID); err != nil {
		t.Fatal(err)
	}
	if keys := blobKeys(t, b, "inbox/"); len(keys) != 1 || !strings.HasPrefix(keys[0], "inbox/"+DeletedInboxPrefix+"s3kb-") {
		t.Fatalf("after the feeding tenant's delete, inbox objects %v; want the retired folder", keys)
	}
	if _, err := os.Stat(filepath.Join(e.svc.Inbox, "s3kb")); !os.IsNotExist(err) {
		t.Fatalf("after the feeding tenant's delete, the local folder is still there: %v", err)
	}
}
