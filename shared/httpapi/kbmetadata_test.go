package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// GET /api/kbs/{kb}/metadata: the keys of the knowledge base's documents with their types, counts and
// most common values; readers only (anyone else 404, as for a missing knowledge base), another
// knowledge base's and another tenant's values never, HTML in a value escaped, top capped.
func TestKBMetadata(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	ben := rag.User{Tenant: "acme", Email: "ben@example.com", Role: rag.RoleMember}
	if err := db.CreateUser(ctx, &ben); err != nil {
		t.Fatal(err)
	}
	kb, private := rag.KnowledgeBase{Tenant: "acme", Name: "handbook"}, rag.KnowledgeBase{Tenant: "acme", Name: "board"}
	foreign := rag.KnowledgeBase{Tenant: "other", Name: "handbook"}
	for _, k := range []*rag.KnowledgeBase{&kb, &private, &foreign} {
		if err := db.CreateKB(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	put := func(k rag.KnowledgeBase, name string, m rag.Metadata) {
		d := rag.Document{Tenant: k.Tenant, KBID: k.ID, SourceURI: "upload/" + name, FileName: name, Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
		if err := db.SetDocumentMetadata(ctx, k.Tenant, k.ID, d.ID, m); err != nil {
			t.Fatal(err)
		}
	}
	put(kb, "a.md", rag.Metadata{"department": "HR", "year": 2025, "tags": []string{"leave", "<img src=x onerror=alert(1)>"}})
	put(kb, "b.md", rag.Metadata{"department": "HR", "year": 2024})
	put(kb, "c.md", rag.Metadata{"department": "Finance", "effective": "2025-03-01"})
	put(private, "p.md", rag.Metadata{"department": "Board", "secret": "merger"})
	put(foreign, "f.md", rag.Metadata{"department": "Marketing"})
	if err := db.SetMember(ctx, "acme", kb.ID, ben.ID, rag.KBReader); err != nil {
		t.Fatal(err)
	}
	h := New(Deps{Library: db, Admin: db, Members: db, Logger: slog.New(slog.DiscardHandler),
		Auth: principalAuth{rag.Principal{Tenant: "acme", UserID: ben.ID, Role: rag.RoleMember, Method: "key"}}})
	get := func(path string) (int, string) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer dm_test")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	code, body := get("/api/kbs/handbook/metadata")
	var out struct {
		KB   string          `json:"kb"`
		Keys []rag.MetaFacet `json:"keys"`
	}
	if err := json.Unmarshal([]byte(body), &out); err != nil || code != http.StatusOK || out.KB != kb.ID {
		t.Fatalf("GET metadata = %d %s", code, body)
	}
	got := map[string]string{}
	for _, f := range out.Keys {
		var vs []string
		for _, v := range f.Values {
			vs = append(vs, valueText(v.Value)+"×"+strings.Repeat("|", v.Documents))
		}
		got[f.Key] = f.Type + " " + strings.Join(vs, ",")
	}
	want := map[string]string{
		"department": "string HR×||,Finance×|",
		"year":       "number 2024×|,2025×|",
		"tags":       "list <img src=x onerror=alert(1)>×|,leave×|",
		"effective":  "date ",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("key %s = %q; want %q", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("keys %v; want only %v (never the private knowledge base's or another tenant's)", got, want)
	}
	if strings.Contains(body, "<img") || strings.Contains(body, "merger") || strings.Contains(body, "Marketing") {
		t.Errorf("body %s: HTML unescaped or another scope's values", body)
	}
	if code, _ := get("/api/kbs/board/metadata"); code != http.StatusNotFound {
		t.Errorf("a knowledge base not shared with the caller: %d; want 404", code)
	}
	if code, body := get("/api/kbs/handbook/metadata?top=1"); code != http.StatusOK || strings.Contains(body, "Finance") {
		t.Errorf("top=1: %d %s; want only the most common value of each key", code, body)
	}
	for _, bad := range []string{"0", "51", "x"} {
		if code, _ := get("/api/kbs/handbook/metadata?top=" + bad); code != http.StatusBadRequest {
			t.Errorf("top=%s: %d; want 400", bad, code)
		}
	}
}

func valueText(v any) string { return fmt.Sprint(v) }

// A question naming a value the documents hold is answered from them (done.inferred_filter), through
// the HTTP edge as through the pipeline; a user's filter on the same key leaves it alone.
func TestAskInfersAFilter(t *testing.T) {
	var db *sqldb.DB
	f := newChatFixtureWith(t, false, func(d *Deps) {
		db = d.Library.(*sqldb.DB)
		d.Chat.(*answer.Pipeline).Infer = db
	})
	ctx := context.Background()
	finance := rag.Document{Tenant: "acme", KBID: f.mine.ID, SourceURI: "inbox/handbook/finance.md", Status: rag.StatusReady}
	if err := db.CreateDocument(ctx, &finance); err != nil {
		t.Fatal(err)
	}
	for id, m := range map[string]rag.Metadata{f.myDoc.ID: {"department": "HR"}, finance.ID: {"department": "Finance"}} {
		if err := db.SetDocumentMetadata(ctx, "acme", f.mine.ID, id, m); err != nil {
			t.Fatal(err)
		}
	}
	ask := func(body string) answer.Done {
		t.Helper()
		resp, err := http.Post(f.srv.URL+"/api/ask", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var done answer.Done
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &done) != nil {
			t.Fatalf("POST /api/ask %s = %d %s", body, resp.StatusCode, b)
		}
		return done
	}
	done := ask(`{"question":"How many days of annual leave does HR give?"}`)
	if got := f.rec.got[len(f.rec.got)-1].Filter; done.InferredFilter == nil || !slices.Equal(got.DocumentIDs, []string{f.myDoc.ID}) {
		t.Fatalf("inferred %+v, retrieval %+v; want restricted to the HR document", done.InferredFilter, got)
	}
	done = ask(`{"question":"How many days of annual leave does HR give?","filter":{"key":"department","eq":"Finance"}}`)
	if got := f.rec.got[len(f.rec.got)-1].Filter; done.InferredFilter != nil || !slices.Equal(got.DocumentIDs, []string{finance.ID}) {
		t.Fatalf("with the user's department filter: inferred %+v, retrieval %+v; want the user's filter alone", done.InferredFilter, got)
	}
}
