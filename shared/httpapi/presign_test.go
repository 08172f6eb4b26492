package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// fakePresigner records what it was asked and answers a fixed URL.
type fakePresigner struct{ got []PresignRequest }

func (f *fakePresigner) PresignUpload(_ context.Context, req PresignRequest) (PresignedUpload, error) {
	if strings.HasSuffix(req.FileName, ".exe") {
		return PresignedUpload{}, rag.Errorf("fake", rag.KindInvalid, "%s: this file type is not supported", req.FileName)
	}
	f.got = append(f.got, req)
	return PresignedUpload{DocumentID: "doc_1", URL: "https://bucket.s3.example/uploads/x?X-Amz-Signature=1", Method: http.MethodPut,
		Headers: map[string]string{"Content-Type": req.ContentType}, ExpiresAt: time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)}, nil
}

type presignRig struct {
	db                 *sqldb.DB
	kb, other          rag.KnowledgeBase
	editor, reader, ot rag.User
	pre                *fakePresigner
	h                  http.Handler
}

func newPresignRig(t *testing.T, withPresigner bool) *presignRig {
	t.Helper()
	ctx := context.Background()
	r := &presignRig{db: migratedDB(t), pre: &fakePresigner{}}
	r.kb, r.other = rag.KnowledgeBase{Tenant: "acme", Name: "handbook"}, rag.KnowledgeBase{Tenant: "globex", Name: "handbook"}
	for _, kb := range []*rag.KnowledgeBase{&r.kb, &r.other} {
		if err := r.db.CreateKB(ctx, kb); err != nil {
			t.Fatal(err)
		}
	}
	r.editor = rag.User{Tenant: "acme", Email: "ed@example.com", Role: rag.RoleMember}
	r.reader = rag.User{Tenant: "acme", Email: "rea@example.com", Role: rag.RoleMember}
	r.ot = rag.User{Tenant: "globex", Email: "ot@example.com", Role: rag.RoleMember}
	for _, u := range []*rag.User{&r.editor, &r.reader, &r.ot} {
		if err := r.db.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	r.db.SetMember(ctx, "acme", r.kb.ID, r.editor.ID, rag.KBEditor)
	r.db.SetMember(ctx, "acme", r.kb.ID, r.reader.ID, rag.KBReader)
	r.db.SetMember(ctx, "globex", r.other.ID, r.ot.ID, rag.KBOwner)
	d := Deps{Library: r.db, Members: r.db, Logger: slog.New(slog.DiscardHandler), MaxUploadBytes: 100 << 20, Auth: byKey{
		"ed": {Tenant: "acme", UserID: r.editor.ID, Role: rag.RoleMember, Method: "key"},
		"re": {Tenant: "acme", UserID: r.reader.ID, Role: rag.RoleMember, Method: "key"},
		"ot": {Tenant: "globex", UserID: r.ot.ID, Role: rag.RoleMember, Method: "key"},
	}}
	if withPresigner {
		d.Presigner = r.pre
	}
	r.h = New(d)
	return r
}

// byKey authenticates "Bearer <key>" as the principal of that key.
type byKey map[string]rag.Principal

func (b byKey) Authenticate(_ context.Context, authorization string) (rag.Principal, error) {
	if p, ok := b[strings.TrimPrefix(authorization, "Bearer ")]; ok {
		return p, nil
	}
	return rag.Principal{}, rag.E("test", rag.KindUnauthenticated, nil)
}

func (r *presignRig) do(t *testing.T, key, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	return rec
}

// An editor gets 201 with the URL, the method, the headers to send, the expiry and the limit; the
// presigner is asked for the knowledge base the role was checked on, for the caller.
func TestPresignUploadIssuesURL(t *testing.T) {
	r := newPresignRig(t, true)
	rec := r.do(t, "ed", http.MethodPost, "/api/kbs/handbook/uploads", `{"file_name":"manual.pdf","size":52428800,"content_type":"application/pdf"}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST uploads = %d %s, want 201", rec.Code, rec.Body)
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"document_id", "url", "method", "headers", "expires_at", "max_bytes"} {
		if _, ok := got[k]; !ok {
			t.Errorf("response lacks %q: %s", k, rec.Body)
		}
	}
	if got["method"] != "PUT" || got["expires_at"] != "2026-12-01T18:00:00Z" || got["max_bytes"] != float64(100<<20) {
		t.Errorf("response = %s", rec.Body)
	}
	want := PresignRequest{Tenant: "acme", KBID: r.kb.ID, UserID: r.editor.ID, FileName: "manual.pdf", Size: 52428800, ContentType: "application/pdf"}
	if len(r.pre.got) != 1 || r.pre.got[0] != want {
		t.Errorf("presigner asked %+v, want %+v", r.pre.got, want)
	}
}

// Who may not upload is refused as the document endpoints refuse: a reader 403, another tenant's
// knowledge base 404 (by id or name), a server without a presigner 404 saying where to upload instead.
func TestPresignUploadRefusesWhoMayNot(t *testing.T) {
	r := newPresignRig(t, true)
	body := `{"file_name":"a.md","size":10,"content_type":"text/markdown"}`
	for _, tc := range []struct {
		name, key, kb string
		want          int
	}{
		{"a reader", "re", "handbook", http.StatusForbidden},
		{"another tenant's caller, by name", "ot", "handbook", http.StatusCreated}, // its own tenant's "handbook"
		{"another tenant's knowledge base by id", "ed", r.other.ID, http.StatusNotFound},
		{"no such knowledge base", "ed", "nope", http.StatusNotFound},
		{"no credentials", "nobody", "handbook", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(r.pre.got)
			rec := r.do(t, tc.key, http.MethodPost, "/api/kbs/"+tc.kb+"/uploads", body)
			if rec.Code != tc.want {
				t.Fatalf("= %d %s, want %d", rec.Code, rec.Body, tc.want)
			}
			if tc.want != http.StatusCreated && len(r.pre.got) != n {
				t.Errorf("the presigner was asked: %+v", r.pre.got[n:])
			}
			if tc.want == http.StatusCreated && r.pre.got[n].Tenant != "globex" {
				t.Errorf("presigned for tenant %q, want the caller's (globex)", r.pre.got[n].Tenant)
			}
		})
	}
	off := newPresignRig(t, false)
	rec := off.do(t, "ed", http.MethodPost, "/api/kbs/handbook/uploads", body)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "/documents") {
		t.Errorf("without a presigner = %d %s, want 404 naming the direct upload", rec.Code, rec.Body)
	}
}

// A malformed request is refused with what is wrong, in the request's field names, and no URL.
func TestPresignUploadMalformed(t *testing.T) {
	r := newPresignRig(t, true)
	for _, tc := range []struct {
		name, body string
		want       int
		says       string
	}{
		{"no file name", `{"size":10,"content_type":"text/plain"}`, 400, "file_name is required"},
		{"blank file name", `{"file_name":"  ","size":10,"content_type":"text/plain"}`, 400, "file_name is required"},
		{"no size", `{"file_name":"a.txt","content_type":"text/plain"}`, 400, "size is required"},
		{"size 0", `{"file_name":"a.txt","size":0,"content_type":"text/plain"}`, 400, "size is 0"},
		{"negative size", `{"file_name":"a.txt","size":-5,"content_type":"text/plain"}`, 400, "size must be a positive number"},
		{"size not a number", `{"file_name":"a.txt","size":"10","content_type":"text/plain"}`, 400, "size"},
		{"no content type", `{"file_name":"a.txt","size":10}`, 400, "content_type is required"},
		{"content type not a media type", `{"file_name":"a.txt","size":10,"content_type":"text/"}`, 400, "not a media type"},
		{"content type with a line break", `{"file_name":"a.txt","size":10,"content_type":"text/plain\r\nX-Evil: 1"}`, 400, "one line"},
		{"unknown field", `{"file_name":"a.txt","size":10,"content_type":"text/plain","acl":"public-read"}`, 400, "acl"},
		{"not JSON", `file_name=a.txt`, 400, ""},
		{"over the limit", `{"file_name":"a.txt","size":104857601,"content_type":"text/plain"}`, 413, "larger than the upload limit of 104857600 bytes"},
		{"unsupported type", `{"file_name":"tool.exe","size":10,"content_type":"application/octet-stream"}`, 400, "not supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(r.pre.got)
			rec := r.do(t, "ed", http.MethodPost, "/api/kbs/handbook/uploads", tc.body)
			if rec.Code != tc.want || !strings.Contains(rec.Body.String(), tc.says) {
				t.Errorf("= %d %s, want %d saying %q", rec.Code, rec.Body, tc.want, tc.says)
			}
			if len(r.pre.got) != n {
				t.Errorf("a URL was issued: %+v", r.pre.got[n:])
			}
		})
	}
}

// GET /api/kbs tells the page how to upload: presigned where a presigner is set (or the server says
// its page uploads through one), direct otherwise, with the limit.
func TestKBListUploadMode(t *testing.T) {
	for _, tc := range []struct {
		name      string
		presigner bool
		want      string
	}{{"with a presigner", true, "presigned"}, {"without", false, "direct"}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPresignRig(t, tc.presigner)
			rec := r.do(t, "ed", http.MethodGet, "/api/kbs", "")
			var got struct {
				Upload struct {
					Mode     string `json:"mode"`
					MaxBytes int64  `json:"max_bytes"`
				} `json:"upload"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
				t.Fatalf("GET /api/kbs = %d %s", rec.Code, rec.Body)
			}
			if got.Upload.Mode != tc.want || got.Upload.MaxBytes != 100<<20 {
				t.Errorf("upload = %+v, want %s with max_bytes %d", got.Upload, tc.want, 100<<20)
			}
		})
	}
}
