package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
)

// For random access lists, random metadata filters and random principals, what each read path gives a
// caller equals a brute force over the documents: in the caller's tenant, passing the caller's filter,
// and readable (an admin; a document no enforcing connector delivered; or an enforcing connector's
// document whose record is known and whose list is empty or names one of the caller's identities).
// Paths: POST /api/search (the evidence), POST /api/ask and /api/chat (the scope the retrieval is
// given), POST /retrieval and the document list.
func TestAccessPropertyEveryPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 2))
	universe := []string{"user:ann@acme.example", "user:bob@acme.example", "group:hr", "group:eng", "domain:acme.example",
		"domain:other.example", "anyone", "sitegroup:legal", "organization"}
	emails := []string{"ann@acme.example", "bob@acme.example", "cy@other.example", "", "sub-1@subject.invalid"}
	teams := []string{"hr", "eng", "ops"}
	accessMap := access.Map{"group:eng": {"sitegroup:legal"}, "domain:acme.example": {"organization"}}
	checked := 0
	for round := range 8 {
		ctx := context.Background()
		db := migratedDB(t)
		kbs := map[string]*rag.KnowledgeBase{"acme": {Tenant: "acme", Name: "handbook"}, "other": {Tenant: "other", Name: "handbook"}}
		for _, kb := range kbs {
			if err := db.CreateKB(ctx, kb); err != nil {
				t.Fatal(err)
			}
		}
		type truth struct {
			doc       rag.Document
			team      string
			connector bool
			enforced  bool
			known     bool
			list      []string
		}
		var docs []truth
		cps := &corpus{}
		for _, tenant := range []string{"acme", "other"} {
			kb := kbs[tenant]
			enforced := map[string]bool{}
			for _, name := range []string{"wiki", "drive"} {
				cfg := `{}`
				if enforced[name] = rng.IntN(4) != 0; !enforced[name] {
					cfg = `{"enforce_permissions":false}`
				}
				if err := db.CreateConnector(ctx, &rag.Connector{Tenant: tenant, Name: name, KBID: kb.ID, Type: "gdrive", Config: cfg}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range 8 + rng.IntN(10) {
				tr := truth{team: teams[rng.IntN(len(teams))]}
				uri := fmt.Sprintf("upload/handbook/%d.md", i)
				conn := ""
				if rng.IntN(4) != 0 {
					conn = []string{"wiki", "drive"}[rng.IntN(2)]
					uri = access.SourcePrefix(conn) + fmt.Sprint(i)
					tr.connector, tr.enforced = true, enforced[conn]
				}
				tr.doc = rag.Document{Tenant: tenant, KBID: kb.ID, SourceURI: uri, FileName: fmt.Sprintf("%s-%d.md", tenant, i), Status: rag.StatusReady}
				if err := db.CreateDocument(ctx, &tr.doc); err != nil {
					t.Fatal(err)
				}
				if err := db.SetDocumentMetadata(ctx, tenant, kb.ID, tr.doc.ID, rag.Metadata{"team": tr.team}); err != nil {
					t.Fatal(err)
				}
				if conn != "" && rng.IntN(8) != 0 {
					tr.known = true
					var list []string
					for range rng.IntN(4) {
						list = append(list, universe[rng.IntN(len(universe))])
					}
					b, _ := json.Marshal(map[string]any{"url": "u", "permissions": list})
					tr.list = access.NormalizeAll(list)
					if err := db.PutConnectorItem(ctx, tenant, conn, rag.ConnectorItem{ID: fmt.Sprint(i), SourceURI: uri, Version: "1", Metadata: string(b)}); err != nil {
						t.Fatal(err)
					}
				}
				docs = append(docs, tr)
				cps.docs = append(cps.docs, tr.doc)
			}
		}
		auth := tokenAuth{}
		var names []string
		for i := range 5 {
			p := rag.Principal{Tenant: "acme", UserID: fmt.Sprintf("usr_%d", i), Email: emails[rng.IntN(len(emails))], Role: rag.RoleMember, Method: "jwt"}
			for _, g := range []string{"hr", "eng", "sales"} {
				if rng.IntN(3) == 0 {
					p.Groups = append(p.Groups, strings.ToUpper(g[:1])+g[1:])
				}
			}
			if rng.IntN(6) == 0 {
				p.Role = rag.RoleAdmin
			}
			name := fmt.Sprintf("p%d", i)
			auth[name] = p
			names = append(names, name)
		}
		// no semantic cache here: each ask must reach the retriever, whose scope is what is checked
		pipe := &answer.Pipeline{Retriever: cps, Calibration: answer.Calibrations{}}
		srv := httptest.NewServer(New(Deps{Library: db, Logger: slog.New(slog.DiscardHandler), Auth: auth, Chat: pipe, Search: cps, AccessMap: accessMap}))
		post := func(who, path, body string) (int, []byte) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
			if body == "" {
				req.Method = http.MethodGet
			}
			req.Header.Set("Authorization", "Bearer "+who)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, b
		}
		// scopeOf is the documents a retrieval query reaches, as both indexes read a filter
		scopeOf := func(q retrieve.Query) []string {
			var out []string
			for _, d := range cps.docs {
				if d.Tenant == q.Filter.Tenant && (len(q.Filter.KBIDs) == 0 || slices.Contains(q.Filter.KBIDs, d.KBID)) &&
					(len(q.Filter.DocumentIDs) == 0 || slices.Contains(q.Filter.DocumentIDs, d.ID)) {
					out = append(out, d.ID)
				}
			}
			slices.Sort(out)
			return out
		}
		for _, who := range names {
			p := auth[who]
			ids := access.Identities(p, accessMap)
			team := ""
			if rng.IntN(3) != 0 {
				team = teams[rng.IntN(len(teams))]
			}
			var want []string
			for _, tr := range docs {
				readable := p.IsAdmin() || !tr.connector || !tr.enforced || tr.known && access.Readable(tr.list, ids)
				if tr.doc.Tenant == p.Tenant && readable && (team == "" || tr.team == team) {
					want = append(want, tr.doc.ID)
				}
			}
			slices.Sort(want)
			filter := ""
			if team != "" {
				filter = `,"filter":{"key":"team","eq":"` + team + `"}`
			}
			ctxt := fmt.Sprintf("round %d, %s %+v, filter %q", round, who, p, team)

			code, body := post(who, "/api/search", `{"query":"annual leave"`+filter+`}`)
			var res retrieve.Result
			json.Unmarshal(body, &res)
			var got []string
			for _, e := range res.Evidence {
				got = append(got, e.DocumentID)
			}
			slices.Sort(got)
			if code != http.StatusOK || !slices.Equal(got, want) {
				t.Fatalf("search, %s: %d %v; brute force %v", ctxt, code, got, want)
			}
			for _, path := range []string{"/api/ask", "/api/chat"} {
				calls := len(cps.got)
				code, body = post(who, path, fmt.Sprintf(`{"question":"How many days of annual leave in round %d?"%s}`, round, filter))
				if len(want) == 0 {
					if code != http.StatusNotFound || len(cps.got) != calls {
						t.Fatalf("%s, %s: %d (%d retrievals); want 404 and no retrieval when nothing is readable", path, ctxt, code, len(cps.got)-calls)
					}
					continue
				}
				if code != http.StatusOK || len(cps.got) == calls {
					t.Fatalf("%s, %s: %d %s", path, ctxt, code, body)
				}
				for _, q := range cps.got[calls:] {
					if got := scopeOf(q); !slices.Equal(got, want) {
						t.Fatalf("%s, %s: retrieval scope %v; brute force %v", path, ctxt, got, want)
					}
				}
			}
			if team == "" {
				code, body = post(who, "/retrieval", `{"knowledge_id":"handbook","query":"annual leave","retrieval_setting":{"top_k":50}}`)
				var rr struct {
					Records []RetrievalRecord `json:"records"`
				}
				json.Unmarshal(body, &rr)
				got = nil
				for _, r := range rr.Records {
					got = append(got, r.Metadata["document_id"].(string))
				}
				slices.Sort(got)
				if code != http.StatusOK || !slices.Equal(got, want) {
					t.Fatalf("/retrieval, %s: %d %v; brute force %v", ctxt, code, got, want)
				}
				code, body = post(who, "/api/kbs/handbook/documents", "")
				var list struct{ Documents []rag.Document }
				json.Unmarshal(body, &list)
				got = nil
				for _, d := range list.Documents {
					got = append(got, d.ID)
				}
				slices.Sort(got)
				if code != http.StatusOK || !slices.Equal(got, want) {
					t.Fatalf("document list, %s: %d %v; brute force %v", ctxt, code, got, want)
				}
			}
			checked++
		}
		srv.Close()
	}
	t.Logf("%d principals checked on every path", checked)
}
