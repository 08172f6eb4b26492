package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector/manage"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/fsblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// connectorRig is the HTTP API over a real connector manager: SQLite, the ingestion service, the web
// connector through the hardened client with 127.0.0.1 allow-listed, and a small site on 127.0.0.1
// whose pages can be held (to watch a sync running) or removed.
type connectorRig struct {
	t       *testing.T
	db      *sqldb.DB
	h       http.Handler
	mgr     *manage.Manager
	kb, kb2 rag.KnowledgeBase
	ben     rag.User
	site    *httptest.Server
	who     *rag.Principal // the caller of the next request
	hold    chan struct{}  // while non-nil, page requests wait for it to close
	mu      sync.Mutex
}

func newConnectorRig(t *testing.T) *connectorRig {
	ctx := context.Background()
	r := &connectorRig{t: t, db: migratedDB(t)}
	r.ben = rag.User{Tenant: "acme", Email: "ben@example.com", Role: rag.RoleMember}
	if err := r.db.CreateUser(ctx, &r.ben); err != nil {
		t.Fatal(err)
	}
	r.kb = rag.KnowledgeBase{Tenant: "acme", Name: "handbook"}
	r.kb2 = rag.KnowledgeBase{Tenant: "acme", Name: "other"}
	for _, kb := range []*rag.KnowledgeBase{&r.kb, &r.kb2} {
		if err := r.db.CreateKB(ctx, kb); err != nil {
			t.Fatal(err)
		}
	}
	pages := map[string]string{
		"/kb/":      `<html><head><title>Home</title></head><body><h1>Home</h1><p>The kestrel rota starts on Mondays.</p><a href="rules">rules</a></body></html>`,
		"/kb/rules": `<html><head><title>Rules</title></head><body><h1>Rules</h1><p>Badgers must sign the ledger twice.</p></body></html>`,
	}
	r.site = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		hold := r.hold
		r.mu.Unlock()
		if hold != nil && req.URL.Path != "/robots.txt" {
			<-hold
		}
		body, ok := pages[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(body))
	}))
	t.Cleanup(r.site.Close)
	blobs, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st := &ingest.Stages{Records: r.db, Vectors: memvec.New(64), Blobs: blobs, Embedder: embed.NewOffline(64), Keyword: bm25.New(bm25.DefaultParams()),
		Chunking: chunk.Options{ChildChars: 300, Overlap: 30, ParentChars: 1200}}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}, Leases: r.db}
	cfg := config.Default()
	cfg.Connectors.AllowHosts, cfg.Server.MaxBodyBytes = "127.0.0.1", 1<<20
	r.mgr = &manage.Manager{Store: r.db, Indexer: svc, Config: cfg, CredentialsDir: t.TempDir()}
	t.Cleanup(r.mgr.Close)
	r.who = &rag.Principal{Tenant: "acme", UserID: r.ben.ID, Role: rag.RoleMember, Method: "key"}
	r.h = New(Deps{Library: r.db, Admin: r.db, Members: r.db, Audit: r.db, Connectors: r.mgr, Logger: slog.New(slog.DiscardHandler),
		Auth: authFunc(func() rag.Principal { return *r.who })})
	return r
}

// authFunc authenticates every request as the principal it returns at that moment.
type authFunc func() rag.Principal

func (f authFunc) Authenticate(context.Context, string) (rag.Principal, error) { return f(), nil }

func (r *connectorRig) role(kb rag.KnowledgeBase, role rag.KBRole) {
	r.t.Helper()
	if err := r.db.SetMember(context.Background(), "acme", kb.ID, r.ben.ID, role); err != nil {
		r.t.Fatal(err)
	}
}

func (r *connectorRig) do(method, path, body string) (int, map[string]any) {
	r.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer dm_test")
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	var out map[string]any
	json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

func (r *connectorRig) webBody(name string) string {
	b, _ := json.Marshal(map[string]any{"name": name, "type": "web", "settings": map[string]any{"url": r.site.URL + "/kb/"}})
	return string(b)
}

func errMessage(out map[string]any) string {
	e, _ := out["error"].(map[string]any)
	s, _ := e["message"].(string)
	return s
}

// An editor adds a web connector to a knowledge base, starts a sync (202, status running at once,
// a second start 409), watches it end ok, dry-runs the next one (the item actions, nothing changed)
// and removes it with its documents. Each change is audited.
func TestConnectorLifecycleOverHTTP(t *testing.T) {
	r := newConnectorRig(t)
	base := "/api/kbs/" + r.kb.ID + "/connectors"
	r.role(r.kb, rag.KBEditor)

	code, out := r.do(http.MethodPost, base, r.webBody("site"))
	if code != http.StatusCreated || out["status"] != rag.SyncIdle || out["credentials"] != "none" {
		t.Fatalf("add = %d %v; want 201, idle, no credentials", code, out)
	}
	if s, _ := out["settings"].(map[string]any); s["url"] != r.site.URL+"/kb/" {
		t.Fatalf("settings shown = %v", out["settings"])
	}
	if code, out := r.do(http.MethodPost, base, r.webBody("site")); code != http.StatusConflict || !strings.Contains(errMessage(out), "exists already") {
		t.Fatalf("second add = %d %v; want 409", code, out)
	}

	// hold the site so that the sync is seen running
	hold := make(chan struct{})
	r.mu.Lock()
	r.hold = hold
	r.mu.Unlock()
	code, out = r.do(http.MethodPost, base+"/site/sync", "")
	if code != http.StatusAccepted || out["status"] != rag.SyncRunning {
		t.Fatalf("sync = %d %v; want 202 and status running", code, out)
	}
	if code, out := r.do(http.MethodPost, base+"/site/sync", `{"dry_run":false}`); code != http.StatusConflict {
		t.Fatalf("a second sync while one runs = %d %v; want 409", code, out)
	}
	if _, out := r.do(http.MethodGet, base, ""); len(listed(out)) != 1 || listed(out)[0]["status"] != rag.SyncRunning {
		t.Fatalf("list while syncing = %v; want the connector running", out)
	}
	r.mu.Lock()
	r.hold = nil
	r.mu.Unlock()
	close(hold)
	var c map[string]any
	waitFor(t, "the sync to end", func() bool {
		_, c = r.do(http.MethodGet, base+"/site", "")
		return c["status"] != rag.SyncRunning
	})
	prog, _ := c["progress"].(map[string]any)
	if c["status"] != rag.SyncOK || prog["added"] != 2.0 || c["finished_at"] == nil {
		t.Fatalf("after the sync: %v; want ok with 2 added", c)
	}
	docs, err := r.db.ListDocuments(context.Background(), "acme", r.kb.ID, "")
	if err != nil || len(docs) != 2 {
		t.Fatalf("documents after the sync: %d, %v; want the two pages", len(docs), err)
	}

	code, out = r.do(http.MethodPost, base+"/site/sync", `{"dry_run":true}`)
	items, _ := out["items"].([]any)
	if code != http.StatusOK || out["dry_run"] != true || len(items) != 2 || out["unchanged"] != 2.0 {
		t.Fatalf("dry run = %d %v; want 200 with two unchanged items", code, out)
	}
	if code, out := r.do(http.MethodPost, base+"/site/check", ""); code != http.StatusOK || out["ok"] != true {
		t.Fatalf("check = %d %v", code, out)
	}

	code, out = r.do(http.MethodDelete, base+"/site", "")
	if code != http.StatusOK || out["deleted"] != 2.0 {
		t.Fatalf("remove = %d %v; want its 2 documents deleted", code, out)
	}
	if code, _ := r.do(http.MethodGet, base+"/site", ""); code != http.StatusNotFound {
		t.Fatalf("GET after remove = %d; want 404", code)
	}
	docs, _ = r.db.ListDocuments(context.Background(), "acme", r.kb.ID, "")
	if n := len(withoutDeleted(docs)); n != 0 {
		t.Fatalf("%d documents left after remove", n)
	}

	entries, err := r.db.ListAudit(context.Background(), "acme", 20)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Action, "connector.") {
			got[e.Action] = e.Target + " " + e.Detail
		}
	}
	want := map[string]string{"connector.add": "site web into " + r.kb.ID, "connector.sync": "site started", "connector.remove": "site 2 documents deleted"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("audit %s = %q; want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("audit entries %v; want exactly %v (refused requests are not changes)", got, want)
	}
}

func listed(out map[string]any) []map[string]any {
	var l []map[string]any
	cs, _ := out["connectors"].([]any)
	for _, c := range cs {
		m, _ := c.(map[string]any)
		l = append(l, m)
	}
	return l
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a hang detector, not a timing assertion
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Roles and scope: a reader may neither see nor change a knowledge base's connectors (403); a caller
// without access, a connector of another knowledge base and one of another tenant are all 404.
func TestConnectorAccess(t *testing.T) {
	r := newConnectorRig(t)
	base := "/api/kbs/" + r.kb.ID + "/connectors"
	ctx := context.Background()
	c := rag.Connector{Tenant: "acme", Name: "site", KBID: r.kb.ID, Type: "web", Config: `{"url":"` + r.site.URL + `/kb/"}`}
	if err := r.db.CreateConnector(ctx, &c); err != nil {
		t.Fatal(err)
	}
	other := rag.KnowledgeBase{Tenant: "globex", Name: "handbook"}
	if err := r.db.CreateKB(ctx, &other); err != nil {
		t.Fatal(err)
	}
	if err := r.db.CreateConnector(ctx, &rag.Connector{Tenant: "globex", Name: "theirs", KBID: other.ID, Type: "web", Config: `{"url":"https://example.com/"}`}); err != nil {
		t.Fatal(err)
	}

	r.role(r.kb, rag.KBReader)
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodGet, base, ""},
		{http.MethodPost, base, r.webBody("mine")},
		{http.MethodPost, base + "/site/sync", ""},
		{http.MethodPost, base + "/site/sync", `{"dry_run":true}`},
		{http.MethodPost, base + "/site/check", ""},
		{http.MethodDelete, base + "/site", ""},
		{http.MethodPatch, base + "/site", `{"interval":"30m"}`},
	} {
		if code, out := r.do(tc.method, tc.path, tc.body); code != http.StatusForbidden {
			t.Errorf("reader %s %s = %d %v; want 403", tc.method, tc.path, code, out)
		}
	}
	if got, err := r.db.GetConnector(ctx, "acme", "site"); err != nil || got.Status != rag.SyncIdle {
		t.Fatalf("after the reader's requests: %+v, %v; want untouched", got, err)
	}
	if _, err := r.db.GetConnector(ctx, "acme", "mine"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("the reader's add was recorded: %v", err)
	}

	// an editor of kb2 only: kb is not theirs (404), and kb's connector is not kb2's (404)
	if err := r.db.RemoveMember(ctx, "acme", r.kb.ID, r.ben.ID); err != nil {
		t.Fatal(err)
	}
	r.role(r.kb2, rag.KBEditor)
	if code, _ := r.do(http.MethodGet, base, ""); code != http.StatusNotFound {
		t.Errorf("GET connectors of a knowledge base the caller cannot read = %d; want 404", code)
	}
	base2 := "/api/kbs/" + r.kb2.ID + "/connectors"
	for _, p := range []string{base2 + "/site", base2 + "/theirs"} {
		if code, _ := r.do(http.MethodGet, p, ""); code != http.StatusNotFound {
			t.Errorf("GET %s = %d; want 404", p, code)
		}
		if code, _ := r.do(http.MethodDelete, p, ""); code != http.StatusNotFound {
			t.Errorf("DELETE %s = %d; want 404", p, code)
		}
	}
	if _, out := r.do(http.MethodGet, base2, ""); len(listed(out)) != 0 {
		t.Errorf("kb2's list shows %v; want none", out)
	}
	if _, err := r.db.GetConnector(ctx, "acme", "site"); err != nil {
		t.Fatalf("kb's connector after kb2's editor tried to remove it: %v", err)
	}
	if _, err := r.db.GetConnector(ctx, "globex", "theirs"); err != nil {
		t.Fatalf("the other tenant's connector: %v", err)
	}
	// the other tenant's knowledge base by its id
	if code, _ := r.do(http.MethodGet, "/api/kbs/"+other.ID+"/connectors", ""); code != http.StatusNotFound {
		t.Errorf("another tenant's knowledge base = %d; want 404", code)
	}
}

// Bad settings are refused with the reason, as `docmind connector add` refuses them; a member names
// credentials only as a file of its knowledge base's folder, never a secret or a server path.
func TestConnectorBadSettings(t *testing.T) {
	r := newConnectorRig(t)
	r.role(r.kb, rag.KBEditor)
	base := "/api/kbs/" + r.kb.ID + "/connectors"
	for _, tc := range []struct{ body, want string }{
		{`{"name":"x","type":"web","settings":{"url":"ftp://example.com/"}}`, "must be an absolute http or https URL"},
		{`{"name":"x","type":"web","settings":{"url":"https://example.com/","colour":"red"}}`, `unknown field "colour"`},
		{`{"name":"x","type":"ftp","settings":{}}`, "is not one of"},
		{`{"name":"bad name","type":"web","settings":{"url":"https://example.com/"}}`, "connector name"},
		{`{"name":"x","type":"web","settings":[1]}`, "settings must be a JSON object"},
		{`{"name":"x","type":"web","settings":{"url":"https://example.com/"},"token":"t"}`, `unknown field "token"`},
		{`{"name":"x","type":"confluence","settings":{"url":"https://acme.atlassian.net/wiki","space":"ENG","credentials_secret":"arn:x"}}`, "credentials_secret is set by an operator"},
		{`{"name":"x","type":"confluence","settings":{"url":"https://acme.atlassian.net/wiki","space":"ENG","credentials_file":"/etc/docmind/wiki.json"}}`, "must be a file name (no folder)"},
		{`{"name":"x","type":"confluence","settings":{"url":"https://acme.atlassian.net/wiki","space":"ENG","credentials_file":"../wiki.json"}}`, "must be a file name (no folder)"},
		{`{"name":"x","type":"confluence","settings":{"url":"https://acme.atlassian.net/wiki","space":"ENG","credentials_file":"wiki.json"}}`, `no credentials file "wiki.json"`},
		{`{"name":"x","type":"confluence","settings":{"url":"https://acme.atlassian.net/wiki","space":"ENG"}}`, "lacks credentials: email"},
		// the site on 127.0.0.1 is allow-listed; another loopback port is not a different host, but
		// a private address is refused by the hardened client
		{`{"name":"x","type":"web","settings":{"url":"http://10.255.255.1/"}}`, "not allowed"},
	} {
		code, out := r.do(http.MethodPost, base, tc.body)
		if code != http.StatusBadRequest || !strings.Contains(errMessage(out), tc.want) {
			t.Errorf("add %s = %d %q; want 400 with %q", tc.body, code, errMessage(out), tc.want)
		}
	}
	if list, _ := r.db.ListConnectors(context.Background(), "acme"); len(list) != 0 {
		t.Fatalf("refused adds recorded connectors: %+v", list)
	}
}

// A connector's view never shows where its credentials are (a path or a secret name), and a
// member's credentials file resolves inside its own knowledge base's folder.
func TestConnectorViewHidesCredentialRefs(t *testing.T) {
	r := newConnectorRig(t)
	r.role(r.kb, rag.KBEditor)
	c := rag.Connector{Tenant: "acme", Name: "wiki", KBID: r.kb.ID, Type: "confluence",
		Config: `{"url":"https://acme.atlassian.net/wiki","space":"ENG","credentials_file":"/etc/docmind/wiki.json"}`}
	if err := r.db.CreateConnector(context.Background(), &c); err != nil {
		t.Fatal(err)
	}
	code, out := r.do(http.MethodGet, "/api/kbs/"+url.PathEscape(r.kb.Name)+"/connectors/wiki", "")
	raw, _ := json.Marshal(out)
	if code != http.StatusOK || out["credentials"] != "file" || strings.Contains(string(raw), "/etc/docmind") {
		t.Fatalf("view = %d %s; want the kind of place only", code, raw)
	}
}

// A connector's own interval: set when it is added or with PATCH ("default", "off", a duration from
// 5m to 720h), shown as written, refused with the reason when out of range; audited.
func TestConnectorInterval(t *testing.T) {
	r := newConnectorRig(t)
	r.role(r.kb, rag.KBEditor)
	base := "/api/kbs/" + r.kb.ID + "/connectors"
	b, _ := json.Marshal(map[string]any{"name": "site", "type": "web", "settings": map[string]any{"url": r.site.URL + "/kb/"}, "interval": "6h", "check": false})
	if code, out := r.do(http.MethodPost, base, string(b)); code != http.StatusCreated || out["interval"] != "6h" {
		t.Fatalf("add with 6h = %d %v", code, out)
	}
	for _, tc := range []struct{ in, want string }{{"90m", "90m"}, {"off", "off"}, {"default", "default"}, {"720h", "720h"}} {
		code, out := r.do(http.MethodPatch, base+"/site", `{"interval":"`+tc.in+`"}`)
		if code != http.StatusOK || out["interval"] != tc.want {
			t.Errorf("PATCH %s = %d %v; want %s", tc.in, code, out, tc.want)
		}
	}
	got, _ := r.db.GetConnector(context.Background(), "acme", "site")
	if got.IntervalSeconds != 720*3600 {
		t.Fatalf("stored interval %d; want 720h", got.IntervalSeconds)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"interval":"1m"}`, "between 5m0s and 720h"},
		{`{"interval":"721h"}`, "between 5m0s and 720h"},
		{`{"interval":"banana"}`, `"default", "off" or a duration`},
		{`{"interval":"1.5s"}`, `"default", "off" or a duration`},
		{`{}`, "changes nothing"},
		{`{"interval":"30m","name":"x"}`, `unknown field "name"`},
	} {
		if code, out := r.do(http.MethodPatch, base+"/site", tc.body); code != http.StatusBadRequest || !strings.Contains(errMessage(out), tc.want) {
			t.Errorf("PATCH %s = %d %q; want 400 with %q", tc.body, code, errMessage(out), tc.want)
		}
	}
	if got, _ := r.db.GetConnector(context.Background(), "acme", "site"); got.IntervalSeconds != 720*3600 {
		t.Fatalf("a refused PATCH changed the interval to %d", got.IntervalSeconds)
	}
	entries, _ := r.db.ListAudit(context.Background(), "acme", 20)
	n := 0
	for _, e := range entries {
		if e.Action == "connector.interval" {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("%d connector.interval audit entries; want 4 (one per accepted change)", n)
	}
}
