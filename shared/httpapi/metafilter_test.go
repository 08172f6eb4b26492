package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// POST /api/search with a metadata filter: the retriever gets the documents that pass it as a
// document-id restriction; a filter nothing passes answers empty without searching; a bad filter is a
// 400; GET /api/documents/{id} shows the metadata.
func TestSearchMetadataFilter(t *testing.T) {
	var db *sqldb.DB
	f := newChatFixtureWith(t, false, func(d *Deps) { db = d.Library.(*sqldb.DB) })
	ctx := context.Background()
	second := rag.Document{Tenant: "acme", KBID: f.mine.ID, SourceURI: "connector/wiki/2", Status: rag.StatusReady}
	if err := db.CreateDocument(ctx, &second); err != nil {
		t.Fatal(err)
	}
	for d, m := range map[string]rag.Metadata{
		f.myDoc.ID:    {"source": "web", "year": 2024},
		second.ID:     {"source": "confluence", "year": 2025, "labels": []string{"policy"}},
		f.theirDoc.ID: {"source": "confluence", "year": 2025},
	} {
		kb := f.mine.ID
		tenant := "acme"
		if d == f.theirDoc.ID {
			kb, tenant = f.theirs.ID, "other"
		}
		if err := db.SetDocumentMetadata(ctx, tenant, kb, d, m); err != nil {
			t.Fatal(err)
		}
	}
	search := func(body string) (*http.Response, retrieve.Result) {
		t.Helper()
		resp, err := http.Post(f.srv.URL+"/api/search", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var res retrieve.Result
		json.NewDecoder(resp.Body).Decode(&res)
		return resp, res
	}
	resp, _ := search(`{"query":"leave","filter":{"key":"source","eq":"confluence"}}`)
	got := f.rec.got[len(f.rec.got)-1].Filter
	if resp.StatusCode != http.StatusOK || !slices.Equal(got.DocumentIDs, []string{second.ID}) {
		t.Fatalf("filtered search: status %d, retriever filter %+v; want only %s (never the other tenant's)", resp.StatusCode, got, second.ID)
	}
	resp, _ = search(`{"query":"leave","kbs":["handbook"],"filter":{"or":[{"key":"year","lt":2025},{"key":"labels","eq":"policy"}]}}`)
	got = f.rec.got[len(f.rec.got)-1].Filter
	want := []string{f.myDoc.ID, second.ID}
	slices.Sort(want)
	if resp.StatusCode != http.StatusOK || !slices.Equal(got.DocumentIDs, want) {
		t.Fatalf("or filter: status %d, filter %+v; want %v", resp.StatusCode, got, want)
	}
	calls := len(f.rec.got)
	resp, res := search(`{"query":"leave","filter":{"key":"source","eq":"sharepoint"}}`)
	if resp.StatusCode != http.StatusOK || len(f.rec.got) != calls || len(res.Evidence) != 0 {
		t.Fatalf("filter nothing passes: status %d, retriever called %d times, %d evidence; want an empty answer without a search",
			resp.StatusCode, len(f.rec.got)-calls, len(res.Evidence))
	}
	if resp, _ := search(`{"query":"leave","filter":{"key":"source","like":"c%"}}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad filter: status %d; want 400", resp.StatusCode)
	}

	r, err := http.Get(f.srv.URL + "/api/documents/" + second.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var doc struct {
		ID       string       `json:"id"`
		Metadata rag.Metadata `json:"metadata"`
	}
	if err := json.NewDecoder(r.Body).Decode(&doc); err != nil || doc.ID != second.ID || doc.Metadata["source"] != "confluence" || doc.Metadata["year"] != 2025.0 {
		t.Fatalf("GET /api/documents/{id} = %+v, %v; want its metadata", doc, err)
	}
}

// /api/ask, /api/chat and /v1/chat/completions (an extra body field) take the same filter: the pipeline's retrieval is restricted to the passing
// documents (without the selected-documents path); a filter nothing passes is a 404 before any answer.
func TestAskAndChatMetadataFilter(t *testing.T) {
	var db *sqldb.DB
	f := newChatFixtureWith(t, false, func(d *Deps) { db = d.Library.(*sqldb.DB) })
	ctx := context.Background()
	if err := db.SetDocumentMetadata(ctx, "acme", f.mine.ID, f.myDoc.ID, rag.Metadata{"source": "web"}); err != nil {
		t.Fatal(err)
	}
	post := func(path, body string) *http.Response {
		t.Helper()
		if path == "/v1/chat/completions" { // OpenAI's shape, the filter an extra body field
			var in map[string]any
			json.Unmarshal([]byte(body), &in)
			in["model"], in["messages"] = "docmind", []map[string]any{{"role": "user", "content": in["question"]}}
			delete(in, "question")
			b, _ := json.Marshal(in)
			body = string(b)
		}
		resp, err := http.Post(f.srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body) // a chat's stream ends with its answer: the retrieval has run by then
		resp.Body.Close()
		return resp
	}
	for _, path := range []string{"/api/ask", "/api/chat", "/v1/chat/completions"} {
		calls := len(f.rec.got)
		resp := post(path, `{"question":"How many days of annual leave?","filter":{"key":"source","eq":"web"}}`)
		if resp.StatusCode != http.StatusOK || len(f.rec.got) == calls {
			t.Fatalf("%s with a filter: status %d, retriever calls %d", path, resp.StatusCode, len(f.rec.got)-calls)
		}
		if got := f.rec.got[len(f.rec.got)-1].Filter; !slices.Equal(got.DocumentIDs, []string{f.myDoc.ID}) {
			t.Fatalf("%s: retrieval filter %+v; want restricted to %s", path, got, f.myDoc.ID)
		}
		calls = len(f.rec.got)
		if resp := post(path, `{"question":"How many days of annual leave?","filter":{"key":"source","eq":"gdrive"}}`); resp.StatusCode != http.StatusNotFound || len(f.rec.got) != calls {
			t.Fatalf("%s with a filter nothing passes: status %d, retriever calls %d; want 404 and none", path, resp.StatusCode, len(f.rec.got)-calls)
		}
		if resp := post(path, `{"question":"x","filter":{"key":"source","eq":[1]}}`); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s with a bad filter: status %d; want 400", path, resp.StatusCode)
		}
	}
}
