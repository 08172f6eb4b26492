package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// The page's connector settings through the real server: `docmind serve` with the loopback site
// allow-listed, a web connector added, synced in the background until its status reads ok, the
// pages found in the knowledge base; a page removed at the site is deleted by the next sync; a
// request from another origin is refused; remove deletes the documents.
func TestConnectorsOverServe(t *testing.T) {
	srv, removePage := testSite(t)
	_, base := startServer(t, func(m *Main) {
		m.NoDemo, m.NoWatch = true, true
		m.Config.Connectors.AllowHosts = "127.0.0.1"
		m.Config.Connectors.SyncInterval = 0
	})
	call := func(method, path, origin string, body any) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+path, rd)
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	var kbs struct {
		Connectors bool `json:"connectors"`
	}
	if getJSON(t, base+"/api/kbs", &kbs); !kbs.Connectors {
		t.Fatal(`GET /api/kbs does not say "connectors": true`)
	}
	code, kb := call(http.MethodPost, "/api/kbs", "", map[string]string{"name": "handbook"})
	if code != http.StatusCreated {
		t.Fatalf("create kb = %d %v", code, kb)
	}
	conns := "/api/kbs/handbook/connectors"
	add := map[string]any{"name": "site", "type": "web", "settings": map[string]any{"url": srv.URL + "/kb/"}}
	if code, out := call(http.MethodPost, conns, "http://evil.example", add); code != http.StatusForbidden {
		t.Fatalf("add from another origin = %d %v; want 403", code, out)
	}
	if code, out := call(http.MethodPost, conns, base, add); code != http.StatusCreated {
		t.Fatalf("add = %d %v", code, out)
	}
	sync := func() map[string]any {
		t.Helper()
		code, out := call(http.MethodPost, conns+"/site/sync", base, nil)
		if code != http.StatusAccepted {
			t.Fatalf("sync = %d %v; want 202", code, out)
		}
		var c map[string]any
		poll(t, "the sync to end", func() bool {
			_, c = call(http.MethodGet, conns+"/site", "", nil)
			return c["status"] != "running"
		})
		return c
	}
	c := sync()
	if p, _ := c["progress"].(map[string]any); c["status"] != "ok" || p["added"] != 2.0 {
		t.Fatalf("after the first sync: %v", c)
	}
	var docs docList
	getJSON(t, base+"/api/kbs/handbook/documents", &docs)
	names := map[string]bool{}
	for _, d := range docs.Documents {
		names[d.FileName] = true
	}
	if len(docs.Documents) != 2 || !names["Home.html"] || !names["Rules.html"] {
		t.Fatalf("documents after the sync: %+v", docs.Documents)
	}

	removePage("/kb/rules")
	code, dry := call(http.MethodPost, conns+"/site/sync", base, map[string]bool{"dry_run": true})
	if code != http.StatusOK || dry["deleted"] != 1.0 {
		t.Fatalf("dry run after a page was removed = %d %v; want 1 delete", code, dry)
	}
	getJSON(t, base+"/api/kbs/handbook/documents", &docs)
	if len(docs.Documents) != 2 {
		t.Fatalf("a dry run changed the documents: %+v", docs.Documents)
	}
	if c := sync(); c["status"] != "ok" || c["progress"].(map[string]any)["deleted"] != 1.0 {
		t.Fatalf("after the page was removed: %v", c)
	}
	getJSON(t, base+"/api/kbs/handbook/documents", &docs)
	if len(docs.Documents) != 1 || docs.Documents[0].FileName != "Home.html" {
		t.Fatalf("documents after the deletion sync: %+v", docs.Documents)
	}
	if code, out := call(http.MethodDelete, conns+"/site", base, nil); code != http.StatusOK || out["deleted"] != 1.0 {
		t.Fatalf("remove = %d %v", code, out)
	}
	getJSON(t, base+"/api/kbs/handbook/documents", &docs)
	if len(docs.Documents) != 0 {
		t.Fatalf("documents after remove: %+v", docs.Documents)
	}
}

// The serve schedule syncs each connector when it is due: one on the default interval is synced by
// the schedule alone (never synced: due at once), one set "off" is left for a sync by hand.
func TestConnectorScheduleKeepsEachInterval(t *testing.T) {
	srv, _ := testSite(t)
	_, base := startServer(t, func(m *Main) {
		m.NoDemo, m.NoWatch = true, true
		m.Config.Connectors.AllowHosts = "127.0.0.1"
		m.Config.Connectors.SyncInterval = 100 * time.Millisecond // the tick too (manage.ScheduleTick)
	})
	post := func(path string, body any) int {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/api/kbs", map[string]string{"name": "handbook"}); code != http.StatusCreated {
		t.Fatalf("create kb = %d", code)
	}
	// "by-hand" sorts first: each pass of the schedule considers it before "scheduled"
	for _, c := range []map[string]any{
		{"name": "by-hand", "type": "web", "settings": map[string]any{"url": srv.URL + "/kb/"}, "interval": "off"},
		{"name": "scheduled", "type": "web", "settings": map[string]any{"url": srv.URL + "/kb/"}},
	} {
		if code := post("/api/kbs/handbook/connectors", c); code != http.StatusCreated {
			t.Fatalf("add %v = %d", c["name"], code)
		}
	}
	status := func(name string) string {
		var c struct {
			Status string `json:"status"`
		}
		getJSON(t, base+"/api/kbs/handbook/connectors/"+name, &c)
		return c.Status
	}
	poll(t, "the scheduled connector to be synced", func() bool { return status("scheduled") == "ok" })
	if got := status("by-hand"); got != "idle" {
		t.Fatalf("the connector set off is %q; want idle (never synced by the schedule)", got)
	}
}
