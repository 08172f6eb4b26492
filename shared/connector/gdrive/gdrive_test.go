package gdrive

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

func newConnector(t *testing.T, f *fake, config string, pemKey string) (*Connector, *connector.HTTP) {
	t.Helper()
	cfg, err := ParseConfig([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	p, h, _ := netx.ParseAllowList("127.0.0.1")
	hc := &connector.HTTP{Client: netx.NewClient(netx.Options{Allow: p, AllowHosts: h}),
		Sleep: func(context.Context, time.Duration) error { return nil }}
	// the fields of a service account key file as Google issues it
	creds := connector.Credentials{"type": "service_account", "project_id": "acme-docs", "private_key_id": "8f2c1b7e",
		"private_key": pemKey, "client_email": saEmail, "client_id": "104729385716", "token_uri": f.srv.URL + "/token"}
	return New(cfg, creds, hc), hc
}

func folderConfig(f *fake, extra string) string {
	return `{"folder_id":"` + rootFolder + `","endpoint":"` + f.srv.URL + `/drive/v3","page_size":2` + extra + `}`
}

func TestSyncAgainstFake(t *testing.T) {
	key, pemKey := newKey(t)
	f := newFake(t, &key.PublicKey)
	f.put(rootFolder, "Handbook", folderMime, "root", "", "Ana Lima")
	f.put("F-SUB", "Teams", folderMime, rootFolder, "", "Ana Lima")
	f.put("F-OTHER", "Elsewhere", folderMime, "root", "", "Ana Lima")
	f.put("DOC1", "Leave Policy", docMime, rootFolder, "# Leave Policy\n\nStaff take twenty days of heron leave.\n", "Ana Lima")
	f.put("GUIDE", "guide.txt", "text/plain", rootFolder, "The guide describes the badger review.\n", "Ben Ode")
	f.put("FORM", "Feedback", formMime, rootFolder, "", "Ben Ode") // no text to index: skipped
	f.put("BROKEN", "broken.md", "text/markdown", rootFolder, "# Broken\n\nThe walrus rule applies.\n", "Ben Ode")
	f.put("SHEET1", "Budget", sheetMime, "F-SUB", "team,amount\nosprey,1200\n", "Ben Ode")
	f.put("NOTES", "notes.md", "text/markdown", "F-SUB", "# Notes\n\nThe pelican meeting is on Tuesdays.\n", "Ben Ode")
	f.put("KEEP", "keep.md", "text/markdown", "F-SUB", "# Keep\n\nThe ibis list stays.\n", "Ben Ode")
	f.put("OUT", "outside.md", "text/markdown", "F-OTHER", "# Outside\n\nNot in the folder.\n", "Ben Ode")
	f.files["BROKEN"].failMedia = 1
	env := connectortest.New(t, "drive", "gdrive", `{}`)
	c, hc := newConnector(t, f, folderConfig(f, `,"impersonate":"ana@acme.example"`), pemKey)
	f.limit = 1 // the first Drive request is rate limited

	start := time.Now()
	res, _ := env.Engine.Sync(context.Background(), connectortest.Tenant, env.Name, c, connector.Options{})
	t.Logf("first sync: %+v in %s", res, time.Since(start))
	if res.Added != 5 || len(res.Failed) != 1 || res.Failed[0].ID != "BROKEN" || res.Status != rag.SyncPartial {
		t.Fatalf("first sync = %+v; want 5 added and broken.md failed without stopping the run", res)
	}
	// token + 429 + 2 folder-tree levels + startPageToken + 4 pages of files (7 by 2) + 6 downloads/exports
	if res.Calls != 15 || f.calls["token"] != 1 || len(hc.Waits) != 1 || hc.Waits[0] != 5*time.Second {
		t.Fatalf("first sync calls %d (%v), waits %v; want 15 calls, one token, one 5s wait", res.Calls, f.calls, hc.Waits)
	}
	if len(f.subjects) != 1 || f.subjects[0] != "ana@acme.example" {
		t.Fatalf("JWT subjects = %v; want the impersonated user", f.subjects)
	}
	docs := env.Docs(t)
	if len(docs) != 5 || docs["Leave Policy.md"].Status != rag.StatusReady || docs["Budget.csv"].Status != rag.StatusReady || docs["outside.md"].ID != "" {
		t.Fatalf("documents after the first sync = %v; want the 5 readable files of the folder tree", docs)
	}
	if !strings.Contains(env.Text(t, docs["Budget.csv"].ID), "osprey") {
		t.Error("the exported sheet's text is not indexed")
	}
	meta, _ := env.DB.GetDocumentMetadata(context.Background(), connectortest.Tenant, docs["Leave Policy.md"].ID)
	if meta["source"] != "gdrive" || meta["author"] != "Ana Lima" || meta["mime_type"] != docMime || meta["modified"] != "2026-07-01T10:00:00Z" ||
		meta["url"] != "https://docs.google.com/document/d/DOC1/edit?usp=drivesdk" || meta["title"] != "Leave Policy" {
		t.Errorf("Leave Policy's metadata = %v", meta)
	}
	if meta, _ := env.DB.GetDocumentMetadata(context.Background(), connectortest.Tenant, docs["notes.md"].ID); meta["folder"] != "Teams" || meta["modified_by"] != "Ben Ode" {
		t.Errorf("notes.md's metadata = %v; want folder Teams, modified_by", meta)
	}
	items, _ := env.DB.ListConnectorItems(context.Background(), connectortest.Tenant, env.Name)
	perms := ""
	for _, it := range items {
		if it.ID == "DOC1" {
			perms = it.Metadata
		}
	}
	if !strings.Contains(perms, `"permissions":["domain:acme.example","user:ana@acme.example"]`) {
		t.Errorf("DOC1's recorded item = %s; want the owner and the domain as permissions", perms)
	}

	// edit the doc, add a file, trash one, delete one for good, move the sheet out of the tree, add a
	// subfolder with a file, star keep.md (a metadata change); broken.md downloads now
	f.now = f.now.Add(time.Hour)
	f.put("DOC1", "Leave Policy", docMime, rootFolder, "# Leave Policy\n\nStaff now take twenty-five days of lantern leave.\n", "Caro Diaz")
	f.put("INC", "incidents.md", "text/markdown", rootFolder, "# Incidents\n\nEvery incident gets a kestrel number.\n", "Caro Diaz")
	f.change("GUIDE", func(x *ffile) { x.trashed = true })
	f.change("NOTES", func(x *ffile) { x.gone = true })
	f.change("SHEET1", func(x *ffile) { x.parents = []string{"F-OTHER"} })
	f.put("F-SUB2", "Runbooks", folderMime, rootFolder, "", "Caro Diaz")
	f.put("RUN", "runbook.md", "text/markdown", "F-SUB2", "# Runbook\n\nRestart the heron queue first.\n", "Caro Diaz")
	f.change("KEEP", func(x *ffile) {})
	before := f.calls["media"] + f.calls["export"]
	start = time.Now()
	res = env.Sync(t, c, connector.Options{})
	t.Logf("incremental sync: %+v in %s", res, time.Since(start))
	if res.Added != 3 || res.Updated != 1 || res.Deleted != 3 || res.NotModified != 1 || len(res.Failed) != 0 || res.Status != rag.SyncOK {
		t.Fatalf("incremental sync = %+v; want 3 added (new, new in a new subfolder, retried), 1 updated, 3 deleted (trashed, removed, moved out), 1 not modified", res)
	}
	// 2 folder-tree levels + 4 change pages (8 changes by 2) + broken.md's metadata + 4 downloads;
	// the token is cached and keep.md is not downloaded
	if got := f.calls["media"] + f.calls["export"] - before; got != 4 || f.calls["token"] != 1 || res.Calls != 11 {
		t.Fatalf("incremental sync: %d downloads, %d token requests, %d calls (%v); want 4, 1, 11", got, f.calls["token"], res.Calls, f.calls)
	}
	docs = env.Docs(t)
	for _, gone := range []string{"guide.txt", "notes.md", "Budget.csv"} {
		if _, ok := docs[gone]; ok {
			t.Errorf("%s is still indexed after its deletion", gone)
		}
	}
	if docs["runbook.md"].Status != rag.StatusReady || docs["broken.md"].Status != rag.StatusReady {
		t.Errorf("documents after the incremental sync = %v", docs)
	}
	if got := env.TopDocument(t, "lantern leave"); got != docs["Leave Policy.md"].ID {
		t.Errorf("top document for the edited words = %q; want Leave Policy %q", got, docs["Leave Policy.md"].ID)
	}
	if strings.Contains(env.Text(t, docs["Leave Policy.md"].ID), "heron") {
		t.Error("the old text of Leave Policy is still indexed")
	}

	// the Teams folder is trashed: the feed names the folder only, and keep.md under it is deleted
	f.change("F-SUB", func(x *ffile) { x.trashed = true })
	res = env.Sync(t, c, connector.Options{})
	t.Logf("folder trashed: %+v", res)
	if res.Deleted != 1 || res.Added+res.Updated != 0 || res.Calls != 3 {
		t.Fatalf("sync after trashing a folder = %+v; want keep.md deleted in 3 calls", res)
	}
	if _, ok := env.Docs(t)["keep.md"]; ok {
		t.Error("keep.md is still indexed after its folder was trashed")
	}

	// nothing changed: the tree and one change page
	res = env.Sync(t, c, connector.Options{})
	if res.Listed != 0 || res.Calls != 3 {
		t.Fatalf("unchanged sync = %+v; want nothing listed in 3 calls", res)
	}
}

func TestSharedDrive(t *testing.T) {
	key, pemKey := newKey(t)
	f := newFake(t, &key.PublicKey)
	f.shared = "0ABcDeFgHiJkLUk9PVA"
	f.put("DOC1", "Leave Policy", docMime, f.shared, "# Leave\n\nTwenty days of heron leave.\n", "Ana Lima")
	f.put("RUN", "runbook.md", "text/markdown", f.shared, "# Runbook\n\nRestart the queue.\n", "Ben Ode")
	env := connectortest.New(t, "drive", "gdrive", `{}`)
	c, _ := newConnector(t, f, `{"drive_id":"`+f.shared+`","endpoint":"`+f.srv.URL+`/drive/v3"}`, pemKey)
	if err := c.Validate(context.Background()); err != nil {
		t.Fatalf("Validate on a shared drive = %v", err)
	}
	res := env.Sync(t, c, connector.Options{})
	if res.Added != 2 || len(res.Failed) != 0 {
		t.Fatalf("first sync of a shared drive = %+v; want 2 added", res)
	}
	f.put("DOC1", "Leave Policy", docMime, f.shared, "# Leave\n\nTwenty-five days of lantern leave.\n", "Caro Diaz")
	// runbook.md is edited, then trashed: the feed names it twice (each with its current state) and it
	// is deleted once
	f.put("RUN", "runbook.md", "text/markdown", f.shared, "# Runbook\n\nRestart the queue twice.\n", "Ben Ode")
	f.change("RUN", func(x *ffile) { x.trashed = true })
	res = env.Sync(t, c, connector.Options{})
	if res.Updated != 1 || res.Deleted != 1 || res.Listed != 2 || len(res.Failed) != 0 {
		t.Fatalf("incremental sync of a shared drive = %+v; want 2 listed: 1 updated, 1 deleted", res)
	}
	docs := env.Docs(t)
	meta, _ := env.DB.GetDocumentMetadata(context.Background(), connectortest.Tenant, docs["Leave Policy.md"].ID)
	if meta["author"] != "Caro Diaz" || meta["drive_id"] != f.shared {
		t.Errorf("metadata of a shared drive's Doc = %v; want the last modifying user as author (no owners) and the drive id", meta)
	}
}

func TestDryRunWritesNothing(t *testing.T) {
	key, pemKey := newKey(t)
	f := newFake(t, &key.PublicKey)
	f.put("DOC1", "Leave Policy", docMime, "root", "# Leave\n\nTwenty days.\n", "Ana Lima")
	env := connectortest.New(t, "drive", "gdrive", `{}`)
	c, _ := newConnector(t, f, `{"endpoint":"`+f.srv.URL+`/drive/v3"}`, pemKey)
	res := env.Sync(t, c, connector.Options{DryRun: true})
	if res.Added != 1 || len(res.Items) != 1 || res.Items[0].Name != "Leave Policy.md" || res.Items[0].Metadata["author"] != "Ana Lima" {
		t.Fatalf("dry run = %+v; want Leave Policy.md to be added", res)
	}
	if len(env.Docs(t)) != 0 {
		t.Fatal("a dry run indexed documents")
	}
}

func TestValidateCredentials(t *testing.T) {
	key, pemKey := newKey(t)
	_, otherKey := newKey(t)
	f := newFake(t, &key.PublicKey)
	f.put(rootFolder, "Handbook", folderMime, "root", "", "Ana Lima")
	f.put("DOC1", "Leave Policy", docMime, rootFolder, "x", "Ana Lima")
	bad, _ := newConnector(t, f, folderConfig(f, ""), otherKey)
	err := bad.Validate(context.Background())
	if !rag.Is(err, rag.KindPermission) || !strings.Contains(err.Error(), "invalid_grant") || strings.Contains(err.Error(), "PRIVATE KEY") {
		t.Fatalf("Validate with a key Google does not know = %v; want Permission naming invalid_grant, without the key", err)
	}
	good, _ := newConnector(t, f, folderConfig(f, ""), pemKey)
	if err := good.Validate(context.Background()); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	// Drive's 403 userRateLimitExceeded is backed off (1 s, 2 s), not taken for a refusal
	f.limit403 = 2
	limited, hc := newConnector(t, f, folderConfig(f, ""), pemKey)
	if err := limited.Validate(context.Background()); err != nil || len(hc.Waits) != 2 || hc.Waits[0] != time.Second || hc.Waits[1] != 2*time.Second {
		t.Fatalf("Validate through two 403 rate limits = %v after waits %v; want success after 1s and 2s", err, hc.Waits)
	}
	f.limit403 = 10
	if err := limited.Validate(context.Background()); !rag.Is(err, rag.KindUnavailable) || len(hc.Waits)-2 != 4 {
		t.Fatalf("Validate while Drive keeps limiting = %v after waits %v; want Unavailable after 4 more waits", err, hc.Waits)
	}
	f.limit403 = 0
	notFolder, _ := newConnector(t, f, `{"folder_id":"DOC1","endpoint":"`+f.srv.URL+`/drive/v3"}`, pemKey)
	if err := notFolder.Validate(context.Background()); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("Validate with a document as the folder = %v; want Invalid", err)
	}
	garbled, _ := newConnector(t, f, folderConfig(f, ""), "not a key")
	if err := garbled.Validate(context.Background()); !rag.Is(err, rag.KindInvalid) || strings.Contains(err.Error(), "not a key") {
		t.Fatalf("Validate with a garbled key = %v; want Invalid without the value", err)
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"folder_id":"1AbC","credentials_file":"/etc/docmind/sa.json"}`))
	if err != nil || c.Endpoint != "https://www.googleapis.com/drive/v3" || c.PageSize != 100 || c.File != "/etc/docmind/sa.json" {
		t.Fatalf("ParseConfig = %+v, %v", c, err)
	}
	if _, err := ParseConfig([]byte(`{"folder_id":"a' or 'b","endpoint":"ftp://x","page_size":5000}`)); !rag.Is(err, rag.KindInvalid) ||
		!strings.Contains(err.Error(), "folder_id") || !strings.Contains(err.Error(), "endpoint") || !strings.Contains(err.Error(), "page_size") {
		t.Fatalf("bad config = %v; want every problem", err)
	}
	if _, err := ParseConfig([]byte(`{"private_key":"x"}`)); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("a key in the settings = %v; want Invalid (credentials do not belong there)", err)
	}
}

// TestSyncFigures measures a folder of 100 files: the first sync, then an incremental one after 3
// edits, 2 deletions and 1 addition (the figures in docs/connectors.md; times are for scale only).
func TestSyncFigures(t *testing.T) {
	key, pemKey := newKey(t)
	f := newFake(t, &key.PublicKey)
	f.put(rootFolder, "Handbook", folderMime, "root", "", "Ana Lima")
	for i := range 100 {
		f.put(fmt.Sprintf("F%03d", i), fmt.Sprintf("policy %03d.md", i), "text/markdown", rootFolder,
			fmt.Sprintf("# Policy %03d\n\nRule %d says the tern%03d form is filed weekly.\n", i, i, i), "Ana Lima")
	}
	env := connectortest.New(t, "drive", "gdrive", `{}`)
	c, _ := newConnector(t, f, `{"folder_id":"`+rootFolder+`","endpoint":"`+f.srv.URL+`/drive/v3"}`, pemKey)
	start := time.Now()
	res := env.Sync(t, c, connector.Options{})
	first := time.Since(start)
	// token + startPageToken + 1 folder-tree level + 1 files page (100 by 100) + 100 downloads
	if res.Added != 100 || res.Calls != 104 {
		t.Fatalf("first sync = %+v; want 100 added in 104 calls", res)
	}
	for _, id := range []string{"F010", "F020", "F030"} {
		f.change(id, func(x *ffile) { x.data = "# Edited\n\nThe plover form replaces it.\n" })
	}
	f.change("F040", func(x *ffile) { x.trashed = true })
	f.change("F050", func(x *ffile) { x.gone = true })
	f.put("NEW", "policy new.md", "text/markdown", rootFolder, "# New\n\nThe avocet rule.\n", "Caro Diaz")
	start = time.Now()
	res2 := env.Sync(t, c, connector.Options{})
	incr := time.Since(start)
	// 1 folder-tree level + 1 change page + 4 downloads
	if res2.Added != 1 || res2.Updated != 3 || res2.Deleted != 2 || res2.Calls != 6 {
		t.Fatalf("incremental sync = %+v; want 1 added, 3 updated, 2 deleted in 6 calls", res2)
	}
	t.Logf("FIGURES gdrive: first sync 100 files: %d calls, %s; incremental (3 edited, 2 deleted, 1 added): %d calls, %s",
		res.Calls, first.Round(time.Millisecond), res2.Calls, incr.Round(time.Millisecond))
}
