package ingest

import (
	"context"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// presignedRig is the workflow env with a member, a knowledge base the member edits, and the trigger
// able to check the member's role.
type presignedRig struct {
	*wfEnv
	kb   rag.KnowledgeBase
	user rag.User
}

func newPresignedRig(t *testing.T) *presignedRig {
	t.Helper()
	ctx := context.Background()
	w := newWorkflowEnv(t)
	w.trig.Users = w.sql
	r := &presignedRig{wfEnv: w, kb: rag.KnowledgeBase{Tenant: tenant, Name: "handbook"}, user: rag.User{Tenant: tenant, Email: "ed@example.com", Role: rag.RoleMember}}
	if err := w.sql.CreateKB(ctx, &r.kb); err != nil {
		t.Fatal(err)
	}
	if err := w.sql.CreateUser(ctx, &r.user); err != nil {
		t.Fatal(err)
	}
	if err := w.sql.SetMember(ctx, tenant, r.kb.ID, r.user.ID, rag.KBEditor); err != nil {
		t.Fatal(err)
	}
	return r
}

// issue creates the pending document a URL is issued for, as the API does.
func (r *presignedRig) issue(t *testing.T, name string) rag.Document {
	t.Helper()
	d, err := PresignedDocument(tenant, r.kb.ID, r.user.ID, name)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.sql.CreateDocument(context.Background(), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// put is the PUT through the URL: the object and its event.
func (r *presignedRig) put(key string, data []byte) SourceChange {
	ch := r.bucket.put(key, data)
	ch.Size = int64(len(data))
	return ch
}

func (r *presignedRig) getDoc(t *testing.T, id string) rag.Document {
	t.Helper()
	d, err := r.sql.GetDocument(context.Background(), tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A presigned upload's object is ingested into its document, as its uploader's upload: the document
// goes from pending to ready with its chunks; a replay of the event starts nothing new.
func TestPresignedUploadIngested(t *testing.T) {
	r := newPresignedRig(t)
	d := r.issue(t, "manual.md")
	if u, ok := Uploader(d); !ok || u != r.user.ID {
		t.Fatalf("Uploader = %q %v, want %s", u, ok, r.user.ID)
	}
	ch := r.put(PresignedKey(tenant, r.kb.ID, d.ID), manual("Presigned uploads hold 40 litres."))
	res := r.handle(t, ch)
	if res.Action != ActionStarted || res.DocumentID != d.ID {
		t.Fatalf("Handle = %+v, want started for %s", res, d.ID)
	}
	if _, err := r.sfn.last(); err != nil {
		t.Fatalf("execution: %v", err)
	}
	got := r.getDoc(t, d.ID)
	if got.Status != rag.StatusReady || got.ChunkCount == 0 {
		t.Fatalf("document = %s (%s), %d chunks; want ready with chunks", got.Status, got.Error, got.ChunkCount)
	}
	if again := r.handle(t, ch); again.Action != ActionDuplicate {
		t.Errorf("replayed event = %+v, want duplicate", again)
	}
	if n := r.sfn.runs.Load(); n != 1 {
		t.Errorf("%d executions, want 1", n)
	}
}

// Every object that is not a presigned upload this stack may ingest is refused with the reason,
// audited, and (returned as an error) dead-lettered after the queue's retries; a document waiting for
// the object is marked failed with that reason. No execution starts.
func TestPresignedUploadRefusals(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, r *presignedRig) (key string, size int) // size 0: a small manual
		kind   rag.Kind
		want   string // in the error
		failed bool   // the document is marked failed
	}{
		{"no document row", func(t *testing.T, r *presignedRig) (string, int) {
			return PresignedKey(tenant, r.kb.ID, rag.NewID("doc")), 0
		}, rag.KindInvalid, "no document", false},
		{"another tenant's prefix", func(t *testing.T, r *presignedRig) (string, int) {
			return PresignedKey("t2", r.kb.ID, r.issue(t, "a.md").ID), 0
		}, rag.KindPermission, "not this stack's", false},
		{"document deleted", func(t *testing.T, r *presignedRig) (string, int) {
			d := r.issue(t, "a.md")
			d.Status = rag.StatusDeleted
			if err := r.sql.UpdateDocument(ctx, &d); err != nil {
				t.Fatal(err)
			}
			return PresignedKey(tenant, r.kb.ID, d.ID), 0
		}, rag.KindInvalid, "was deleted", false},
		{"document of another knowledge base", func(t *testing.T, r *presignedRig) (string, int) {
			other := rag.KnowledgeBase{Tenant: tenant, Name: "other"}
			if err := r.sql.CreateKB(ctx, &other); err != nil {
				t.Fatal(err)
			}
			return PresignedKey(tenant, other.ID, r.issue(t, "a.md").ID), 0
		}, rag.KindInvalid, "is not in knowledge base", false},
		{"a drop-folder document, not a presigned one", func(t *testing.T, r *presignedRig) (string, int) {
			d := rag.Document{Tenant: tenant, KBID: r.kb.ID, SourceURI: "inbox/handbook/a.md", FileName: "a.md", Status: rag.StatusReady}
			if err := r.sql.CreateDocument(ctx, &d); err != nil {
				t.Fatal(err)
			}
			return PresignedKey(tenant, r.kb.ID, d.ID), 0
		}, rag.KindInvalid, "not created for a presigned upload", false},
		{"larger than the limit", func(t *testing.T, r *presignedRig) (string, int) {
			r.trig.MaxUploadBytes = 1000
			return PresignedKey(tenant, r.kb.ID, r.issue(t, "a.md").ID), 1001
		}, rag.KindInvalid, "larger than the upload limit of 1000 bytes", true},
		{"uploader demoted to reader", func(t *testing.T, r *presignedRig) (string, int) {
			d := r.issue(t, "a.md")
			if err := r.sql.SetMember(ctx, tenant, r.kb.ID, r.user.ID, rag.KBReader); err != nil {
				t.Fatal(err)
			}
			return PresignedKey(tenant, r.kb.ID, d.ID), 0
		}, rag.KindPermission, "no longer has the editor role", true},
		{"uploader deleted", func(t *testing.T, r *presignedRig) (string, int) {
			d := r.issue(t, "a.md")
			if _, err := r.sql.DeleteUser(ctx, tenant, r.user.ID); err != nil {
				t.Fatal(err)
			}
			return PresignedKey(tenant, r.kb.ID, d.ID), 0
		}, rag.KindPermission, "no longer exists", true},
		{"knowledge base deleted", func(t *testing.T, r *presignedRig) (string, int) {
			d := r.issue(t, "a.md")
			if err := r.svc.DeleteKB(ctx, tenant, r.kb.ID); err != nil {
				t.Fatal(err)
			}
			return PresignedKey(tenant, r.kb.ID, d.ID), 0
		}, rag.KindInvalid, "no document", false},
		{"malformed key", func(t *testing.T, r *presignedRig) (string, int) {
			return "uploads/" + tenant + "/" + r.kb.ID + "/x/y", 0
		}, rag.KindInvalid, "the key is not", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPresignedRig(t)
			key, size := tc.setup(t, r)
			data := manual("Refused.")
			if size > 0 {
				data = []byte(strings.Repeat("a", size))
			}
			_, err := r.trig.Handle(ctx, r.put(key, data))
			if !rag.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Handle = %v, want %v containing %q", err, tc.kind, tc.want)
			}
			if n := r.sfn.runs.Load(); n != 0 {
				t.Errorf("%d executions started, want none", n)
			}
			audit, aerr := r.sql.ListAudit(ctx, tenant, 10)
			if aerr != nil || len(audit) == 0 || audit[0].Action != "upload.refused" || !strings.Contains(audit[0].Detail, tc.want) {
				t.Errorf("audit log = %+v %v, want upload.refused naming %q", audit, aerr, tc.want)
			}
			if !tc.failed {
				return
			}
			_, _, docID, _, _ := splitPresignedKey(key)
			if d := r.getDoc(t, docID); d.Status != rag.StatusFailed || !strings.Contains(d.Error, tc.want) {
				t.Errorf("document = %s %q, want failed with %q", d.Status, d.Error, tc.want)
			}
		})
	}
}

// The API's direct uploads (uploads/<tenant>/<document id>, whose executions the API starts) and
// removals under uploads/ are not the trigger's to ingest.
func TestPresignedPrefixIgnores(t *testing.T) {
	r := newPresignedRig(t)
	for _, ch := range []SourceChange{
		r.put("uploads/"+tenant+"/"+rag.NewID("doc"), manual("Direct.")),
		{Removed: true, Bucket: "docs", Key: PresignedKey(tenant, r.kb.ID, r.issue(t, "a.md").ID), Sequencer: "FFFF"},
	} {
		if res := r.handle(t, ch); res.Action != ActionIgnored {
			t.Errorf("Handle(%s, removed %v) = %+v, want ignored", ch.Key, ch.Removed, res)
		}
	}
	if n := r.sfn.runs.Load(); n != 0 {
		t.Errorf("%d executions started, want none", n)
	}
}

// A presigned document is made only for a supported file type and a valid user id; its name is
// cleaned (never a path).
func TestPresignedDocument(t *testing.T) {
	if _, err := PresignedDocument(tenant, "kb_1", "usr_1", "tool.exe"); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("unsupported type: %v, want Invalid", err)
	}
	if _, err := PresignedDocument(tenant, "kb_1", "usr/1", "a.md"); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("bad user id: %v, want Invalid", err)
	}
	d, err := PresignedDocument(tenant, "kb_1", "usr_1", "../../etc/a.md")
	if err != nil || d.FileName != "a.md" || d.Status != rag.StatusPending || !strings.HasPrefix(d.SourceURI, "presigned/usr_1/") {
		t.Errorf("PresignedDocument = %+v %v", d, err)
	}
}
