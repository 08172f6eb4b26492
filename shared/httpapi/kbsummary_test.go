package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// listOnlyLibrary hides the store's one-query count, so GET /api/kbs counts from the document lists.
type listOnlyLibrary struct{ Library }

// GET /api/kbs gives each knowledge base its document count (deleted documents and other tenants' not
// counted) and its description ("" when none, never absent), the same with the store's one-query
// count and without it.
func TestKBListCountsDocumentsAndShowsDescriptions(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	mk := func(tenant, name, desc string) rag.KnowledgeBase {
		kb := rag.KnowledgeBase{Tenant: tenant, Name: name, Description: desc}
		if err := db.CreateKB(ctx, &kb); err != nil {
			t.Fatal(err)
		}
		return kb
	}
	hb, empty, other := mk("acme", "handbook", "HR policies, 2026"), mk("acme", "empty", ""), mk("beta", "handbook", "")
	for i, st := range []string{rag.StatusReady, rag.StatusReady, rag.StatusFailed, rag.StatusProcessing, rag.StatusDeleted} {
		d := rag.Document{Tenant: "acme", KBID: hb.ID, SourceURI: fmt.Sprintf("inbox/h%d.md", i), Status: st}
		if err := db.CreateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
	}
	d := rag.Document{Tenant: "beta", KBID: other.ID, SourceURI: "inbox/b.md", Status: rag.StatusReady}
	if err := db.CreateDocument(ctx, &d); err != nil {
		t.Fatal(err)
	}
	for name, lib := range map[string]Library{"one query": db, "from the lists": listOnlyLibrary{db}} {
		t.Run(name, func(t *testing.T) {
			h := New(Deps{Library: lib, Logger: slog.New(slog.DiscardHandler), Tenant: func(*http.Request) (string, error) { return "acme", nil }})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/kbs", nil))
			var out struct {
				KnowledgeBases []map[string]any `json:"knowledge_bases"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK || len(out.KnowledgeBases) != 2 {
				t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
			}
			want := map[string][2]any{empty.ID: {float64(0), ""}, hb.ID: {float64(4), "HR policies, 2026"}}
			for _, kb := range out.KnowledgeBases {
				w, ok := want[kb["id"].(string)]
				if !ok || kb["documents"] != w[0] || kb["description"] != w[1] {
					t.Errorf("%s: documents %v, description %#v; want %v, %q", kb["name"], kb["documents"], kb["description"], w[0], w[1])
				}
			}
		})
	}
}

// POST /api/kbs takes an optional description: trimmed, up to 500 characters (not bytes) on one line;
// a longer one or one with a line break or control character is refused with a 400 that says why, and
// nothing is created.
func TestCreateKBValidatesItsDescription(t *testing.T) {
	db := migratedDB(t)
	h := New(Deps{Library: db, Logger: slog.New(slog.DiscardHandler), Tenant: func(*http.Request) (string, error) { return "acme", nil }})
	post := func(name, desc string) *httptest.ResponseRecorder {
		body, _ := json.Marshal(map[string]string{"name": name, "description": desc})
		req := httptest.NewRequest(http.MethodPost, "/api/kbs", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	for _, c := range []struct {
		name, desc, want string // want: the stored description, or the error's words
		code             int
	}{
		{"none", "", "", http.StatusCreated},
		{"trimmed", "  Contracts and policies  ", "Contracts and policies", http.StatusCreated},
		{"500 Chinese characters", strings.Repeat("保", 500), strings.Repeat("保", 500), http.StatusCreated},
		{"too long", strings.Repeat("a", 501), "501 characters long; the limit is 500", http.StatusBadRequest},
		{"two lines", "first line\nsecond line", "on one line", http.StatusBadRequest},
		{"escape", "x\x1b[31m", "control character", http.StatusBadRequest},
	} {
		rec := post(c.name, c.desc)
		if rec.Code != c.code {
			t.Errorf("%s: %d %s, want %d", c.name, rec.Code, rec.Body, c.code)
			continue
		}
		if c.code != http.StatusCreated {
			if !strings.Contains(rec.Body.String(), c.want) || strings.Contains(rec.Body.String(), "sqldb") {
				t.Errorf("%s: %s, want a message with %q and no package name", c.name, rec.Body, c.want)
			}
			if _, err := db.GetKBByName(context.Background(), "acme", c.name); !rag.Is(err, rag.KindNotFound) {
				t.Errorf("%s: created after a refusal (%v)", c.name, err)
			}
			continue
		}
		var kb map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &kb)
		stored, err := db.GetKBByName(context.Background(), "acme", c.name)
		if err != nil || stored.Description != c.want || kb["description"] != c.want || kb["documents"] != float64(0) {
			t.Errorf("%s: stored %q (%v), answered %v; want %q", c.name, stored.Description, err, kb, c.want)
		}
	}
}
