package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A minimal Microsoft identity platform and Graph drive on 127.0.0.1 (the shapes of
// shared/connector/sharepoint's fake): a token for the right secret, a site's drive, a delta listing one
// file, and its pre-authenticated download.
func testGraph(t *testing.T) (*httptest.Server, func(body string)) {
	var mu sync.Mutex
	body, version := "# Leave\n\nStaff take twenty days of heron leave.\n", 1
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/tenant-1/oauth2/v2.0/token":
			r.ParseForm()
			if r.PostForm.Get("client_id") != "app-1" || r.PostForm.Get("client_secret") != "canary-secret-42" {
				w.WriteHeader(http.StatusUnauthorized)
				json.NewEncoder(w).Encode(map[string]any{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided."})
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"token_type": "Bearer", "expires_in": 3599, "access_token": "tok-1"})
		case r.URL.Path == "/dl/leave":
			w.Write([]byte(body))
		case r.Header.Get("Authorization") != "Bearer tok-1":
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/v1.0/sites/site-1/drive":
			json.NewEncoder(w).Encode(map[string]any{"id": "drive-1"})
		case r.URL.Path == "/v1.0/drives/drive-1/root/delta":
			items := []any{}
			if r.URL.Query().Get("token") != strings.Repeat("v", version) {
				items = append(items, map[string]any{"id": "leave", "name": "Leave.md", "cTag": strings.Repeat("c", version),
					"lastModifiedDateTime": "2026-06-01T08:00:00Z", "webUrl": "https://contoso.sharepoint.com/Shared%20Documents/Leave.md",
					"file": map[string]any{"mimeType": "text/markdown"}, "createdBy": map[string]any{"user": map[string]any{"displayName": "Megan Bowen"}},
					"parentReference": map[string]any{"id": "root-id", "path": "/drive/root:"}, "@microsoft.graph.downloadUrl": srv.URL + "/dl/leave"})
			}
			json.NewEncoder(w).Encode(map[string]any{"value": items, "@odata.deltaLink": srv.URL + "/v1.0/drives/drive-1/root/delta?token=" + strings.Repeat("v", version)})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, func(b string) { mu.Lock(); body, version = b, version+1; mu.Unlock() }
}

func TestConnectorSharePointAndDriveCommands(t *testing.T) {
	srv, edit := testGraph(t)
	data, dir := t.TempDir(), t.TempDir()
	settings := filepath.Join(dir, "sp.json")
	os.WriteFile(settings, []byte(`{"site_id":"site-1","graph_url":"`+srv.URL+`/v1.0","login_url":"`+srv.URL+`"}`), 0o600)
	env := map[string]string{"DOCMIND_CONNECTOR_ALLOW_HOSTS": "127.0.0.1", "DOCMIND_CONNECTOR_TEAM_DOCS_TENANT_ID": "tenant-1",
		"DOCMIND_CONNECTOR_TEAM_DOCS_CLIENT_ID": "app-1", "DOCMIND_CONNECTOR_TEAM_DOCS_CLIENT_SECRET": "wrong-canary"}

	// a refused secret: a clear Permission error naming the identity platform's code, never the secret
	code, out, errOut := runCLI(t, env, "connector", "add", "team-docs", "--kb", "handbook", "--type", "sharepoint", "--config", settings, "--data", data)
	if code == exitOK || !strings.Contains(errOut, "invalid_client") || strings.Contains(out+errOut, "canary") {
		t.Fatalf("add with a wrong secret: exit %d %q %q; want refused without the secret", code, out, errOut)
	}
	env["DOCMIND_CONNECTOR_TEAM_DOCS_CLIENT_SECRET"] = "canary-secret-42"
	code, out, errOut = runCLI(t, env, "connector", "add", "team-docs", "--kb", "handbook", "--type", "sharepoint", "--config", settings, "--data", data)
	if code != exitOK || !strings.Contains(out, "connector team-docs added (sharepoint") {
		t.Fatalf("add: exit %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, env, "connector", "sync", "team-docs", "--dry-run", "--data", data)
	if code != exitOK || !strings.Contains(out, "add       Leave.md") {
		t.Fatalf("dry run: exit %d %q", code, out)
	}
	code, out, errOut = runCLI(t, env, "connector", "sync", "team-docs", "--data", data)
	if code != exitOK || !strings.Contains(out, "1 added, 0 updated, 0 deleted, 0 failed") || strings.Contains(out+errOut, "canary") {
		t.Fatalf("sync: exit %d %q %q", code, out, errOut)
	}
	edit("# Leave\n\nStaff now take twenty-five days of lantern leave.\n")
	code, out, _ = runCLI(t, env, "connector", "sync", "team-docs", "--data", data)
	if code != exitOK || !strings.Contains(out, "0 added, 1 updated, 0 deleted, 0 failed") {
		t.Fatalf("sync after an edit: exit %d %q", code, out)
	}
	code, out, _ = runCLI(t, env, "search", "--kb", "handbook", "--data", data, "--filter", `{"key":"author","eq":"Megan Bowen"}`, "lantern leave")
	if code != exitOK || !strings.Contains(out, "Leave.md") || !strings.Contains(out, "lantern") {
		t.Fatalf("search after the edit, filtered by the SharePoint author: exit %d %q", code, out)
	}

	// Google Drive: the settings are accepted with --config, and a key file lacking private_key is a
	// configuration error naming the key and its variable
	key := filepath.Join(dir, "sa.json")
	os.WriteFile(key, []byte(`{"type":"service_account","client_email":"sync@acme.iam.gserviceaccount.com"}`), 0o600)
	gd := filepath.Join(dir, "gd.json")
	os.WriteFile(gd, []byte(`{"folder_id":"1AbC","credentials_file":"`+key+`"}`), 0o600)
	code, out, errOut = runCLI(t, env, "connector", "add", "drive", "--kb", "handbook", "--type", "gdrive", "--config", gd, "--data", data)
	if code == exitOK || !strings.Contains(errOut, "private_key (or DOCMIND_CONNECTOR_DRIVE_PRIVATE_KEY)") {
		t.Fatalf("add gdrive without a private key: exit %d %q %q", code, out, errOut)
	}
	env["DOCMIND_CONNECTOR_DRIVE_PRIVATE_KEY"] = "-----BEGIN PRIVATE KEY-----\nnot really\n-----END PRIVATE KEY-----\n"
	code, out, errOut = runCLI(t, env, "connector", "add", "drive", "--kb", "handbook", "--type", "gdrive", "--config", gd, "--no-validate", "--data", data)
	if code != exitOK || !strings.Contains(out, "connector drive added (gdrive") {
		t.Fatalf("add gdrive --no-validate: exit %d %q %q", code, out, errOut)
	}
	code, out, errOut = runCLI(t, env, "connector", "sync", "drive", "--data", data)
	if code == exitOK || !strings.Contains(out+errOut, "service account key is not usable") || strings.Contains(out+errOut, "not really") {
		t.Fatalf("sync with a garbled key: exit %d %q %q; want a clear error without the key", code, out, errOut)
	}
}
