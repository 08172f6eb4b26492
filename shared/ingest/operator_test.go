package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// operatorFixture is a tenant with an admin (ana) and a member (ben), and a knowledge base "handbook"
// whose members the test sets.
type operatorFixture struct {
	*env
	ana, ben rag.User
	kb       rag.KnowledgeBase
}

func newOperatorFixture(t *testing.T, members map[string]rag.KBRole) *operatorFixture {
	t.Helper()
	ctx := context.Background()
	f := &operatorFixture{env: newEnv(t),
		ana: rag.User{Tenant: tenant, Email: "ana@example.com", Role: rag.RoleAdmin},
		ben: rag.User{Tenant: tenant, Email: "ben@example.com", Role: rag.RoleMember}}
	for _, u := range []*rag.User{&f.ana, &f.ben} {
		if err := f.db.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	f.kb = rag.KnowledgeBase{Tenant: tenant, Name: "handbook"}
	if err := f.db.CreateKB(ctx, &f.kb); err != nil {
		t.Fatal(err)
	}
	for email, role := range members {
		id := f.ana.ID
		if email == f.ben.Email {
			id = f.ben.ID
		}
		if err := f.db.SetMember(ctx, tenant, f.kb.ID, id, role); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// documents counts the documents of the fixture's knowledge base.
func (f *operatorFixture) documents(t *testing.T) int {
	t.Helper()
	docs, err := f.db.ListDocuments(context.Background(), tenant, f.kb.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	return len(docs)
}

// refusals returns the audit log's ingest.refused entries.
func (f *operatorFixture) refusals(t *testing.T) []rag.AuditEntry {
	t.Helper()
	all, err := f.db.ListAudit(context.Background(), tenant, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []rag.AuditEntry
	for _, e := range all {
		if e.Action == "ingest.refused" {
			out = append(out, e)
		}
	}
	return out
}

// The rule: an operator channel adds to a knowledge base only when no member who is not a tenant
// admin owns it.
func TestOperatorKBRefusesAKnowledgeBaseAMemberOwns(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members map[string]rag.KBRole
		refused bool
	}{
		{"created by an operator (no owner row)", nil, false},
		{"created through the API by an admin", map[string]rag.KBRole{"ana@example.com": rag.KBOwner}, false},
		{"created through the API by a member", map[string]rag.KBRole{"ben@example.com": rag.KBOwner}, true},
		{"a member owner beside an admin owner", map[string]rag.KBRole{"ana@example.com": rag.KBOwner, "ben@example.com": rag.KBOwner}, true},
		{"the operator's, with a member granted editor", map[string]rag.KBRole{"ben@example.com": rag.KBEditor}, false},
		{"the operator's, with a member granted reader", map[string]rag.KBRole{"ben@example.com": rag.KBReader}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newOperatorFixture(t, tc.members)
			kb, err := f.svc.OperatorKB(ctx, tenant, "handbook", "cli")
			if !tc.refused {
				if err != nil || kb.ID != f.kb.ID {
					t.Fatalf("OperatorKB = %s, %v; want %s", kb.ID, err, f.kb.ID)
				}
				if n := len(f.refusals(t)); n != 0 {
					t.Errorf("%d refusals audited, want none", n)
				}
				return
			}
			mo := AsMemberOwned(err)
			if !rag.Is(err, rag.KindPermission) || mo == nil || kb.ID != "" {
				t.Fatalf("OperatorKB = %q, %v; want Permission with a MemberOwnedError", kb.ID, err)
			}
			if len(mo.Owners) != 1 || mo.Owners[0] != "ben@example.com" || mo.KB.ID != f.kb.ID {
				t.Errorf("refusal names %v of %s, want ben@example.com (the member owner, not the admin) of %s", mo.Owners, mo.KB.ID, f.kb.ID)
			}
			for _, want := range []string{`"handbook"`, "ben@example.com (owner)", "another name", "--adopt", "docmind kb revoke handbook"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err, want)
				}
			}
			audited := f.refusals(t)
			if len(audited) != 1 || audited[0].Target != f.kb.ID || audited[0].Actor != "operator:cli" || !strings.Contains(audited[0].Detail, "ben@example.com") {
				t.Errorf("audit = %+v, want one ingest.refused of %s by operator:cli naming ben", audited, f.kb.ID)
			}
			// the service's own name path refuses too, whoever calls it
			rep, err := f.svc.Ingest(ctx, tenant, Source{KBName: "handbook", URI: "file:///secret.md", Name: "secret.md", Data: manual("Salaries are confidential.")})
			if !rag.Is(err, rag.KindPermission) || rep.Status != rag.StatusFailed {
				t.Errorf("Ingest by name = %+v, %v; want failed with Permission", rep, err)
			}
			srcs := batchSources(3)
			for i := range srcs {
				srcs[i].KBName = "handbook"
			}
			for i, r := range f.svc.IngestBatch(ctx, tenant, srcs) {
				if r.Error == "" {
					t.Errorf("batch source %d into a member's knowledge base: %+v, want refused", i, r)
				}
			}
			if n := f.documents(t); n != 0 {
				t.Errorf("the member's knowledge base holds %d documents, want none", n)
			}
		})
	}
}

// A knowledge base a member created through the API stays refused after that member is demoted or
// revoked (security review: a demoted creator is still an editor, and whoever they granted while owner
// stays), until the creator becomes a tenant admin. The refusal lists every member with its role.
func TestOperatorKBRefusesAKnowledgeBaseAMemberCreated(t *testing.T) {
	ctx := context.Background()
	f := newOperatorFixture(t, nil)
	if err := f.db.DeleteKB(ctx, tenant, f.kb.ID); err != nil {
		t.Fatal(err)
	}
	f.kb = rag.KnowledgeBase{Tenant: tenant, Name: "handbook"}
	if err := f.db.CreateKBOwnedBy(ctx, &f.kb, f.ben.ID); err != nil {
		t.Fatal(err)
	}
	cy := rag.User{Tenant: tenant, Email: "cy@example.com", Role: rag.RoleMember}
	if err := f.db.CreateUser(ctx, &cy); err != nil {
		t.Fatal(err)
	}
	if err := f.db.SetMember(ctx, tenant, f.kb.ID, cy.ID, rag.KBReader); err != nil { // ben's grant while owner
		t.Fatal(err)
	}
	refused := func(step string, members ...string) {
		t.Helper()
		kb, err := f.svc.OperatorKB(ctx, tenant, "handbook", "cli")
		mo := AsMemberOwned(err)
		if !rag.Is(err, rag.KindPermission) || mo == nil || kb.ID != "" {
			t.Fatalf("%s: OperatorKB = %q, %v; want refused", step, kb.ID, err)
		}
		if mo.Creator != "ben@example.com" {
			t.Errorf("%s: refusal names creator %q, want ben@example.com", step, mo.Creator)
		}
		for _, want := range append(members, "created by ben@example.com", "another name", "--adopt", "docmind kb revoke handbook") {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: message %q lacks %q", step, err, want)
			}
		}
		if strings.Contains(err.Error(), "--role editor") {
			t.Errorf("%s: message %q still recommends demoting", step, err)
		}
	}
	refused("created by ben", "ben@example.com (owner)", "cy@example.com (reader)")
	if err := f.db.SetMember(ctx, tenant, f.kb.ID, f.ben.ID, rag.KBEditor); err != nil {
		t.Fatal(err)
	}
	refused("ben demoted to editor", "ben@example.com (editor)", "cy@example.com (reader)")
	if err := f.db.RemoveMember(ctx, tenant, f.kb.ID, f.ben.ID); err != nil {
		t.Fatal(err)
	}
	refused("ben revoked", "cy@example.com (reader)")
	if _, err := f.db.SQL().ExecContext(ctx, `UPDATE users SET role = 'admin' WHERE id = ?`, f.ben.ID); err != nil {
		t.Skipf("cannot promote in place: %v", err)
	}
	if kb, err := f.svc.OperatorKB(ctx, tenant, "handbook", "cli"); err != nil || kb.ID != f.kb.ID {
		t.Errorf("creator promoted to tenant admin: %s, %v; want accepted", kb.ID, err)
	}
}

// A knowledge base from before migration 0009 (no creator recorded) is judged by its owners: demoting
// its member owner makes it the operator's, and the channels feed it again.
func TestOperatorKBAcceptsOnceTheMemberOwnerIsDemoted(t *testing.T) {
	ctx := context.Background()
	f := newOperatorFixture(t, map[string]rag.KBRole{"ben@example.com": rag.KBOwner})
	if _, err := f.svc.OperatorKB(ctx, tenant, "handbook", "cli"); !rag.Is(err, rag.KindPermission) {
		t.Fatalf("before: %v, want Permission", err)
	}
	if err := f.db.SetMember(ctx, tenant, f.kb.ID, f.ben.ID, rag.KBEditor); err != nil {
		t.Fatal(err)
	}
	if kb, err := f.svc.OperatorKB(ctx, tenant, "handbook", "cli"); err != nil || kb.ID != f.kb.ID {
		t.Fatalf("after demoting ben: %s, %v; want %s", kb.ID, err, f.kb.ID)
	}
	// and a member who becomes a tenant admin owns it as an admin
	g := newOperatorFixture(t, map[string]rag.KBRole{"ben@example.com": rag.KBOwner})
	if _, err := g.db.SQL().ExecContext(ctx, `UPDATE users SET role = 'admin' WHERE id = ?`, g.ben.ID); err != nil {
		t.Skipf("cannot promote in place: %v", err)
	}
	if _, err := g.svc.OperatorKB(ctx, tenant, "handbook", "cli"); err != nil {
		t.Errorf("owner promoted to admin: %v, want accepted", err)
	}
}

// The drop folder refuses, file by file, a folder whose knowledge base a member owns: logged,
// reported, audited once per sync, nothing ingested; the other folders are ingested as before, and a
// file event is refused the same way.
func TestWatcherRefusesAFolderOfAMemberOwnedKnowledgeBase(t *testing.T) {
	ctx := context.Background()
	f := newOperatorFixture(t, map[string]rag.KBRole{"ben@example.com": rag.KBOwner})
	root := t.TempDir()
	for _, p := range []string{"handbook/a.md", "handbook/sub/b.md", "policies/c.md"} {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, manual("Confidential "+p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var reps []Report
	w := &Watcher{Service: f.svc, Tenant: tenant, Root: root, OnReport: func(r Report) { mu.Lock(); reps = append(reps, r); mu.Unlock() }}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	refused, ingested := 0, 0
	for _, r := range reps {
		switch {
		case r.Error != "" && strings.Contains(r.Error, "ben@example.com"):
			refused++
		case r.Error == "":
			ingested++
		default:
			t.Errorf("unexpected failure: %+v", r)
		}
	}
	if refused != 2 || ingested != 1 {
		t.Errorf("sync: %d refused, %d ingested; want the member's 2 refused and policies/c.md ingested (%+v)", refused, ingested, reps)
	}
	if n := f.documents(t); n != 0 {
		t.Errorf("the member's knowledge base holds %d documents, want none", n)
	}
	if n := len(f.refusals(t)); n != 1 {
		t.Errorf("%d refusals audited for one sync, want 1", n)
	}
	reps = nil
	w.ingest(ctx, filepath.Join(root, "handbook", "a.md"))
	if len(reps) != 1 || !strings.Contains(reps[0].Error, "owned by ben@example.com") {
		t.Errorf("file event: %+v, want one refusal naming ben", reps)
	}
	if n := f.documents(t); n != 0 {
		t.Errorf("after the event the member's knowledge base holds %d documents, want none", n)
	}
}

// The S3 inbox refuses a put into a member's knowledge base with Permission (the message is retried,
// then dead-lettered, and can be redriven once the knowledge base is the operator's): no event
// recorded, no document, no execution.
func TestTriggerRefusesAPutIntoAMemberOwnedKnowledgeBase(t *testing.T) {
	w := newWorkflowEnv(t)
	ctx := context.Background()
	ben := rag.User{Tenant: tenant, Email: "ben@example.com"}
	if err := w.sql.CreateUser(ctx, &ben); err != nil {
		t.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: tenant, Name: "handbook"}
	if err := w.sql.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	if err := w.sql.SetMember(ctx, tenant, kb.ID, ben.ID, rag.KBOwner); err != nil {
		t.Fatal(err)
	}
	put := w.bucket.put("inbox/handbook/plan.md", manual("The merger closes in May."))
	res, err := w.trig.Handle(ctx, put)
	if !rag.Is(err, rag.KindPermission) || AsMemberOwned(err) == nil {
		t.Fatalf("Handle = %+v, %v; want Permission naming the owner", res, err)
	}
	if n := w.sfn.runs.Load(); n != 0 {
		t.Errorf("%d executions started, want none", n)
	}
	if _, ok := w.doc(t, "handbook", "inbox/handbook/plan.md"); ok {
		t.Error("a document was created in the member's knowledge base")
	}
	// a removal is still applied: it can only concern the operator's own earlier documents
	if res, err := w.trig.Handle(ctx, w.bucket.remove("inbox/handbook/plan.md")); err != nil || res.Action != ActionDeleted {
		t.Errorf("removal = %+v, %v; want deleted", res, err)
	}
}

// An object removed from the S3 inbox deletes its document and leaves a document.delete by operator:s3 in
// the audit log, as a deletion through the API or the CLI does.
func TestTriggerRemovalIsAudited(t *testing.T) {
	w := newWorkflowEnv(t)
	ctx := context.Background()
	w.handle(t, w.bucket.put("inbox/manuals/gone.md", manual("Limits: at most 5 users per seat.")))
	d, ok := w.doc(t, "manuals", "inbox/manuals/gone.md")
	if !ok || d.Status != rag.StatusReady {
		t.Fatalf("document %+v, want ready", d)
	}
	if res, err := w.trig.Handle(ctx, w.bucket.remove("inbox/manuals/gone.md")); err != nil || res.Action != ActionDeleted {
		t.Fatalf("removal = %+v, %v; want deleted", res, err)
	}
	entries, err := w.sql.ListAudit(ctx, tenant, 50)
	found := false
	for _, e := range entries {
		found = found || (e.Action == "document.delete" && e.Actor == "operator:s3" && e.Target == d.ID)
	}
	if err != nil || !found {
		t.Fatalf("no document.delete of %s by operator:s3 in the audit log: %+v, %v", d.ID, entries, err)
	}
}
