package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/rag"
)

// A small site on 127.0.0.1: two linked pages, one of which can be removed.
func testSite(t *testing.T) (*httptest.Server, func(path string)) {
	var mu sync.Mutex
	pages := map[string]string{
		"/kb/":      `<html><head><title>Home</title></head><body><h1>Home</h1><p>The kestrel rota starts on Mondays.</p><a href="rules">rules</a></body></html>`,
		"/kb/rules": `<html><head><title>Rules</title></head><body><h1>Rules</h1><p>Badgers must sign the ledger twice.</p></body></html>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		etag := fmt.Sprintf(`"%d"`, len(body))
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, func(path string) { mu.Lock(); delete(pages, path); mu.Unlock() }
}

func TestConnectorCommands(t *testing.T) {
	srv, remove := testSite(t)
	data := t.TempDir()
	env := map[string]string{"DOCMIND_CONNECTOR_ALLOW_HOSTS": "127.0.0.1"}

	// without the allow list the loopback site is refused when the connector is added
	code, _, errOut := runCLI(t, nil, "connector", "add", "site", "--kb", "handbook", "--type", "web", "--url", srv.URL+"/kb/", "--data", data)
	if code != exitFail || !strings.Contains(errOut, "not allowed") {
		t.Fatalf("add without the allow list: exit %d %q; want refused", code, errOut)
	}
	code, out, errOut := runCLI(t, env, "connector", "add", "site", "--kb", "handbook", "--type", "web", "--url", srv.URL+"/kb/", "--data", data)
	if code != exitOK || !strings.Contains(out, "connector site added") {
		t.Fatalf("add: exit %d %q %q", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, env, "connector", "add", "site", "--kb", "handbook", "--type", "web", "--url", srv.URL+"/kb/", "--data", data); code != exitConfig || !strings.Contains(errOut, "exists already") {
		t.Fatalf("second add: exit %d %q; want a clear refusal", code, errOut)
	}
	if code, _, errOut := runCLI(t, env, "connector", "add", "drive", "--kb", "handbook", "--type", "ftp", "--data", data); code != exitConfig || !strings.Contains(errOut, "not one of") {
		t.Fatalf("add of an unknown type: exit %d %q", code, errOut)
	}

	code, out, _ = runCLI(t, env, "connector", "sync", "site", "--dry-run", "--data", data)
	if code != exitOK || !strings.Contains(out, "site dry run: 2 added") || !strings.Contains(out, "add       Rules.html") {
		t.Fatalf("dry run: exit %d %q", code, out)
	}
	var res connector.Result
	code, out, errOut = runCLI(t, env, "connector", "sync", "site", "--json", "--data", data)
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != exitOK || res.Added != 2 || res.Status != rag.SyncOK {
		t.Fatalf("sync: exit %d %q %q (%v)", code, out, errOut, err)
	}
	code, out, _ = runCLI(t, env, "search", "--kb", "handbook", "--data", data, "badgers ledger")
	if code != exitOK || !strings.Contains(out, "Rules.html") {
		t.Fatalf("search after the sync: exit %d %q; want the synced page", code, out)
	}

	// the pages' metadata restricts a search: the Rules page is excluded by its title
	code, out, _ = runCLI(t, env, "search", "--kb", "handbook", "--data", data, "--filter", `{"not":{"key":"title","eq":"Rules"}}`, "badgers ledger")
	if code != exitOK || strings.Contains(out, "Rules.html") {
		t.Fatalf("filtered search: exit %d %q; want the Rules page excluded", code, out)
	}
	code, out, _ = runCLI(t, env, "search", "--data", data, "--filter", `{"key":"source","eq":"confluence"}`, "badgers")
	if code != exitOK || !strings.Contains(out, "no document passes the filter") {
		t.Fatalf("search with a filter nothing passes: exit %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, env, "search", "--data", data, "--filter", `{"key":"source"}`, "badgers"); code != exitConfig || !strings.Contains(errOut, "needs eq") {
		t.Fatalf("bad filter: exit %d %q; want a clear config error", code, errOut)
	}
	remove("/kb/rules")
	code, out, _ = runCLI(t, env, "connector", "sync", "site", "--data", data)
	if code != exitOK || !strings.Contains(out, "0 added, 0 updated, 1 deleted, 0 failed (1 unchanged, 1 not modified)") {
		t.Fatalf("sync after a removal: exit %d %q", code, out)
	}
	code, out, _ = runCLI(t, env, "connector", "list", "--data", data)
	if code != exitOK || !strings.Contains(out, "site\tweb") || !strings.Contains(out, "\tok\t") || !strings.Contains(out, `"deleted":1`) {
		t.Fatalf("list: exit %d %q", code, out)
	}
	code, out, _ = runCLI(t, env, "connector", "remove", "site", "--data", data)
	if code != exitOK || !strings.Contains(out, "1 documents deleted") {
		t.Fatalf("remove: exit %d %q", code, out)
	}
	if code, out, _ := runCLI(t, env, "connector", "list", "--data", data); code != exitOK || !strings.Contains(out, "no connectors") {
		t.Fatalf("list after remove: exit %d %q", code, out)
	}
	if code, _, _ := runCLI(t, env, "connector", "sync", "--data", data); code != exitConfig {
		t.Fatalf("sync without a name: exit %d", code)
	}
}
