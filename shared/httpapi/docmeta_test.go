package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// PATCH /api/documents/{id}/metadata: a JSON merge patch; editors only (a reader is refused and
// nothing changes); validated with the metadata rules (400); audited with the keys changed; the
// edit shows in GET /api/documents/{id} and in filters at once.
func TestPatchDocumentMetadata(t *testing.T) {
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
	d := rag.Document{Tenant: "acme", KBID: kb.ID, SourceURI: "upload/x", FileName: "x.md", Status: rag.StatusReady}
	if err := db.CreateDocument(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if err := db.SetDocumentMetadata(ctx, "acme", kb.ID, d.ID, rag.Metadata{"source": "upload", "draft": "yes"}); err != nil {
		t.Fatal(err)
	}
	h := New(Deps{Library: db, Admin: db, Members: db, Audit: db, Logger: slog.New(slog.DiscardHandler),
		Auth: principalAuth{rag.Principal{Tenant: "acme", UserID: ben.ID, Role: rag.RoleMember, Method: "key"}}})
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/merge-patch+json")
		req.Header.Set("Authorization", "Bearer dm_test")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var out map[string]any
		json.Unmarshal(rec.Body.Bytes(), &out)
		return rec.Code, out
	}
	path := "/api/documents/" + d.ID + "/metadata"
	if err := db.SetMember(ctx, "acme", kb.ID, ben.ID, rag.KBReader); err != nil {
		t.Fatal(err)
	}
	if code, _ := do(http.MethodPatch, path, `{"team":"legal"}`); code != http.StatusForbidden && code != http.StatusNotFound {
		t.Fatalf("a reader's PATCH = %d; want refused", code)
	}
	if err := db.SetMember(ctx, "acme", kb.ID, ben.ID, rag.KBEditor); err != nil {
		t.Fatal(err)
	}
	code, out := do(http.MethodPatch, path, `{"team":"legal","year":2025,"draft":null}`)
	m, _ := out["metadata"].(map[string]any)
	if code != http.StatusOK || m["team"] != "legal" || m["year"] != 2025.0 || m["draft"] != nil || m["source"] != "upload" {
		t.Fatalf("an editor's PATCH = %d %v; want team and year set, draft removed, source kept", code, out)
	}
	for _, bad := range []string{`{"bad key":"x"}`, `{"team":{"a":1}}`, `{}`, `[1]`, `{"tags":["a",2]}`} {
		if code, _ := do(http.MethodPatch, path, bad); code != http.StatusBadRequest {
			t.Errorf("PATCH %s = %d; want 400", bad, code)
		}
	}
	code, out = do(http.MethodGet, "/api/documents/"+d.ID, "")
	if m, _ := out["metadata"].(map[string]any); code != http.StatusOK || m["team"] != "legal" || m["draft"] != nil {
		t.Fatalf("GET after the edit = %d %v", code, out)
	}
	f, _ := rag.ParseMetaFilter([]byte(`{"key":"team","eq":"legal"}`))
	if ids, err := db.MatchDocuments(ctx, "acme", []string{kb.ID}, f); err != nil || len(ids) != 1 || ids[0] != d.ID {
		t.Fatalf("MatchDocuments(team legal) = %v, %v", ids, err)
	}
	entries, err := db.ListAudit(ctx, "acme", 10)
	if err != nil {
		t.Fatal(err)
	}
	audited := 0
	for _, e := range entries {
		if e.Action == "document.metadata" {
			audited++
			if e.Target != d.ID || !strings.Contains(e.Detail, "set [team, year]") || !strings.Contains(e.Detail, "removed [draft]") {
				t.Errorf("audit entry %+v; want the document and the keys changed", e)
			}
		}
	}
	if audited != 1 {
		t.Fatalf("%d audit entries for one successful edit (refused ones are not edits)", audited)
	}
}
