package sharepoint

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/connectortest"
	"github.com/docmind/docmind/shared/netx"
	"github.com/docmind/docmind/shared/rag"
)

func newConnector(t *testing.T, f *fake, config string, creds connector.Credentials) (*Connector, *connector.HTTP) {
	t.Helper()
	cfg, err := ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	p, h, _ := netx.ParseAllowList("127.0.0.1")
	hc := &connector.HTTP{Client: netx.NewClient(netx.Options{Allow: p, AllowHosts: h}),
		Sleep: func(context.Context, time.Duration) error { return nil }}
	return New(cfg, creds, hc), hc
}

func siteConfig(f *fake, folder string) string {
	return `{"site_id":"` + siteID + `","folder":"` + folder + `","graph_url":"` + f.srv.URL + `/v1.0","login_url":"` + f.srv.URL + `"}`
}

var goodCreds = connector.Credentials{"tenant_id": tenantID, "client_id": clientID, "client_secret": secret}

func TestSyncAgainstFake(t *testing.T) {
	f := newFake(t)
	f.folder("F-POL", "Team Policies", "root")
	f.folder("F-HR", "HR", "F-POL")
	f.folder("F-ARC", "Archive", "root")
	f.put("I-LEAVE", "Leave.md", "F-POL", "# Leave\n\nStaff take twenty days of heron leave a year.\n", "Megan Bowen")
	f.put("I-GUIDE", "Guide.md", "F-POL", "# Guide\n\nThe guide explains the badger process.\n", "Megan Bowen")
	f.put("I-EXP", "Expenses.md", "F-POL", "# Expenses\n\nClaims are filed within thirty days.\n", "Alex Wilber")
	f.put("I-HAND", "Handbook.txt", "F-HR", "The handbook names the osprey committee.\n", "Alex Wilber")
	f.put("I-BRK", "Broken.md", "F-POL", "# Broken\n\nThe walrus rule applies.\n", "Alex Wilber")
	f.put("I-EXE", "setup.exe", "F-POL", "MZ", "Alex Wilber")                                 // not a type docmind indexes: skipped
	f.put("I-OLD", "Old.md", "F-ARC", "# Old\n\nOutside the synced folder.\n", "Alex Wilber") // outside the folder
	f.items["I-BRK"].failDownloads = 1
	env := connectortest.New(t, "docs", "sharepoint", `{}`)
	c, hc := newConnector(t, f, siteConfig(f, "team policies"), goodCreds)
	f.limit = 1 // the first Graph request is throttled

	start := time.Now()
	res, _ := env.Engine.Sync(context.Background(), connectortest.Tenant, env.Name, c, connector.Options{})
	t.Logf("first sync: %+v in %s", res, time.Since(start))
	if res.Added != 4 || len(res.Failed) != 1 || res.Failed[0].ID != "I-BRK" || res.Status != rag.SyncPartial {
		t.Fatalf("first sync = %+v; want 4 added and Broken.md failed without stopping the run", res)
	}
	// token + 429 + drive + 4 delta pages (11 items by 3: root, 3 folders, 7 files) + 5 downloads
	if res.Calls != 12 || f.calls["token"] != 1 || f.calls["delta"] != 4 || len(hc.Waits) != 1 || hc.Waits[0] != 3*time.Second {
		t.Fatalf("first sync calls %d (%v), waits %v; want 12 calls, one token, 4 delta pages, one 3s wait", res.Calls, f.calls, hc.Waits)
	}
	if strings.Contains(res.Failed[0].Error, "tempauth") || !strings.Contains(res.Failed[0].Error, "HTTP 500") {
		t.Fatalf("the failed download's error %q must say HTTP 500 without the download URL's token", res.Failed[0].Error)
	}
	if f.authOnDL != 0 {
		t.Fatalf("%d downloads carried the bearer token to the pre-authenticated URL", f.authOnDL)
	}
	docs := env.Docs(t)
	if len(docs) != 4 || docs["Handbook.txt"].Status != rag.StatusReady || docs["Old.md"].ID != "" || docs["setup.exe"].ID != "" {
		t.Fatalf("documents after the first sync = %v; want the 4 files under Policies", docs)
	}
	meta, _ := env.DB.GetDocumentMetadata(context.Background(), connectortest.Tenant, docs["Leave.md"].ID)
	if meta["source"] != "sharepoint" || meta["author"] != "Megan Bowen" || meta["modified_by"] != "Megan Bowen" ||
		meta["path"] != "Team Policies/Leave.md" || meta["mime_type"] != "text/markdown" || meta["modified"] != "2026-06-01T08:00:00Z" ||
		meta["url"] != "https://contoso.sharepoint.com/sites/eng/Shared%20Documents/Team%20Policies/Leave.md" {
		t.Errorf("Leave.md's metadata = %v", meta)
	}

	// edit one file, add one, delete one, delete the HR folder (delta reports the folder only), change
	// a file's properties only; Broken.md downloads now
	f.now = f.now.Add(time.Hour)
	f.put("I-LEAVE", "Leave.md", "F-POL", "# Leave\n\nStaff now take twenty-five days of lantern leave a year.\n", "Adele Vance")
	f.put("I-NEW", "Incidents.md", "F-POL", "# Incidents\n\nEvery incident gets a kestrel number.\n", "Adele Vance")
	f.remove("I-EXP")
	f.remove("F-HR")
	f.touch("I-GUIDE")
	downloads := f.calls["download"]
	start = time.Now()
	res = env.Sync(t, c, connector.Options{})
	t.Logf("incremental sync: %+v in %s", res, time.Since(start))
	if res.Added != 2 || res.Updated != 1 || res.Deleted != 2 || res.NotModified != 1 || len(res.Failed) != 0 || res.Status != rag.SyncOK {
		t.Fatalf("incremental sync = %+v; want 2 added (new, retried), 1 updated, 2 deleted (file, file under the deleted folder), 1 not modified", res)
	}
	// 2 delta pages (5 changes by 3), Broken.md looked up and downloaded, 2 downloads
	// for Leave and Incidents; the token is cached, Guide.md is not downloaded
	if got := f.calls["download"] - downloads; got != 3 || f.calls["token"] != 1 || res.Calls != 6 {
		t.Fatalf("incremental sync: %d downloads, %d token requests, %d calls (%v); want 3, 1, 6", got, f.calls["token"], res.Calls, f.calls)
	}
	docs = env.Docs(t)
	for _, gone := range []string{"Expenses.md", "Handbook.txt"} {
		if _, ok := docs[gone]; ok {
			t.Errorf("%s is still indexed after its deletion", gone)
		}
	}
	if docs["Broken.md"].Status != rag.StatusReady || docs["Incidents.md"].Status != rag.StatusReady {
		t.Errorf("documents after the incremental sync = %v", docs)
	}
	if got := env.TopDocument(t, "lantern leave"); got != docs["Leave.md"].ID {
		t.Errorf("top document for the edited words = %q; want Leave.md %q", got, docs["Leave.md"].ID)
	}
	if strings.Contains(env.Text(t, docs["Leave.md"].ID), "heron") {
		t.Error("the old text of Leave.md is still indexed")
	}
	meta, _ = env.DB.GetDocumentMetadata(context.Background(), connectortest.Tenant, docs["Leave.md"].ID)
	if meta["modified_by"] != "Adele Vance" || meta["modified"] != "2026-06-01T09:00:00Z" {
		t.Errorf("Leave.md's metadata after the edit = %v", meta)
	}

	// nothing changed: one delta call
	res = env.Sync(t, c, connector.Options{})
	if res.Listed != 0 || res.Calls != 1 {
		t.Fatalf("unchanged sync = %+v; want nothing listed in 1 call", res)
	}

	// the delta link expires (410 resyncRequired) while a file is purged: the full enumeration that
	// follows deletes it and downloads nothing that did not change
	f.mu.Lock()
	delete(f.items, "I-GUIDE")
	f.oldest = f.seq + 1
	f.mu.Unlock()
	res = env.Sync(t, c, connector.Options{})
	t.Logf("resync after 410: %+v", res)
	if res.Deleted != 1 || res.NotModified != 3 || res.Added+res.Updated != 0 || len(res.Failed) != 0 {
		t.Fatalf("resync = %+v; want Guide.md deleted, the 3 others not modified", res)
	}
	if _, ok := env.Docs(t)["Guide.md"]; ok {
		t.Error("the purged Guide.md is still indexed after the resync")
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	f := newFake(t)
	f.folder("F-POL", "Policies", "root")
	f.put("I-LEAVE", "Leave.md", "F-POL", "# Leave\n\nTwenty days.\n", "Megan Bowen")
	env := connectortest.New(t, "docs", "sharepoint", `{}`)
	c, _ := newConnector(t, f, siteConfig(f, ""), goodCreds)
	res := env.Sync(t, c, connector.Options{DryRun: true})
	if res.Added != 1 || len(res.Items) != 1 || res.Items[0].Action != connector.ActAdd || res.Items[0].Metadata["path"] != "Policies/Leave.md" {
		t.Fatalf("dry run = %+v; want Leave.md to be added", res)
	}
	if len(env.Docs(t)) != 0 {
		t.Fatal("a dry run indexed documents")
	}
	if c, _ := env.DB.GetConnector(context.Background(), connectortest.Tenant, env.Name); c.Cursor != "" {
		t.Fatalf("a dry run stored the cursor %q", c.Cursor)
	}
}

// A listing without download URLs: the bytes come from /items/{id}/content, which answers 302 to the
// pre-authenticated URL.
func TestDownloadThroughContent(t *testing.T) {
	f := newFake(t)
	f.noDLURL = true
	f.folder("F-POL", "Policies", "root")
	f.put("I-LEAVE", "Leave.md", "F-POL", "# Leave\n\nTwenty days of heron leave.\n", "Megan Bowen")
	env := connectortest.New(t, "docs", "sharepoint", `{}`)
	c, _ := newConnector(t, f, siteConfig(f, ""), goodCreds)
	res := env.Sync(t, c, connector.Options{})
	if res.Added != 1 || f.calls["content"] != 1 || f.calls["download"] != 1 {
		t.Fatalf("sync = %+v (%v); want 1 added through /content and its redirect", res, f.calls)
	}
	if !strings.Contains(env.Text(t, env.Docs(t)["Leave.md"].ID), "heron") {
		t.Fatal("the file's text is not indexed")
	}
}

// Graph may name an item more than once in one delta feed; the last occurrence wins.
func TestDeltaRepeatsAnItem(t *testing.T) {
	c := &Connector{cfg: Config{}}
	file := func(name string, deleted bool) driveItem {
		it := driveItem{ID: "I-1", Name: name, CTag: name}
		it.File = &struct {
			MimeType string `json:"mimeType"`
		}{"text/markdown"}
		if deleted {
			it.Deleted, it.File = &struct{}{}, nil
		}
		return it
	}
	got, _ := c.changes(context.Background(), []driveItem{file("a.md", false), file("b.md", false)}, nil, false)
	if len(got) != 1 || got[0].Deleted || c.listed["I-1"].Name != "b.md" {
		t.Fatalf("changes of an item listed twice = %+v (%+v); want one change with the last name", got, c.listed)
	}
	got, _ = c.changes(context.Background(), []driveItem{file("a.md", false), file("", true)}, []connector.Known{{ID: "I-1"}}, false)
	if len(got) != 1 || !got[0].Deleted {
		t.Fatalf("changes of an item changed then deleted = %+v; want one deletion", got)
	}
}

func TestPermissions(t *testing.T) {
	f := newFake(t)
	f.folder("F-POL", "Policies", "root")
	f.put("I-LEAVE", "Leave.md", "F-POL", "# Leave\n\nTwenty days.\n", "Megan Bowen")
	env := connectortest.New(t, "docs", "sharepoint", `{}`)
	c, _ := newConnector(t, f, `{"site_id":"`+siteID+`","permissions":true,"graph_url":"`+f.srv.URL+`/v1.0","login_url":"`+f.srv.URL+`"}`, goodCreds)
	res := env.Sync(t, c, connector.Options{})
	if res.Added != 1 || f.calls["permissions"] != 1 {
		t.Fatalf("sync with permissions = %+v (%v); want 1 added and one permissions request", res, f.calls)
	}
	items, _ := env.DB.ListConnectorItems(context.Background(), connectortest.Tenant, env.Name)
	if len(items) != 1 || !strings.Contains(items[0].Metadata, `"permissions":["organization","sitegroup:engineering members","user:megan@contoso.com"]`) {
		t.Fatalf("recorded items = %+v; want the owner, the site group and the organization link", items)
	}
}

func TestValidateCredentials(t *testing.T) {
	f := newFake(t)
	bad, _ := newConnector(t, f, siteConfig(f, ""), connector.Credentials{"tenant_id": tenantID, "client_id": clientID, "client_secret": "wrong-secret"})
	err := bad.Validate(context.Background())
	if !rag.Is(err, rag.KindPermission) || !strings.Contains(err.Error(), "invalid_client") || strings.Contains(err.Error(), "wrong-secret") {
		t.Fatalf("Validate with a bad secret = %v; want Permission naming invalid_client, without the secret", err)
	}
	good, _ := newConnector(t, f, `{"drive_id":"`+driveID+`","graph_url":"`+f.srv.URL+`/v1.0","login_url":"`+f.srv.URL+`"}`, goodCreds)
	if err := good.Validate(context.Background()); err != nil {
		t.Fatalf("Validate by drive id = %v", err)
	}
	// a stored cursor pointing elsewhere is refused before the token is sent to it
	if _, err := good.Changes(context.Background(), "https://evil.example/v1.0/drives/x/root/delta?token=1", nil); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("Changes with a foreign cursor = %v; want Invalid", err)
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"site_id":"s","folder":"/Policies/HR/","credentials_file":"/etc/docmind/sp.json"}`))
	if err != nil || c.GraphURL != "https://graph.microsoft.com/v1.0" || c.LoginURL != "https://login.microsoftonline.com" || c.Folder != "Policies/HR" || c.File != "/etc/docmind/sp.json" {
		t.Fatalf("ParseConfig = %+v, %v", c, err)
	}
	if _, err := ParseConfig([]byte(`{"site_id":"s","drive_id":"d","graph_url":"ftp://x","folder":"../up"}`)); !rag.Is(err, rag.KindInvalid) ||
		!strings.Contains(err.Error(), "exactly one") || !strings.Contains(err.Error(), "graph_url") || !strings.Contains(err.Error(), "folder") {
		t.Fatalf("bad config = %v; want every problem", err)
	}
	if _, err := ParseConfig([]byte(`{"drive_id":"d","client_secret":"x"}`)); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("a secret in the settings = %v; want Invalid (credentials do not belong there)", err)
	}
}

// TestSyncFigures measures a library of 100 files: the first sync, then an incremental one after 3
// edits, 2 deletions and 1 addition (the figures in docs/connectors.md; times are for scale only).
func TestSyncFigures(t *testing.T) {
	f := newFake(t)
	f.pageSize = 200 // Graph's delta pages hold about 200 items
	f.folder("F-POL", "Policies", "root")
	for i := range 100 {
		id := fmt.Sprintf("I-%03d", i)
		f.put(id, fmt.Sprintf("Policy %03d.md", i), "F-POL", fmt.Sprintf("# Policy %03d\n\nRule %d says the tern%03d form is filed weekly.\n", i, i, i), "Megan Bowen")
	}
	env := connectortest.New(t, "docs", "sharepoint", `{}`)
	c, _ := newConnector(t, f, siteConfig(f, ""), goodCreds)
	start := time.Now()
	res := env.Sync(t, c, connector.Options{})
	first := time.Since(start)
	// token + drive + 1 delta page (102 items) + 100 downloads
	if res.Added != 100 || res.Calls != 103 {
		t.Fatalf("first sync = %+v; want 100 added in 103 calls", res)
	}
	for _, id := range []string{"I-010", "I-020", "I-030"} {
		f.put(id, "Policy "+id[2:]+".md", "F-POL", "# Edited\n\nThe plover form replaces it.\n", "Adele Vance")
	}
	f.remove("I-040")
	f.remove("I-050")
	f.put("I-NEW", "Policy new.md", "F-POL", "# New\n\nThe avocet rule.\n", "Adele Vance")
	start = time.Now()
	res2 := env.Sync(t, c, connector.Options{})
	incr := time.Since(start)
	// 1 delta page + 4 downloads
	if res2.Added != 1 || res2.Updated != 3 || res2.Deleted != 2 || res2.Calls != 5 {
		t.Fatalf("incremental sync = %+v; want 1 added, 3 updated, 2 deleted in 5 calls", res2)
	}
	t.Logf("FIGURES sharepoint: first sync 100 files: %d calls, %s; incremental (3 edited, 2 deleted, 1 added): %d calls, %s",
		res.Calls, first.Round(time.Millisecond), res2.Calls, incr.Round(time.Millisecond))
}

// A file shared with one more person, or unshared, keeps its content and cTag: Graph lists it again only
// when delta is asked for sharing changes (the fake, like Graph, leaves it out otherwise). The next sync
// reads its permissions without downloading it, and its recorded access list follows.
func TestSharingChangeRereadsPermissions(t *testing.T) {
	f := newFake(t)
	f.folder("F-POL", "Policies", "root")
	f.put("I-LEAVE", "Leave.md", "F-POL", "# Leave\n\nTwenty days.\n", "Megan Bowen")
	f.put("I-TRAVEL", "Travel.md", "F-POL", "# Travel\n\nEconomy class.\n", "Megan Bowen")
	env := connectortest.New(t, "docs", "sharepoint", `{}`)
	c, _ := newConnector(t, f, `{"site_id":"`+siteID+`","permissions":true,"graph_url":"`+f.srv.URL+`/v1.0","login_url":"`+f.srv.URL+`"}`, goodCreds)
	if res := env.Sync(t, c, connector.Options{}); res.Added != 2 {
		t.Fatalf("first sync = %+v", res)
	}
	recorded := func(id string) string {
		t.Helper()
		items, _ := env.DB.ListConnectorItems(context.Background(), connectortest.Tenant, env.Name)
		for _, it := range items {
			if it.ID == id {
				return it.Metadata
			}
		}
		t.Fatalf("no record of %s in %+v", id, items)
		return ""
	}
	for _, step := range []struct {
		grant bool
		want  bool
	}{{true, true}, {false, false}} {
		f.share("I-LEAVE", "adele@contoso.com", step.grant)
		perms, downloads := f.calls["permissions"], f.calls["download"]
		res := env.Sync(t, c, connector.Options{})
		if res.Unchanged != 1 || res.Added+res.Updated != 0 || f.calls["permissions"] != perms+1 || f.calls["download"] != downloads {
			t.Fatalf("sync after sharing (grant %v) = %+v, permissions requests %d -> %d, downloads %d -> %d; want one unchanged item whose permissions alone are read",
				step.grant, res, perms, f.calls["permissions"], downloads, f.calls["download"])
		}
		if got := strings.Contains(recorded("I-LEAVE"), "user:adele@contoso.com"); got != step.want {
			t.Fatalf("after sharing (grant %v) the record names adele: %v; want %v: %s", step.grant, got, step.want, recorded("I-LEAVE"))
		}
		if strings.Contains(recorded("I-TRAVEL"), "adele") {
			t.Fatal("the other file's record changed")
		}
	}

	// without permissions the connector does not ask for sharing changes, and Graph does not send them
	plain := newFake(t)
	plain.folder("F-POL", "Policies", "root")
	plain.put("I-LEAVE", "Leave.md", "F-POL", "# Leave\n\nTwenty days.\n", "Megan Bowen")
	env2 := connectortest.New(t, "docs", "sharepoint", `{}`)
	c2, _ := newConnector(t, plain, siteConfig(plain, ""), goodCreds)
	env2.Sync(t, c2, connector.Options{})
	plain.share("I-LEAVE", "adele@contoso.com", true)
	if res := env2.Sync(t, c2, connector.Options{}); res.Unchanged+res.Updated+res.Added != 0 || plain.calls["permissions"] != 0 {
		t.Fatalf("a sync without permissions listed a sharing change: %+v (%v)", res, plain.calls)
	}
}
