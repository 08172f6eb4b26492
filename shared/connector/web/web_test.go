package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/connectortest"
	"github.com/docmind/docmind/shared/netx"
	"github.com/docmind/docmind/shared/rag"
)

// site is a real local web site: pages with ETag and Last-Modified that answer conditional requests
// with 304, a robots.txt, a sitemap, links, a canonical alias, a noindex page and pages out of scope.
type site struct {
	mu      sync.Mutex
	pages   map[string]string // path -> HTML body
	broken  map[string]bool   // path -> answers 500
	hits    map[string]int
	n304    int
	srv     *httptest.Server
	modTime time.Time
}

func newSite(t *testing.T) *site {
	s := &site{pages: map[string]string{}, broken: map[string]bool{}, hits: map[string]int{},
		modTime: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	page := func(title, body string, links ...string) string {
		var a strings.Builder
		for _, l := range links {
			fmt.Fprintf(&a, `<a href="%s">%s</a> `, l, l)
		}
		return fmt.Sprintf(`<!doctype html><html lang="en"><head><title>%s</title><meta name="author" content="Docs Team"></head>
<body><h1>%s</h1><p>%s</p><nav>%s</nav></body></html>`, title, title, body, a.String())
	}
	s.pages["/docs/"] = page("Handbook home", "Welcome to the handbook of the Zephyr project.", "install", "guide?ref=nav", "/blog/news", "/docs/private/keys", "mailto:x@y")
	s.pages["/docs/install"] = page("Install", "To install Zephyr run the bootstrap script with the quartz flag.", "/docs/", "faq")
	s.pages["/docs/guide"] = `<!doctype html><html><head><title>Guide</title><link rel="canonical" href="/docs/guide"></head>
<body><h1>Guide</h1><p>The guide explains how the lantern scheduler rotates its shifts every nine hours.</p></body></html>`
	s.pages["/docs/faq"] = page("FAQ", "Frequently asked: the marmalade cache expires after forty minutes.")
	s.pages["/docs/only-in-sitemap"] = page("Release notes", "Release seven adds the cobalt importer.")
	s.pages["/docs/draft"] = `<html><head><title>Draft</title><meta name="robots" content="noindex"></head><body>secret draft</body></html>`
	s.pages["/docs/private/keys"] = page("Keys", "private keys page must never be fetched")
	s.pages["/blog/news"] = page("News", "out of scope")
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *site) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[r.URL.Path]++
	switch r.URL.Path {
	case "/robots.txt":
		fmt.Fprintf(w, "User-agent: *\nDisallow: /docs/private/\n\nSitemap: %s/sitemap.xml\n", s.srv.URL)
		return
	case "/sitemap.xml":
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>%[1]s/docs/</loc></url><url><loc>%[1]s/docs/only-in-sitemap</loc><lastmod>2026-01-02</lastmod></url>
<url><loc>%[1]s/docs/draft</loc></url></urlset>`, s.srv.URL)
		return
	}
	if s.broken[r.URL.Path] {
		http.Error(w, "boom", http.StatusInternalServerError)
		return
	}
	body, ok := s.pages[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	h := sha256.Sum256([]byte(body))
	etag := `"` + hex.EncodeToString(h[:8]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", s.modTime.Format(http.TimeFormat))
	if r.Header.Get("If-None-Match") == etag {
		s.n304++
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(body))
}

func (s *site) set(path, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if body == "" {
		delete(s.pages, path)
	} else {
		s.pages[path] = body
	}
}

// client is the hardened client with the loopback site allowed as DOCMIND_CONNECTOR_ALLOW_HOSTS would.
func client(t *testing.T, allow string) *connector.HTTP {
	p, h, err := netx.ParseAllowList(allow)
	if err != nil {
		t.Fatal(err)
	}
	return &connector.HTTP{Client: netx.NewClient(netx.Options{Allow: p, AllowHosts: h}),
		Sleep: func(context.Context, time.Duration) error { return nil }}
}

func newConnector(t *testing.T, s *site, allow string) *Connector {
	cfg, err := ParseConfig([]byte(`{"url":"` + s.srv.URL + `/docs/"}`))
	if err != nil {
		t.Fatal(err)
	}
	return New(cfg, client(t, allow))
}

func names(docs map[string]rag.Document) []string {
	var out []string
	for n := range docs {
		out = append(out, n)
	}
	return out
}

func TestSyncRealSite(t *testing.T) {
	s := newSite(t)
	env := connectortest.New(t, "site", "web", `{}`)
	c := newConnector(t, s, "127.0.0.1")

	// first sync: every page in scope, nothing out of scope, robots-disallowed or noindex
	res := env.Sync(t, c, connector.Options{})
	t.Logf("first sync: %+v", res)
	if res.Added != 5 || res.Updated != 0 || res.Deleted != 0 || len(res.Failed) != 0 || res.Status != rag.SyncOK {
		t.Fatalf("first sync = %+v; want 5 added, ok", res)
	}
	docs := env.Docs(t)
	for _, n := range []string{"Handbook home.html", "Install.html", "Guide.html", "FAQ.html", "Release notes.html"} {
		if docs[n].Status != rag.StatusReady {
			t.Errorf("document %q = %+v; want ready (have %v)", n, docs[n], names(docs))
		}
	}
	if len(docs) != 5 {
		t.Errorf("documents = %v; want 5", names(docs))
	}
	if s.hits["/docs/private/keys"] != 0 || s.hits["/blog/news"] != 0 {
		t.Errorf("fetched a disallowed or out-of-scope page: %v", s.hits)
	}
	if !strings.HasPrefix(docs["Guide.html"].SourceURI, "connector/site/"+s.srv.URL+"/docs/guide") ||
		strings.Contains(docs["Guide.html"].SourceURI, "ref=nav") {
		t.Errorf("guide source uri = %q; want its canonical URL", docs["Guide.html"].SourceURI)
	}
	meta, err := env.DB.GetDocumentMetadata(context.Background(), connectortest.Tenant, docs["Install.html"].ID)
	if err != nil || meta["source"] != "web" || meta["connector"] != "site" || meta["title"] != "Install" || meta["author"] != "Docs Team" ||
		meta["language"] != "en" || meta["modified"] != "2026-01-02T03:04:05Z" || meta["url"] != s.srv.URL+"/docs/install" {
		t.Errorf("Install's document metadata = %v, %v; want source, connector, title, author, language, modified, url", meta, err)
	}
	if got := env.TopDocument(t, "lantern scheduler shifts"); got != docs["Guide.html"].ID {
		t.Errorf("top document for the guide's words = %q; want the guide %q", got, docs["Guide.html"].ID)
	}

	// nothing changed: every page answers 304, no body is indexed again
	s.n304 = 0
	res = env.Sync(t, c, connector.Options{})
	t.Logf("incremental sync, no change: %+v", res)
	if res.NotModified != 5 || s.n304 != 5 || res.Added+res.Updated+res.Deleted != 0 {
		t.Fatalf("unchanged sync = %+v (site counted %d 304s); want 5 not modified", res, s.n304)
	}

	// a page edited: updated in this sync, and the new text is what a query finds
	faq := docs["FAQ.html"].ID
	s.set("/docs/faq", strings.Replace(s.pages["/docs/faq"], "the marmalade cache expires after forty minutes",
		"the marmalade cache now expires after ninety seconds", 1))
	res = env.Sync(t, c, connector.Options{})
	t.Logf("incremental sync, one page edited: %+v", res)
	if res.Updated != 1 || res.NotModified != 4 || res.Added != 0 || res.Deleted != 0 {
		t.Fatalf("edit sync = %+v; want 1 updated, 4 not modified", res)
	}
	text := env.Text(t, faq)
	if !strings.Contains(text, "ninety seconds") || strings.Contains(text, "forty minutes") {
		t.Errorf("FAQ chunks after the edit = %q; want the new text only", text)
	}
	if got := env.TopDocument(t, "marmalade cache ninety seconds"); got != faq {
		t.Errorf("top document for the edited words = %q; want the FAQ %q", got, faq)
	}

	// a page removed: deleted within this one sync
	s.set("/docs/install", "")
	res = env.Sync(t, c, connector.Options{})
	t.Logf("incremental sync, one page removed: %+v", res)
	if res.Deleted != 1 || res.Added+res.Updated != 0 {
		t.Fatalf("removal sync = %+v; want 1 deleted", res)
	}
	docs = env.Docs(t)
	if _, ok := docs["Install.html"]; ok || len(docs) != 4 {
		t.Errorf("documents after removal = %v; want Install gone", names(docs))
	}
	if got := env.TopDocument(t, "bootstrap script quartz flag"); got != "" {
		t.Errorf("a query still finds the removed page: %q", got)
	}
	st, err := env.DB.GetConnector(context.Background(), connectortest.Tenant, "site")
	if err != nil || st.Status != rag.SyncOK || st.SucceededAt.IsZero() || !strings.Contains(st.Progress, `"deleted":1`) {
		t.Errorf("connector state = %+v, %v; want ok with the last sync's counts", st.SyncState, err)
	}
}

// A page failing with 500 is a failed item: the run goes on, the page is not deleted, the status is
// partial, and the next sync fetches it again.
func TestSyncFailedPageIsRetriedNotDeleted(t *testing.T) {
	s := newSite(t)
	env := connectortest.New(t, "site", "web", `{}`)
	c := newConnector(t, s, "127.0.0.0/8")
	env.Sync(t, c, connector.Options{})
	s.broken["/docs/faq"] = true
	res := env.Sync(t, c, connector.Options{})
	if len(res.Failed) != 1 || !strings.Contains(res.Failed[0].ID, "/docs/faq") || res.Deleted != 0 || res.Status != rag.SyncPartial {
		t.Fatalf("sync with a broken page = %+v; want 1 failed, 0 deleted, partial", res)
	}
	if _, ok := env.Docs(t)["FAQ.html"]; !ok {
		t.Fatal("the failing page's document was deleted")
	}
	s.broken["/docs/faq"] = false
	s.n304 = 0
	res = env.Sync(t, c, connector.Options{})
	if len(res.Failed) != 0 || res.Status != rag.SyncOK {
		t.Fatalf("sync after recovery = %+v; want ok", res)
	}
}

// A dry run reports what a sync would do and writes nothing.
func TestDryRunWritesNothing(t *testing.T) {
	s := newSite(t)
	env := connectortest.New(t, "site", "web", `{}`)
	c := newConnector(t, s, "127.0.0.1")
	res := env.Sync(t, c, connector.Options{DryRun: true})
	if !res.DryRun || res.Added != 5 || len(res.Items) != 5 || res.Items[0].Action != connector.ActAdd || res.Items[0].Metadata["url"] == "" {
		t.Fatalf("dry run = %+v; want 5 items to add with metadata", res)
	}
	if docs := env.Docs(t); len(docs) != 0 {
		t.Fatalf("dry run created documents: %v", names(docs))
	}
	st, _ := env.DB.GetConnector(context.Background(), connectortest.Tenant, "site")
	items, _ := env.DB.ListConnectorItems(context.Background(), connectortest.Tenant, "site")
	if st.Status != rag.SyncIdle || len(items) != 0 {
		t.Fatalf("after a dry run: status %q, %d items; want idle and none", st.Status, len(items))
	}
	env.Sync(t, c, connector.Options{})
	s.set("/docs/faq", "")
	res = env.Sync(t, c, connector.Options{DryRun: true})
	if res.Deleted != 1 || len(env.Docs(t)) != 5 {
		t.Fatalf("dry run after removal = %+v with %d documents; want 1 to delete and all 5 kept", res, len(env.Docs(t)))
	}
}

// Without DOCMIND_CONNECTOR_ALLOW_HOSTS a loopback site is refused at dial time: the sync fails with
// a clear error, its status says so, and nothing indexed earlier is deleted.
func TestLoopbackRefusedUnlessAllowed(t *testing.T) {
	s := newSite(t)
	env := connectortest.New(t, "site", "web", `{}`)
	env.Sync(t, newConnector(t, s, "127.0.0.1"), connector.Options{})
	_, err := env.Engine.Sync(context.Background(), connectortest.Tenant, "site", newConnector(t, s, ""), connector.Options{})
	if !errors.Is(err, netx.ErrBlocked) {
		t.Fatalf("sync of a loopback site without the allow list = %v; want netx.ErrBlocked", err)
	}
	st, _ := env.DB.GetConnector(context.Background(), connectortest.Tenant, "site")
	if st.Status != rag.SyncFailed || !strings.Contains(st.LastError, "not allowed") {
		t.Errorf("status = %q %q; want failed with the reason", st.Status, st.LastError)
	}
	if n := len(env.Docs(t)); n != 5 {
		t.Errorf("documents after a refused sync = %d; want the 5 kept", n)
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"url":"https://Docs.Example.com:443/handbook/intro.html"}`))
	if err != nil || len(c.Prefixes) != 1 || c.Prefixes[0] != "https://docs.example.com/handbook/" || c.MaxPages != 2000 {
		t.Fatalf("ParseConfig = %+v, %v; want prefix https://docs.example.com/handbook/", c, err)
	}
	_, err = ParseConfig([]byte(`{"url":"ftp://x/","prefixes":["nope"],"max_pages":-1}`))
	if !rag.Is(err, rag.KindInvalid) || !strings.Contains(err.Error(), "ftp://x/") || !strings.Contains(err.Error(), "nope") ||
		!strings.Contains(err.Error(), "negative") {
		t.Fatalf("bad config error = %v; want every problem named", err)
	}
	if _, err := ParseConfig([]byte(`{"url":"https://x/","token":"s"}`)); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("unknown field = %v; want Invalid", err)
	}
}

func TestRobots(t *testing.T) {
	r := parseRobots("User-agent: *\nDisallow: /\n\nUser-agent: DocMind\nUser-agent: other\nDisallow: /private/\nAllow: /private/ok$\nDisallow: /*.pdf$\nSitemap: https://x/s.xml\n", "docmind")
	for p, want := range map[string]bool{"/": true, "/private/a": false, "/private/ok": true, "/private/ok/more": false, "/a/b.pdf": false, "/a/b.pdf?x": true} {
		if got := r.allowed(p); got != want {
			t.Errorf("allowed(%q) = %v; want %v", p, got, want)
		}
	}
	if len(r.sitemaps) != 1 {
		t.Errorf("sitemaps = %v", r.sitemaps)
	}
	if star := parseRobots("User-agent: *\nDisallow: /\n", "docmind"); star.allowed("/x") {
		t.Error("the * group's Disallow: / did not apply")
	}
}
