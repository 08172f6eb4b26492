package httpapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// queueIngester is the local server's Ingester (cmd/docmind's uploads): the queue for uploads, the
// service for deletes.
type queueIngester struct{ q *ingest.Queue }

func (u queueIngester) Upload(ctx context.Context, tenant, kbID, name string, body io.Reader, admit func(context.Context) error) (rag.Document, error) {
	return u.q.UploadStream(ctx, tenant, kbID, name, body, admit)
}
func (u queueIngester) Delete(ctx context.Context, tenant, id string) error {
	return u.q.Service.Delete(ctx, tenant, id)
}
func (u queueIngester) DeleteKB(ctx context.Context, tenant, kbID string) error {
	return u.q.Service.DeleteKB(ctx, tenant, kbID)
}
func (u queueIngester) Reprocess(ctx context.Context, tenant, id string) (rag.Document, error) {
	return u.q.Reprocess(ctx, tenant, id)
}

// hookReader runs hook before its first byte is read: the moment the handler has checked the
// knowledge base and starts reading the file.
type hookReader struct {
	r    io.Reader
	hook func()
}

func (h *hookReader) Read(p []byte) (int, error) {
	if h.hook != nil {
		h.hook()
		h.hook = nil
	}
	return h.r.Read(p)
}

// An upload is checked against a knowledge base's id and must be stored under that id. Deleting the
// knowledge base and creating another of the same name while the file is being sent (a new owner, other
// readers) must not put the file into the new one: the upload answers 404 and the new knowledge base
// has neither a document nor a stored source. Before the fix the handler passed the name on, and the
// queue looked it up again and found the new knowledge base.
func TestUploadRacingADeleteAndRecreateOfItsKnowledgeBase(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	blobs := memblob.New()
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: db, Vectors: memvec.New(8), Blobs: blobs}}}
	h := New(Deps{Library: db, Ingester: queueIngester{&ingest.Queue{Service: svc}}, Logger: slog.New(slog.DiscardHandler),
		Tenant: func(*http.Request) (string, error) { return "acme", nil }})

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "salaries.md")
	fw.Write([]byte("# Salaries\n\nConfidential figures.\n"))
	mw.Close()

	for _, byID := range []bool{false, true} { // the path may name the knowledge base either way
		name := map[bool]string{false: "by name", true: "by id"}[byID]
		t.Run(name, func(t *testing.T) {
			old := rag.KnowledgeBase{Tenant: "acme", Name: "handbook " + name}
			if err := db.CreateKB(ctx, &old); err != nil {
				t.Fatal(err)
			}
			key := old.Name
			if byID {
				key = old.ID
			}
			var recreated rag.KnowledgeBase
			hook := func() {
				if err := svc.DeleteKB(ctx, "acme", old.ID); err != nil {
					t.Errorf("delete during the upload: %v", err)
				}
				recreated = rag.KnowledgeBase{Tenant: "acme", Name: old.Name}
				if err := db.CreateKB(ctx, &recreated); err != nil {
					t.Errorf("re-create during the upload: %v", err)
				}
			}
			req := httptest.NewRequest(http.MethodPost, "/api/kbs/"+url.PathEscape(key)+"/documents",
				&hookReader{r: bytes.NewReader(body.Bytes()), hook: hook})
			req.Header.Set("Content-Type", mw.FormDataContentType())
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)

			if recreated.ID == "" || recreated.ID == old.ID {
				t.Fatalf("the hook did not re-create the knowledge base (%q)", recreated.ID)
			}
			if rec.Code != http.StatusNotFound {
				t.Errorf("upload = %d %s, want 404: its knowledge base is gone", rec.Code, rec.Body)
			}
			docs, err := db.ListDocuments(ctx, "acme", recreated.ID, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 0 {
				t.Errorf("the re-created knowledge base got %d documents (%s), want none", len(docs), docs[0].FileName)
			}
			if stored, _ := blobs.List(ctx, ingest.SourcePrefix("acme", recreated.ID, "")); len(stored) != 0 {
				t.Errorf("the re-created knowledge base holds %d stored sources, want none", len(stored))
			}
		})
	}
}

var _ ownedCreator = (*sqldb.DB)(nil) // the production identity store writes a knowledge base with its owner

// creatingLibrary runs hook right after a knowledge base's row is written by CreateKB.
type creatingLibrary struct {
	*sqldb.DB
	hook func(rag.KnowledgeBase)
}

func (c creatingLibrary) CreateKB(ctx context.Context, kb *rag.KnowledgeBase) error {
	if err := c.DB.CreateKB(ctx, kb); err != nil {
		return err
	}
	c.hook(*kb)
	return nil
}

type principalAuth struct{ p rag.Principal }

func (a principalAuth) Authenticate(context.Context, string) (rag.Principal, error) { return a.p, nil }

// A member's new knowledge base is never, not even for a moment, one an operator channel would feed:
// its row and its owner are written together. Before, the row came first and the owner a statement
// later, and an operator ingestion by that name in between found no owner and took it for its own.
func TestCreatedKnowledgeBaseIsOwnedFromItsFirstMoment(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	ben := rag.User{Tenant: "acme", Email: "ben@example.com", Role: rag.RoleMember}
	if err := db.CreateUser(ctx, &ben); err != nil {
		t.Fatal(err)
	}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: db}}}
	var during []error
	lib := creatingLibrary{DB: db, hook: func(kb rag.KnowledgeBase) {
		_, err := svc.OperatorKB(ctx, "acme", kb.Name, "inbox") // the drop folder, at the worst moment
		during = append(during, err)
	}}
	h := New(Deps{Library: lib, Admin: db, Members: db, Logger: slog.New(slog.DiscardHandler),
		Auth: principalAuth{rag.Principal{Tenant: "acme", UserID: ben.ID, Role: rag.RoleMember, Method: "key"}}})

	req := httptest.NewRequest(http.MethodPost, "/api/kbs", strings.NewReader(`{"name":"handbook"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer dm_test")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create = %d %s", rec.Code, rec.Body)
	}
	for _, err := range during {
		if ingest.AsMemberOwned(err) == nil {
			t.Errorf("an operator channel during the creation got %v, want the member-owned refusal", err)
		}
	}
	_, err := svc.OperatorKB(ctx, "acme", "handbook", "inbox")
	if mo := ingest.AsMemberOwned(err); mo == nil || len(mo.Owners) != 1 || mo.Owners[0] != "ben@example.com" {
		t.Errorf("an operator channel after the creation got %v, want refused as ben's", err)
	}
}

// Whoever is an admin when creating a knowledge base through the API, a JWT group admin included (whose
// SQL row says member), makes it the operator's: no creator is recorded and no owner row written, so
// the S3 inbox and the drop folder feed it. A member's records the member as creator and owner.
func TestCreatedKnowledgeBaseRecordsAMemberCreatorOnly(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: db}}}
	for _, tc := range []struct {
		name, kb  string
		principal rag.Principal // UserID filled in below
		creator   bool          // recorded as creator and owner, and refused by operator channels
	}{
		{"a JWT group admin (SQL role member)", "group-admin's", rag.Principal{Tenant: "acme", Role: rag.RoleAdmin, Method: "jwt"}, false},
		{"a tenant admin by API key", "admin's", rag.Principal{Tenant: "acme", Role: rag.RoleAdmin, Method: "key"}, false},
		{"a member", "member's", rag.Principal{Tenant: "acme", Role: rag.RoleMember, Method: "key"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := rag.User{Tenant: "acme", Email: strings.ReplaceAll(tc.kb, "'", "") + "@example.com", Role: rag.RoleMember}
			if tc.principal.Method == "key" { // a key's role is its user's SQL role; a group admin's comes from the token
				u.Role = tc.principal.Role
			}
			if err := db.CreateUser(ctx, &u); err != nil {
				t.Fatal(err)
			}
			p := tc.principal
			p.UserID = u.ID
			h := New(Deps{Library: db, Admin: db, Members: db, Logger: slog.New(slog.DiscardHandler), Auth: principalAuth{p}})
			req := httptest.NewRequest(http.MethodPost, "/api/kbs", strings.NewReader(`{"name":"`+tc.kb+`"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer dm_test")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusCreated {
				t.Fatalf("create = %d %s", rec.Code, rec.Body)
			}
			kb, err := db.GetKBByName(ctx, "acme", tc.kb)
			if err != nil {
				t.Fatal(err)
			}
			by, err := db.KBCreator(ctx, "acme", kb.ID)
			members, merr := db.ListMembers(ctx, "acme", kb.ID)
			if err != nil || merr != nil {
				t.Fatal(err, merr)
			}
			_, operr := svc.OperatorKB(ctx, "acme", tc.kb, "s3")
			if tc.creator {
				if by != u.ID || len(members) != 1 || members[0].Role != "owner" || ingest.AsMemberOwned(operr) == nil {
					t.Errorf("creator %q, members %+v, operator channel %v; want %s as creator and owner, refused", by, members, operr, u.ID)
				}
				return
			}
			if by != "" || len(members) != 0 || operr != nil {
				t.Errorf("creator %q, members %+v, operator channel %v; want no creator, no owner row, accepted", by, members, operr)
			}
		})
	}
}

// The uploader's role is checked again once the file is read: an editor whose role is revoked while the
// file is being sent does not get it in (404, as for a knowledge base the caller cannot read).
func TestUploadByAnEditorRevokedDuringTheUpload(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	ben := rag.User{Tenant: "acme", Email: "ben@example.com", Role: rag.RoleMember}
	if err := db.CreateUser(ctx, &ben); err != nil {
		t.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: "acme", Name: "handbook"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	if err := db.SetMember(ctx, "acme", kb.ID, ben.ID, rag.KBEditor); err != nil {
		t.Fatal(err)
	}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: db, Vectors: memvec.New(8), Blobs: memblob.New()}}}
	h := New(Deps{Library: db, Ingester: queueIngester{&ingest.Queue{Service: svc}}, Admin: db, Members: db, Logger: slog.New(slog.DiscardHandler),
		Auth: principalAuth{rag.Principal{Tenant: "acme", UserID: ben.ID, Role: rag.RoleMember, Method: "key"}}})

	upload := func(hook func()) int {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		fw, _ := mw.CreateFormFile("file", "notes.md")
		fw.Write([]byte("# Notes\n\nText.\n"))
		mw.Close()
		req := httptest.NewRequest(http.MethodPost, "/api/kbs/handbook/documents", &hookReader{r: &body, hook: hook})
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer dm_test")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	if code := upload(nil); code != http.StatusAccepted {
		t.Fatalf("an editor's upload = %d, want 202", code)
	}
	code := upload(func() {
		if err := db.RemoveMember(ctx, "acme", kb.ID, ben.ID); err != nil {
			t.Errorf("revoke: %v", err)
		}
	})
	if code != http.StatusNotFound {
		t.Errorf("upload by an editor revoked during it = %d, want 404", code)
	}
	if docs, err := db.ListDocuments(ctx, "acme", kb.ID, ""); err != nil || len(docs) != 1 {
		t.Errorf("documents = %d, %v; want only the first upload's", len(docs), err)
	}
}

// migratedDB is a fresh SQLite database with every migration applied, closed when the test ends.
func migratedDB(t testing.TB) *sqldb.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return db
}
