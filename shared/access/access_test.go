package access

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"User:Ann@Example.COM ": "user:ann@example.com",
		"group:HR":              "group:hr",
		"domain:Example.com":    "domain:example.com",
		"anyone":                "anyone",
		"ANYONE":                "anyone",
		"sitegroup:HR Members":  "sitegroup:hr members",
		"user:":                 "",
		":x":                    "",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q; want %q", in, got, want)
		}
	}
	if got := NormalizeAll([]string{"user:B@x.io", "user:b@x.io", "", "group:a"}); !slices.Equal(got, []string{"group:a", "user:b@x.io"}) {
		t.Errorf("NormalizeAll = %q", got)
	}
	if NormalizeAll(nil) != nil || NormalizeAll([]string{}) != nil {
		t.Error("an empty list must stay nil: no access list")
	}
}

func TestIdentities(t *testing.T) {
	m, err := ParseMap(`{"group:HR":["sitegroup:HR Members"],"domain:x.io":["organization"]}`)
	if err != nil {
		t.Fatal(err)
	}
	ids := Identities(rag.Principal{Email: "Ann@X.io", Groups: []string{"HR"}}, m)
	for _, want := range []string{"anyone", "user:ann@x.io", "domain:x.io", "group:hr", "sitegroup:hr members", "organization"} {
		if !ids[want] {
			t.Errorf("identities %v lack %q", ids, want)
		}
	}
	// a token's unverified email was replaced by a synthetic one: it grants nothing
	synth := Identities(rag.Principal{Email: "sub-0123@subject.invalid"}, nil)
	if len(synth) != 1 || !synth["anyone"] {
		t.Errorf("synthetic email identities %v; want only anyone", synth)
	}
	if _, err := ParseMap(`{"group:hr": "x"}`); err == nil {
		t.Error("a map value that is not a list must be refused")
	}
	if _, err := ParseMap(`{"": ["x"]}`); err == nil {
		t.Error("an empty key must be refused")
	}
}

func TestSettings(t *testing.T) {
	rest, on, err := SplitSettings([]byte(`{"url":"https://x","enforce_permissions":false}`))
	if err != nil || on || string(rest) != `{"url":"https://x"}` {
		t.Fatalf("SplitSettings = %s, %v, %v", rest, on, err)
	}
	if _, on, err := SplitSettings([]byte(`{"url":"https://x"}`)); err != nil || !on {
		t.Fatalf("default: %v, %v; want on", on, err)
	}
	if _, _, err := SplitSettings([]byte(`{"enforce_permissions":"no"}`)); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("a string: %v; want Invalid", err)
	}
	if Enforced(`{"enforce_permissions":false}`) || !Enforced(`{}`) || !Enforced(`not json`) {
		t.Fatal("Enforced: off only when set false")
	}
}

// fakeStore is the relational store as Denied reads it.
type fakeStore struct {
	conns []rag.Connector
	items map[string][]rag.ConnectorItem // tenant/connector -> items
	docs  []rag.Document
}

func (f *fakeStore) ListConnectors(_ context.Context, tenant string) ([]rag.Connector, error) {
	var out []rag.Connector
	for _, c := range f.conns {
		if c.Tenant == tenant {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeStore) ListConnectorItems(_ context.Context, tenant, connector string) ([]rag.ConnectorItem, error) {
	return f.items[tenant+"/"+connector], nil
}

func (f *fakeStore) ListDocuments(_ context.Context, tenant, kb, _ string) ([]rag.Document, error) {
	var out []rag.Document
	for _, d := range f.docs {
		if d.Tenant == tenant && d.KBID == kb {
			out = append(out, d)
		}
	}
	return out, nil
}

// Denied against a brute force over random access lists and random principals: a document is denied
// exactly when it comes from an enforcing connector of one of the knowledge bases asked, in the
// principal's tenant, the principal is not an admin, and its list (known, decodable) has no principal
// the principal holds. Another tenant's documents are never in the answer.
func TestDeniedProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	universe := []string{"user:ann@x.io", "user:bob@x.io", "user:eve@y.io", "group:hr", "group:eng", "domain:x.io", "domain:y.io", "anyone", "sitegroup:legal"}
	emails := []string{"ann@x.io", "bob@x.io", "eve@y.io", "zed@z.io", ""}
	groups := []string{"hr", "eng", "sales"}
	accessMap := Map{"group:eng": {"sitegroup:legal"}}
	for round := range 200 {
		st := &fakeStore{items: map[string][]rag.ConnectorItem{}}
		type truth struct {
			tenant, kb string
			list       []string
			known      bool
			broken     bool
			enforced   bool
			connector  bool
		}
		want := map[string]truth{}
		for _, tenant := range []string{"t1", "t2"} {
			for k := range 2 {
				kb := fmt.Sprintf("kb_%s_%d", tenant, k)
				for c := range 2 {
					name := fmt.Sprintf("c%s%d%d", tenant, k, c)
					cfg := `{}`
					enforced := rng.IntN(4) != 0
					if !enforced {
						cfg = `{"enforce_permissions":false}`
					}
					st.conns = append(st.conns, rag.Connector{Tenant: tenant, Name: name, KBID: kb, Config: cfg})
					for i := range 1 + rng.IntN(6) {
						uri := SourcePrefix(name) + fmt.Sprint(i)
						d := rag.Document{ID: fmt.Sprintf("doc_%s_%d", name, i), Tenant: tenant, KBID: kb, SourceURI: uri}
						st.docs = append(st.docs, d)
						tr := truth{tenant: tenant, kb: kb, enforced: enforced, connector: true, known: rng.IntN(8) != 0}
						if tr.known {
							var list []string
							for range rng.IntN(4) {
								list = append(list, universe[rng.IntN(len(universe))])
							}
							b, _ := json.Marshal(list)
							rec := `{"url":"u","permissions":` + string(b) + `}`
							if list == nil {
								rec = `{"url":"u"}`
							}
							if rng.IntN(20) == 0 {
								rec, tr.broken = `{"permissions":`, true
							}
							tr.list = NormalizeAll(list)
							st.items[tenant+"/"+name] = append(st.items[tenant+"/"+name], rag.ConnectorItem{ID: fmt.Sprint(i), SourceURI: uri, Metadata: rec})
						}
						want[d.ID] = tr
					}
				}
				up := rag.Document{ID: fmt.Sprintf("doc_up_%s", kb), Tenant: tenant, KBID: kb, SourceURI: "inbox/x.md"}
				st.docs = append(st.docs, up)
				want[up.ID] = truth{tenant: tenant, kb: kb}
			}
		}
		p := rag.Principal{Tenant: "t1", Email: emails[rng.IntN(len(emails))], Role: rag.RoleMember}
		for _, g := range groups {
			if rng.IntN(3) == 0 {
				p.Groups = append(p.Groups, g)
			}
		}
		if rng.IntN(10) == 0 {
			p.Role = rag.RoleAdmin
		}
		kbs := []string{"kb_t1_0", "kb_t1_1", "kb_t2_0"}[:1+rng.IntN(3)] // t2's knowledge base: never the principal's
		got, err := Guard{Store: st, Map: accessMap}.Denied(context.Background(), p, kbs)
		if err != nil {
			t.Fatal(err)
		}
		ids := Identities(p, accessMap)
		for id, tr := range want {
			brute := !p.IsAdmin() && tr.tenant == p.Tenant && slices.Contains(kbs, tr.kb) && tr.connector && tr.enforced &&
				(!tr.known || tr.broken || !slices.ContainsFunc(tr.list, func(x string) bool { return ids[x] }) && tr.list != nil)
			if got[id] != brute {
				t.Fatalf("round %d: %s (truth %+v) denied=%v; brute force says %v (principal %+v)", round, id, tr, got[id], brute, p)
			}
		}
	}
}
