package confluence

import (
	"cmp"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/connectortest"
	"github.com/docmind/docmind/shared/netx"
	"github.com/docmind/docmind/shared/rag"
)

func newConnector(t *testing.T, f *fake, creds connector.Credentials) (*Connector, *connector.HTTP) {
	cfg, err := ParseConfig([]byte(`{"url":"` + f.srv.URL + `/wiki","space":"ENG","page_size":2}`))
	if err != nil {
		t.Fatal(err)
	}
	p, h, _ := netx.ParseAllowList("127.0.0.1")
	hc := &connector.HTTP{Client: netx.NewClient(netx.Options{Allow: p, AllowHosts: h}),
		Sleep: func(context.Context, time.Duration) error { return nil }}
	c := New(cfg, creds, hc)
	c.Now = f.clock
	return c, hc
}

var goodCreds = connector.Credentials{"email": "bot@example.com", "token": "api-token"}

func TestSyncAgainstFake(t *testing.T) {
	f := newFake(t)
	f.put("1001", "Onboarding", "<p>New staff collect a <strong>heron badge</strong> on day one.</p>")
	f.put("1002", "Deploys", "<p>Deploys freeze on Fridays after noon.</p>")
	f.put("1003", "On-call", "<p>The pager rotates every <em>seven</em> days.</p>")
	f.put("1004", "Budget", "<p>The osprey budget closes in March.</p>")
	f.put("1005", "Glossary", "<table><tr><th>Term</th><th>Meaning</th></tr><tr><td>walrus</td><td>a rollback</td></tr></table>")
	env := connectortest.New(t, "wiki", "confluence", `{}`)
	c, hc := newConnector(t, f, goodCreds)
	f.advance(10 * time.Minute) // the pages were written before the first sync
	f.limit = 1                 // the first request is rate limited

	start := time.Now()
	res := env.Sync(t, c, connector.Options{})
	t.Logf("first sync: %+v in %s", res, time.Since(start))
	if res.Added != 5 || len(res.Failed) != 0 || res.Status != rag.SyncOK {
		t.Fatalf("first sync = %+v; want 5 added", res)
	}
	// 429 + space lookup + 3 pages of 2 listed with bodies + the homepage's ancestors (the pages'
	// parent, not listed) + 6 view restrictions (the 5 pages and the homepage, each once)
	if res.Calls != 12 || len(hc.Waits) != 1 || hc.Waits[0] != 2*time.Second {
		t.Fatalf("first sync calls %d, waits %v; want 12 calls and one 2s wait for Retry-After", res.Calls, hc.Waits)
	}
	docs := env.Docs(t)
	if docs["Deploys.html"].Status != rag.StatusReady || !strings.Contains(env.Text(t, docs["Glossary.html"].ID), "walrus") {
		t.Fatalf("documents after the first sync = %v", docs)
	}

	// edit one page, add one, trash one, purge one
	f.advance(10 * time.Minute)
	f.put("1002", "Deploys", "<p>Deploys now freeze on Thursdays after the lantern review.</p>")
	f.put("1006", "Incidents", "<p>Every incident gets a kestrel number.</p>")
	f.pages["1003"].status = "trashed"
	delete(f.pages, "1004")
	f.advance(10 * time.Minute)
	start = time.Now()
	res = env.Sync(t, c, connector.Options{})
	t.Logf("incremental sync: %+v in %s", res, time.Since(start))
	if res.Added != 1 || res.Updated != 1 || res.Deleted != 2 || len(res.Failed) != 0 {
		t.Fatalf("incremental sync = %+v; want 1 added, 1 updated, 2 deleted (trashed and purged)", res)
	}
	// one CQL search page, two fetches, the 5 known ids checked in one request; the restrictions of
	// the two pages and their parent (the homepage: its ancestors asked for once)
	if res.Calls != 8 || res.Listed != 4 || !strings.Contains(f.lastCQL, `lastmodified >= "2026/05/01 09:08"`) {
		t.Fatalf("incremental sync calls %d, cql %q; want 8 calls and the previous sync's cursor", res.Calls, f.lastCQL)
	}
	docs = env.Docs(t)
	if _, ok := docs["On-call.html"]; ok {
		t.Error("the trashed page is still indexed")
	}
	if _, ok := docs["Budget.html"]; ok {
		t.Error("the purged page is still indexed")
	}
	meta, _ := env.DB.GetDocumentMetadata(context.Background(), connectortest.Tenant, docs["Deploys.html"].ID)
	if meta["source"] != "confluence" || meta["space"] != "ENG" || meta["version"] != "2" || meta["modified"] != "2026-05-01T09:20:00Z" ||
		!strings.HasSuffix(meta["url"].(string), "/wiki/spaces/ENG/pages/1002") {
		t.Errorf("Deploys' metadata after the edit = %v; want source, space, version 2, modified, url", meta)
	}
	if got := env.TopDocument(t, "lantern review Thursdays"); got != docs["Deploys.html"].ID {
		t.Errorf("top document for the edited words = %q; want Deploys %q", got, docs["Deploys.html"].ID)
	}

	// nothing changed since: the search finds nothing, nothing is fetched
	f.advance(10 * time.Minute)
	res = env.Sync(t, c, connector.Options{})
	t.Logf("incremental sync, no change: %+v", res)
	if res.Added+res.Updated+res.Deleted+len(res.Failed) != 0 || res.Calls != 2 {
		t.Fatalf("unchanged sync = %+v; want nothing done in 2 calls (search + the known ids checked)", res)
	}
}

func TestValidateAndRateLimits(t *testing.T) {
	f := newFake(t)
	bad, _ := newConnector(t, f, connector.Credentials{"email": "bot@example.com", "token": "wrong"})
	if err := bad.Validate(context.Background()); !rag.Is(err, rag.KindPermission) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("Validate with a bad token = %v; want Permission without the token", err)
	}
	good, hc := newConnector(t, f, goodCreds)
	if err := good.Validate(context.Background()); err != nil {
		t.Fatalf("Validate = %v", err)
	}
	f.limit = 10
	hc.MaxRetries = 3
	if _, err := good.Fetch(context.Background(), "1001", connector.Known{}); !rag.Is(err, rag.KindUnavailable) || len(hc.Waits) != 3 {
		t.Fatalf("Fetch while rate limited = %v after %v; want Unavailable after 3 waits", err, hc.Waits)
	}
}

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(`{"url":"https://acme.atlassian.net/wiki/","space":"ENG","credentials_file":"/etc/docmind/wiki.json"}`))
	if err != nil || c.URL != "https://acme.atlassian.net/wiki" || c.PageSize != 250 || c.File != "/etc/docmind/wiki.json" {
		t.Fatalf("ParseConfig = %+v, %v", c, err)
	}
	if _, err := ParseConfig([]byte(`{"url":"acme","space":"","page_size":900}`)); !rag.Is(err, rag.KindInvalid) ||
		!strings.Contains(err.Error(), "url") || !strings.Contains(err.Error(), "space") || !strings.Contains(err.Error(), "page_size") {
		t.Fatalf("bad config = %v; want every problem", err)
	}
	if _, err := ParseConfig([]byte(`{"url":"https://a/wiki","space":"E","token":"x"}`)); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("a token in the settings = %v; want Invalid (credentials do not belong there)", err)
	}
}

// View restrictions become access lists: inherited from restricted ancestors, the principals every
// restricted level names, NoOne when no principal is named by all, none for an unrestricted tree; read
// for listed pages (first sync) and fetched ones (incremental, its parent's chain asked for), and not
// at all with "permissions": false.
func TestRestrictions(t *testing.T) {
	f := newFake(t)
	f.put("2001", "HR", "<p>The HR space.</p>")
	f.put("2002", "Salaries", "<p>Salary bands are reviewed in May.</p>")
	f.put("2003", "Reviews", "<p>Reviews are written in June.</p>")
	f.put("2004", "Handbook", "<p>The handbook is open to all.</p>")
	f.put("2005", "Board", "<p>Board minutes.</p>")
	f.put("2006", "Acquisitions", "<p>The acquisition code word.</p>")
	f.pages["2001"].readGroups = []string{"HR-Team"}
	f.pages["2002"].parent = "2001"
	f.pages["2003"].parent = "2001"
	f.pages["2003"].readUsers = []string{"acc-1|ana@example.com"}
	f.pages["2005"].readUsers = []string{"acc-2"} // the address hidden by the profile's visibility
	f.pages["2005"].readGroups = []string{"board"}
	f.pages["2006"].parent = "2005"
	f.pages["2006"].readGroups = []string{"board"}
	want := map[string]string{
		"2001": `"permissions":["group:hr-team"]`,
		"2002": `"permissions":["group:hr-team"]`, // inherited
		"2003": `"permissions":["` + NoOne + `"]`, // a user here, a group above: no common principal
		"2004": "",                                // open: no access list
		"2005": `"permissions":["group:board","user:acc-2"]`,
		"2006": `"permissions":["group:board"]`, // the principal both levels name
	}
	env := connectortest.New(t, "wiki", "confluence", `{}`)
	c, _ := newConnector(t, f, goodCreds)
	f.advance(10 * time.Minute)
	check := func(stage string) {
		t.Helper()
		items, _ := env.DB.ListConnectorItems(context.Background(), connectortest.Tenant, env.Name)
		if len(items) != len(want) {
			t.Fatalf("%s: %d items recorded", stage, len(items))
		}
		for _, it := range items {
			w := want[it.ID]
			if (w == "" && strings.Contains(it.Metadata, `"permissions"`)) || (w != "" && !strings.Contains(it.Metadata, w)) {
				t.Errorf("%s: page %s recorded %s; want %s", stage, it.ID, it.Metadata, cmp.Or(w, "no permissions"))
			}
		}
	}
	if res := env.Sync(t, c, connector.Options{}); res.Added != 6 || len(res.Failed) != 0 {
		t.Fatalf("first sync = %+v", res)
	}
	check("first sync")

	// an edit is fetched on its own: the chain above it is asked for, its list unchanged; a new
	// restriction above an edited page narrows it
	f.advance(10 * time.Minute)
	f.put("2002", "Salaries", "<p>Salary bands are reviewed in April.</p>")
	f.put("2006", "Acquisitions", "<p>The acquisition code word changed.</p>")
	f.pages["2005"].readGroups = nil // the board group leaves the parent: only acc-2 is left there
	want["2006"] = `"permissions":["` + NoOne + `"]`
	f.advance(10 * time.Minute)
	if res := env.Sync(t, c, connector.Options{}); res.Updated != 2 || len(res.Failed) != 0 {
		t.Fatalf("incremental sync = %+v", res)
	}
	want["2005"] = `"permissions":["group:board","user:acc-2"]` // not edited: not read again (see the docs)
	check("incremental sync")

	// "permissions": false reads none
	cfg, _ := ParseConfig([]byte(`{"url":"` + f.srv.URL + `/wiki","space":"ENG","permissions":false}`))
	plain := New(cfg, goodCreds, c.http)
	plain.Now = f.clock
	before := f.calls["/wiki/rest/api/content/2001/restriction/byOperation/read"]
	env2 := connectortest.New(t, "wiki", "confluence", `{}`)
	env2.Sync(t, plain, connector.Options{})
	items, _ := env2.DB.ListConnectorItems(context.Background(), connectortest.Tenant, env2.Name)
	for _, it := range items {
		if strings.Contains(it.Metadata, `"permissions"`) {
			t.Errorf("permissions false recorded %s", it.Metadata)
		}
	}
	if f.calls["/wiki/rest/api/content/2001/restriction/byOperation/read"] != before || len(items) != 6 {
		t.Errorf("permissions false: %d items, restrictions read %d more times", len(items), f.calls["/wiki/rest/api/content/2001/restriction/byOperation/read"]-before)
	}

	// switched on (or upgraded from a version that did not read them): the next incremental sync
	// fetches the known pages again and records their lists, re-embedding nothing
	want["2005"] = `"permissions":["user:acc-2"]` // read now: the group left it above
	on := New(mustConfig(t, `{"url":"`+f.srv.URL+`/wiki","space":"ENG"}`), goodCreds, c.http)
	on.Now = f.clock
	f.advance(10 * time.Minute)
	res := env2.Sync(t, on, connector.Options{})
	if res.Unchanged != 6 || res.Added+res.Updated+res.Deleted+len(res.Failed) != 0 {
		t.Fatalf("first sync reading restrictions = %+v; want the 6 pages fetched again, unchanged", res)
	}
	items, _ = env2.DB.ListConnectorItems(context.Background(), connectortest.Tenant, env2.Name)
	for _, it := range items {
		if w := want[it.ID]; (w == "") == strings.Contains(it.Metadata, `"permissions"`) || (w != "" && !strings.Contains(it.Metadata, w)) {
			t.Errorf("after switching on, page %s recorded %s; want %s", it.ID, it.Metadata, cmp.Or(w, "no permissions"))
		}
	}
	if res := env2.Sync(t, on, connector.Options{}); res.Unchanged+res.Updated != 0 {
		t.Fatalf("the sync after = %+v; want nothing fetched again", res)
	}
}

func mustConfig(t *testing.T, raw string) Config {
	t.Helper()
	c, err := ParseConfig([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
