package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store/memkv"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// corpus is a retriever over a fixed set of documents that applies the filter the way both indexes do
// (the document-id restriction is the authority; without one, every document of the knowledge bases):
// every document in scope is one piece of evidence, so what a caller gets is exactly its scope.
type corpus struct {
	docs []rag.Document
	got  []retrieve.Query
}

func (c *corpus) Retrieve(_ context.Context, q retrieve.Query) (*retrieve.Result, error) {
	c.got = append(c.got, q)
	res := &retrieve.Result{Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.9}, Keyword: []rag.Hit{}, Vector: []rag.Hit{}, Fused: []rag.Hit{}}
	for _, d := range c.docs {
		if d.Tenant != q.Filter.Tenant || len(q.Filter.KBIDs) > 0 && !slices.Contains(q.Filter.KBIDs, d.KBID) ||
			len(q.Filter.DocumentIDs) > 0 && !slices.Contains(q.Filter.DocumentIDs, d.ID) {
			continue
		}
		res.Evidence = append(res.Evidence, rank.Evidence{ChunkID: "c_" + d.ID, DocumentID: d.ID, KBID: d.KBID, FileName: d.FileName,
			Text: "Full-time employees receive 20 days of paid annual leave per year (" + d.FileName + ").", Score: 0.9})
	}
	return res, nil
}

// tokenAuth maps a bearer token to its principal.
type tokenAuth map[string]rag.Principal

func (a tokenAuth) Authenticate(_ context.Context, authz string) (rag.Principal, error) {
	if p, ok := a[strings.TrimPrefix(authz, "Bearer ")]; ok {
		return p, nil
	}
	return rag.Principal{}, rag.Errorf("test", rag.KindUnauthenticated, "who?")
}

type accessFixture struct {
	db                  *sqldb.DB
	srv                 *httptest.Server
	kb                  rag.KnowledgeBase
	hrDoc, wikiDoc, up  rag.Document
	corpus              *corpus
	ann, bob, boss, eve rag.Principal
	svc                 *Service // what MCP's tools call
	pipe                *answer.Pipeline
}

// newAccessFixture: one knowledge base that ann (in the HR group) and bob both read; a wiki
// connector whose HR page is restricted to group:hr at the source, an open wiki page, and an upload.
func newAccessFixture(t *testing.T) *accessFixture {
	t.Helper()
	ctx := context.Background()
	db := migratedDB(t)
	f := &accessFixture{db: db, corpus: &corpus{}, kb: rag.KnowledgeBase{Tenant: "acme", Name: "handbook"}}
	if err := db.CreateKB(ctx, &f.kb); err != nil {
		t.Fatal(err)
	}
	users := map[string]*rag.User{}
	for _, name := range []string{"ann", "bob", "boss"} {
		u := &rag.User{Tenant: "acme", Email: name + "@acme.example", Role: rag.RoleMember}
		if name == "boss" {
			u.Role = rag.RoleAdmin
		}
		if err := db.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		users[name] = u
	}
	for _, name := range []string{"ann", "bob"} {
		if err := db.SetMember(ctx, "acme", f.kb.ID, users[name].ID, rag.KBEditor); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.CreateConnector(ctx, &rag.Connector{Tenant: "acme", Name: "wiki", KBID: f.kb.ID, Type: "confluence", Config: `{}`}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		doc    *rag.Document
		uri    string
		record string // the connector item's record; "" for an upload
	}{
		{&f.hrDoc, "connector/wiki/101", `{"url":"https://wiki/101","permissions":["group:hr"]}`},
		{&f.wikiDoc, "connector/wiki/102", `{"url":"https://wiki/102"}`},
		{&f.up, "upload/handbook/leave.md", ""},
	} {
		*d.doc = rag.Document{Tenant: "acme", KBID: f.kb.ID, SourceURI: d.uri, FileName: strings.ReplaceAll(d.uri, "/", "_") + ".md", Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, d.doc); err != nil {
			t.Fatal(err)
		}
		if d.record != "" {
			id := strings.TrimPrefix(d.uri, "connector/wiki/")
			if err := db.PutConnectorItem(ctx, "acme", "wiki", rag.ConnectorItem{ID: id, SourceURI: d.uri, Version: "1", Metadata: d.record}); err != nil {
				t.Fatal(err)
			}
		}
		f.corpus.docs = append(f.corpus.docs, *d.doc)
	}
	// another tenant's document the corpus holds too: never anyone's here
	f.corpus.docs = append(f.corpus.docs, rag.Document{ID: "doc_other", Tenant: "other", KBID: f.kb.ID, FileName: "other.md"})
	f.ann = rag.Principal{Tenant: "acme", UserID: users["ann"].ID, Email: "Ann@acme.example", Role: rag.RoleMember, Method: "jwt", Groups: []string{"HR"}}
	f.bob = rag.Principal{Tenant: "acme", UserID: users["bob"].ID, Email: "bob@acme.example", Role: rag.RoleMember, Method: "key"}
	f.boss = rag.Principal{Tenant: "acme", UserID: users["boss"].ID, Email: "boss@acme.example", Role: rag.RoleAdmin, Method: "key"}
	pipe := &answer.Pipeline{Retriever: f.corpus, Calibration: answer.Calibrations{},
		Cache: &answer.SemanticCache{KV: memkv.New(nil, 1000), Embedder: embed.NewOffline(256), Catalog: db}}
	f.pipe = pipe
	f.srv = httptest.NewServer(New(Deps{Library: db, Members: db, Audit: db, Logger: slog.New(slog.DiscardHandler),
		Auth: tokenAuth{"ann": f.ann, "bob": f.bob, "boss": f.boss}, Chat: pipe, Search: f.corpus,
		MCP: func(s *Service) http.Handler { f.svc = s; return http.NotFoundHandler() }}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *accessFixture) do(t *testing.T, who, method, path, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+who)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// docsIn returns the fixture's documents a response names, sorted.
func (f *accessFixture) docsIn(b []byte) []string {
	var out []string
	for _, d := range append([]rag.Document{f.hrDoc, f.wikiDoc, f.up}, rag.Document{ID: "doc_other", FileName: "other.md"}) {
		// by id, or by file name where the shape names no ids (/v1's citations)
		if strings.Contains(string(b), d.ID) || strings.Contains(string(b), d.FileName) {
			out = append(out, d.ID)
		}
	}
	slices.Sort(out)
	return out
}

// Two members of one knowledge base, one of whom (ann, in HR) may read the HR page: every read path
// gives bob everything but that page, and ann everything, as a brute force over the corpus says.
func TestAccessTwoUsersEveryPath(t *testing.T) {
	f := newAccessFixture(t)
	all := []string{f.hrDoc.ID, f.wikiDoc.ID, f.up.ID}
	slices.Sort(all)
	notHR := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return id == f.hrDoc.ID })
	want := map[string][]string{"ann": all, "bob": notHR, "boss": all}
	kb := f.kb.ID
	for _, who := range []string{"ann", "bob", "boss"} {
		for _, c := range []struct{ name, method, path, body string }{
			{"search", "POST", "/api/search", `{"query":"annual leave"}`},
			{"search with a filter", "POST", "/api/search", `{"query":"annual leave","filter":{"key":"x","exists":false}}`},
			{"ask", "POST", "/api/ask", `{"question":"How many days of annual leave?"}`},
			{"chat", "POST", "/api/chat", `{"question":"How many days of annual leave do we get?","kbs":["handbook"]}`},
			{"v1", "POST", "/v1/chat/completions", `{"model":"docmind","messages":[{"role":"user","content":"How many days of annual leave per year?"}]}`},
			{"retrieval", "POST", "/retrieval", `{"knowledge_id":"handbook","query":"annual leave","retrieval_setting":{"top_k":10}}`},
			{"documents", "GET", "/api/kbs/" + kb + "/documents", ""},
		} {
			code, body := f.do(t, who, c.method, c.path, c.body)
			if code != http.StatusOK {
				t.Fatalf("%s as %s: %d %s", c.name, who, code, body)
			}
			if got := f.docsIn(body); !slices.Equal(got, want[who]) {
				t.Errorf("%s as %s names documents %v; want %v (brute force)", c.name, who, got, want[who])
			}
		}
		for _, d := range all {
			for _, path := range []string{"/api/documents/" + d, "/api/documents/" + d + "/chunks"} {
				code, _ := f.do(t, who, "GET", path, "")
				if readable := slices.Contains(want[who], d); readable != (code == http.StatusOK) || !readable && code != http.StatusNotFound {
					t.Errorf("GET %s as %s = %d; readable %v (a document one may not read is a 404, like a missing one)", path, who, code, readable)
				}
			}
		}
		code, body := f.do(t, who, "GET", "/api/kbs/"+kb, "")
		var kbv struct{ Documents int }
		json.Unmarshal(body, &kbv)
		if code != http.StatusOK || kbv.Documents != len(want[who]) {
			t.Errorf("GET /api/kbs/{kb} as %s: %d, %d documents; want %d", who, code, kbv.Documents, len(want[who]))
		}
	}
	// the page shows who may read a connector's document
	_, body := f.do(t, "ann", "GET", "/api/documents/"+f.hrDoc.ID, "")
	var doc struct{ Access *access.Info }
	if json.Unmarshal(body, &doc); doc.Access == nil || !doc.Access.Restricted || !doc.Access.Enforced || doc.Access.Connector != "wiki" ||
		!slices.Equal(doc.Access.Principals, []string{"group:hr"}) {
		t.Errorf("GET the HR page's access = %+v; want wiki, enforced, restricted to group:hr", doc.Access)
	}
	_, body = f.do(t, "ann", "GET", "/api/documents/"+f.wikiDoc.ID, "")
	if json.Unmarshal(body, &doc); doc.Access == nil || doc.Access.Restricted || len(doc.Access.Principals) != 0 {
		t.Errorf("the open page's access = %+v; want not restricted", doc.Access)
	}
	// bob picking the HR page by id is refused like a missing document, and asks nothing
	calls := len(f.corpus.got)
	if code, _ := f.do(t, "bob", "POST", "/api/ask", `{"question":"What are the salaries?","documents":["`+f.hrDoc.ID+`"]}`); code != http.StatusNotFound || len(f.corpus.got) != calls {
		t.Errorf("bob selecting the HR page: %d, %d retrievals; want 404 and none", code, len(f.corpus.got)-calls)
	}
	// an admin reads everything; a direct read of a restricted document is audited
	entries, err := f.db.ListAudit(context.Background(), "acme", 50)
	if err != nil {
		t.Fatal(err)
	}
	audited := 0
	for _, e := range entries {
		if e.Action == "document.read_restricted" && e.Target == f.hrDoc.ID && strings.Contains(e.Actor, f.boss.UserID) {
			audited++
		}
	}
	if audited != 2 {
		t.Errorf("%d audit entries of the admin reading the HR page; want 2 (document, chunks)", audited)
	}
}

// The access list is not metadata: an editor who may read the page (ann) sets keys named like it
// through the metadata API, and bob still may not read it.
func TestAccessListIsNotEditable(t *testing.T) {
	f := newAccessFixture(t)
	code, body := f.do(t, "ann", "PATCH", "/api/documents/"+f.hrDoc.ID+"/metadata", `{"permissions":["anyone"],"_access":"anyone","access":"anyone"}`)
	if code != http.StatusOK {
		t.Fatalf("ann's metadata edit: %d %s", code, body)
	}
	if code, _ := f.do(t, "bob", "GET", "/api/documents/"+f.hrDoc.ID, ""); code != http.StatusNotFound {
		t.Fatalf("bob reads the HR page after a metadata edit: %d; want 404", code)
	}
	if code, _ := f.do(t, "bob", "PATCH", "/api/documents/"+f.hrDoc.ID+"/metadata", `{"team":"all"}`); code != http.StatusNotFound {
		t.Fatalf("bob, an editor who may not read the HR page, edits its metadata: %d; want 404", code)
	}
}

// The semantic cache: ann's answer citing the HR page, cached once her question was asked twice
// (and replayed to her the third time), never reaches bob asking the same question: bob gets a fresh
// answer without the HR page.
func TestAccessCachedAnswerNeverReachesAnotherReader(t *testing.T) {
	f := newAccessFixture(t)
	const q = `{"question":"How many days of annual leave?"}`
	var dones []answer.Done
	for range 3 {
		code, body := f.do(t, "ann", "POST", "/api/ask", q)
		var d answer.Done
		if code != http.StatusOK || json.Unmarshal(body, &d) != nil {
			t.Fatalf("ann's ask: %d %s", code, body)
		}
		dones = append(dones, d)
	}
	cites := func(d answer.Done, id string) bool {
		return slices.ContainsFunc(d.Sources, func(s answer.Source) bool { return s.DocumentID == id })
	}
	if !dones[2].FromCache || !cites(dones[2], f.hrDoc.ID) {
		t.Fatalf("ann's third ask: from_cache %v, cites the HR page %v; want a replay citing it (else this test proves nothing)", dones[2].FromCache, cites(dones[2], f.hrDoc.ID))
	}
	for range 3 {
		code, body := f.do(t, "bob", "POST", "/api/ask", q)
		var d answer.Done
		if code != http.StatusOK || json.Unmarshal(body, &d) != nil {
			t.Fatalf("bob's ask: %d %s", code, body)
		}
		if cites(d, f.hrDoc.ID) || strings.Contains(string(body), f.hrDoc.ID) {
			t.Fatalf("bob's answer (from_cache %v) names the HR page: %s", d.FromCache, body)
		}
		if !cites(d, f.wikiDoc.ID) {
			t.Fatalf("bob's answer cites %v; want the open page", d.Sources)
		}
	}
}

// The operations MCP's tools call (search, ask, list and read documents, read a cited chunk) give bob
// nothing of the HR page and ann all of it.
func TestAccessMCPService(t *testing.T) {
	f := newAccessFixture(t)
	ctx := context.Background()
	chunk := rag.Chunk{ID: "chk_hr1", Tenant: "acme", KBID: f.kb.ID, DocumentID: f.hrDoc.ID, Level: rag.LevelChild, Content: "The heron band pays most.",
		ContentHash: strings.Repeat("ab", 32), ContentType: "general"}
	if err := f.db.ApplyChunks(ctx, "acme", f.hrDoc.ID, []rag.Chunk{chunk}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		p    rag.Principal
		read bool
	}{{f.ann, true}, {f.bob, false}} {
		who := c.p.Email
		res, err := f.svc.Search(ctx, c.p, "annual leave", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		if got := slices.Contains(f.docsIn(b), f.hrDoc.ID); got != c.read {
			t.Errorf("MCP search as %s names the HR page: %v; want %v", who, got, c.read)
		}
		done, err := f.svc.Ask(ctx, c.p, "How many days of annual leave?", nil, nil, json.RawMessage(`{"key":"x","exists":false}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(done)
		if got := slices.Contains(f.docsIn(b), f.hrDoc.ID); got != c.read {
			t.Errorf("MCP ask as %s cites the HR page: %v; want %v", who, got, c.read)
		}
		docs, err := f.svc.Documents(ctx, c.p, "handbook")
		if err != nil {
			t.Fatal(err)
		}
		if got := slices.ContainsFunc(docs, func(d rag.Document) bool { return d.ID == f.hrDoc.ID }); got != c.read {
			t.Errorf("MCP documents as %s list the HR page: %v; want %v", who, got, c.read)
		}
		_, errDoc := f.svc.Document(ctx, c.p, f.hrDoc.ID)
		_, errChunks := f.svc.DocumentChunks(ctx, c.p, f.hrDoc.ID)
		_, errChunk := f.svc.Chunk(ctx, c.p, chunk.ID)
		for name, err := range map[string]error{"document": errDoc, "chunks": errChunks, "chunk": errChunk} {
			if c.read && err != nil || !c.read && !rag.Is(err, rag.KindNotFound) {
				t.Errorf("MCP %s of the HR page as %s: %v; want readable %v (else NotFound)", name, who, err, c.read)
			}
		}
	}
}
