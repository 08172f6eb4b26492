package gdrive

import (
	"context"
	"testing"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/connectortest"
	"github.com/docmind/docmind/shared/rag"
)

// A file's sharing at Drive is its document's access list in docmind: a file shared with HR only is
// denied to another member of the knowledge base; sharing it with anyone (a permission change, the
// content unchanged) opens it on the next sync, and taking that back closes it again.
func TestSyncUpdatesAccess(t *testing.T) {
	key, pemKey := newKey(t)
	f := newFake(t, &key.PublicKey)
	f.put(rootFolder, "Handbook", folderMime, "root", "", "Ana Lima")
	f.put("HR", "salaries.md", "text/markdown", rootFolder, "# Salaries\n\nThe heron band pays most.\n", "Ana Lima")
	f.put("OPEN", "leave.md", "text/markdown", rootFolder, "# Leave\n\nTwenty days of leave.\n", "Ana Lima")
	hrOnly := []map[string]any{
		{"kind": "drive#permission", "type": "user", "role": "owner", "emailAddress": "Ana@Acme.example"},
		{"kind": "drive#permission", "type": "group", "role": "reader", "emailAddress": "HR@acme.example"},
	}
	f.change("HR", func(x *ffile) { x.perms = hrOnly })
	env := connectortest.New(t, "drive", "gdrive", `{}`)
	c, _ := newConnector(t, f, folderConfig(f, ""), pemKey)
	if res := env.Sync(t, c, connector.Options{}); res.Added != 2 {
		t.Fatalf("first sync = %+v; want 2 added", res)
	}
	docs := env.Docs(t)
	hr, open := docs["salaries.md"].ID, docs["leave.md"].ID
	guard := access.Guard{Store: env.DB}
	bob := rag.Principal{Tenant: connectortest.Tenant, UserID: "bob", Email: "bob@acme.example", Role: rag.RoleMember}
	inHR := rag.Principal{Tenant: connectortest.Tenant, UserID: "cy", Email: "cy@acme.example", Role: rag.RoleMember, Groups: []string{"hr@acme.example"}}
	ana := rag.Principal{Tenant: connectortest.Tenant, UserID: "ana", Email: "ana@acme.example", Role: rag.RoleMember}
	outsider := rag.Principal{Tenant: connectortest.Tenant, UserID: "zed", Email: "zed@elsewhere.example", Role: rag.RoleMember}
	check := func(when string, p rag.Principal, wantHR, wantOpen bool) {
		t.Helper()
		denied, err := guard.Denied(context.Background(), p, []string{env.KB.ID})
		if err != nil {
			t.Fatal(err)
		}
		if !denied[hr] != wantHR || !denied[open] != wantOpen {
			t.Fatalf("%s, %s: reads salaries.md %v, leave.md %v; want %v, %v", when, p.Email, !denied[hr], !denied[open], wantHR, wantOpen)
		}
	}
	check("first sync", bob, false, true) // leave.md is shared with the domain
	check("first sync", inHR, true, true)
	check("first sync", ana, true, true) // the owner, named in mixed case at the source
	check("first sync", outsider, false, false)

	f.change("HR", func(x *ffile) {
		x.perms = append(append([]map[string]any{}, hrOnly...), map[string]any{"kind": "drive#permission", "type": "anyone", "role": "reader"})
	})
	res := env.Sync(t, c, connector.Options{})
	if res.Listed != 1 || len(res.Failed) != 0 {
		t.Fatalf("sync after sharing with anyone = %+v; want the one file listed", res)
	}
	check("shared with anyone", bob, true, true)
	check("shared with anyone", outsider, true, false)

	f.change("HR", func(x *ffile) { x.perms = hrOnly })
	env.Sync(t, c, connector.Options{})
	check("back to HR only", bob, false, true)
	check("back to HR only", inHR, true, true)
}
