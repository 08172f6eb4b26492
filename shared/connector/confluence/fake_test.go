package confluence

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fake is an in-process Confluence Cloud speaking the shapes of Atlassian's REST API documentation:
// GET /wiki/api/v2/spaces?keys=, GET /wiki/api/v2/spaces/{id}/pages (cursor paging with a Link header
// and _links.next, body-format=storage), GET /wiki/api/v2/pages?id=&space-id=&status=,
// GET /wiki/api/v2/pages/{id}, GET /wiki/api/v2/pages/{id}/ancestors (top of the tree first), the v1
// GET /wiki/rest/api/content/{id}/restriction/byOperation/read (users and groups), and the v1 CQL search
// GET /wiki/rest/api/search (start/limit paging, _links.next relative to the wiki base). HTTP Basic
// with an email and API token; 429 with Retry-After and X-RateLimit-* headers when told to limit.
type fake struct {
	mu      sync.Mutex
	srv     *httptest.Server
	pages   map[string]*fpage
	now     time.Time
	limit   int // answer the next n requests with 429
	calls   map[string]int
	lastCQL string
}

type fpage struct {
	id, title, body, status string
	version                 int
	modified                time.Time
	parent                  string   // "" under the space's homepage (homeID, not a listed page here)
	readUsers               []string // view restriction: "accountId" or "accountId|email" (email shown)
	readGroups              []string
}

const homeID = "65537"

const spaceID = "98304"

func newFake(t *testing.T) *fake {
	f := &fake{pages: map[string]*fpage{}, now: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC), calls: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) put(id, title, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.pages[id]
	if p == nil {
		p = &fpage{id: id, status: "current"}
		f.pages[id] = p
	}
	p.title, p.body, p.modified = title, body, f.now
	p.version++
}

func (f *fake) advance(d time.Duration) { f.mu.Lock(); f.now = f.now.Add(d); f.mu.Unlock() }

func (f *fake) clock() time.Time { f.mu.Lock(); defer f.mu.Unlock(); return f.now }

func (f *fake) pageJSON(p *fpage, body bool) map[string]any {
	parent := p.parent
	if parent == "" {
		parent = homeID
	}
	m := map[string]any{"id": p.id, "status": p.status, "title": p.title, "spaceId": spaceID, "parentId": parent, "parentType": "page",
		"authorId": "5b10a2844c20165700ede21g", "createdAt": "2026-01-01T00:00:00.000Z",
		"version": map[string]any{"number": p.version, "createdAt": p.modified.Format("2006-01-02T15:04:05.000Z"), "authorId": "5b10ac8d82e05b22cc7d4ef5"},
		"_links":  map[string]any{"webui": "/spaces/ENG/pages/" + p.id, "tinyui": "/x/" + p.id}}
	if body {
		m["body"] = map[string]any{"storage": map[string]any{"value": p.body, "representation": "storage"}}
	}
	return m
}

var cqlSince = regexp.MustCompile(`^space = "ENG" and type = page and lastmodified >= "([0-9/: ]+)"$`)

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[r.URL.Path]++
	if f.limit > 0 {
		f.limit--
		w.Header().Set("Retry-After", "2")
		w.Header().Set("X-RateLimit-Limit", "100")
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", f.now.Add(2*time.Second).Format(time.RFC3339))
		w.WriteHeader(http.StatusTooManyRequests)
		return
	}
	if u, p, ok := r.BasicAuth(); !ok || u != "bot@example.com" || p != "api-token" {
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{"status": 401, "code": "UNAUTHORIZED", "title": "Unauthorized"}}})
		return
	}
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/wiki/api/v2/spaces":
		res := []any{}
		if q.Get("keys") == "ENG" {
			res = append(res, map[string]any{"id": spaceID, "key": "ENG", "name": "Engineering", "type": "global", "status": "current"})
		}
		json.NewEncoder(w).Encode(map[string]any{"results": res, "_links": map[string]any{}})
	case r.URL.Path == "/wiki/api/v2/spaces/"+spaceID+"/pages":
		var ids []string
		for id, p := range f.pages {
			if p.status == q.Get("status") || (q.Get("status") == "" && p.status == "current") {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		limit, _ := strconv.Atoi(q.Get("limit"))
		if limit <= 0 || limit > 250 {
			limit = 25
		}
		off := 0
		if c := q.Get("cursor"); c != "" {
			b, _ := base64.RawURLEncoding.DecodeString(c)
			off, _ = strconv.Atoi(strings.TrimPrefix(string(b), "offset:"))
		}
		end := min(off+limit, len(ids))
		res := []any{}
		for _, id := range ids[off:end] {
			res = append(res, f.pageJSON(f.pages[id], q.Get("body-format") == "storage"))
		}
		links := map[string]any{"base": f.srv.URL + "/wiki"}
		if end < len(ids) {
			nq := r.URL.Query()
			nq.Set("cursor", base64.RawURLEncoding.EncodeToString([]byte("offset:"+strconv.Itoa(end))))
			next := r.URL.Path + "?" + nq.Encode()
			links["next"] = next
			w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next", <%s/wiki>; rel="base"`, next, f.srv.URL))
		}
		json.NewEncoder(w).Encode(map[string]any{"results": res, "_links": links})
	case r.URL.Path == "/wiki/api/v2/pages":
		// pages filtered by id and space-id (comma-separated lists, at most 250 ids) and status
		if len(strings.Split(q.Get("id"), ",")) > 250 || (q.Get("space-id") != "" && q.Get("space-id") != spaceID) {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{"status": 400, "code": "INVALID_REQUEST_PARAMETER", "title": "Invalid id or space-id"}}})
			return
		}
		res := []any{}
		for _, id := range strings.Split(q.Get("id"), ",") {
			if p := f.pages[id]; p != nil && (q.Get("status") == "" || p.status == q.Get("status")) {
				res = append(res, f.pageJSON(p, false))
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"results": res, "_links": map[string]any{"base": f.srv.URL + "/wiki"}})
	case strings.HasPrefix(r.URL.Path, "/wiki/api/v2/pages/") && strings.HasSuffix(r.URL.Path, "/ancestors"):
		// the page's ancestors from the top of the tree down to its parent
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/wiki/api/v2/pages/"), "/ancestors")
		p := f.pages[id]
		if p == nil && id != homeID {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{"status": 404, "code": "NOT_FOUND", "title": "Not Found"}}})
			return
		}
		res := []any{}
		for cur := p; cur != nil; {
			parent := cur.parent
			if parent == "" {
				parent = homeID
			}
			res = append([]any{map[string]any{"id": parent, "type": "page"}}, res...)
			cur = f.pages[cur.parent]
			if parent == homeID {
				break
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"results": res, "_links": map[string]any{}})
	case strings.HasPrefix(r.URL.Path, "/wiki/rest/api/content/") && strings.HasSuffix(r.URL.Path, "/restriction/byOperation/read"):
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/wiki/rest/api/content/"), "/restriction/byOperation/read")
		p := f.pages[id]
		if p == nil && id != homeID {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"statusCode": 404, "message": "No content found with id: " + id})
			return
		}
		users, groups := []any{}, []any{}
		if p != nil {
			for _, u := range p.readUsers {
				acct, email, _ := strings.Cut(u, "|")
				users = append(users, map[string]any{"type": "known", "accountId": acct, "accountType": "atlassian", "email": email, "publicName": acct})
			}
			for _, g := range p.readGroups {
				groups = append(groups, map[string]any{"type": "group", "name": g, "id": "g-" + g})
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"operation": "read",
			"restrictions": map[string]any{
				"user":  map[string]any{"results": users, "start": 0, "limit": 200, "size": len(users)},
				"group": map[string]any{"results": groups, "start": 0, "limit": 200, "size": len(groups)}},
			"_links": map[string]any{"base": f.srv.URL + "/wiki"}})
	case strings.HasPrefix(r.URL.Path, "/wiki/api/v2/pages/"):
		p := f.pages[strings.TrimPrefix(r.URL.Path, "/wiki/api/v2/pages/")]
		if p == nil {
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{"status": 404, "code": "NOT_FOUND", "title": "Not Found"}}})
			return
		}
		json.NewEncoder(w).Encode(f.pageJSON(p, q.Get("body-format") == "storage"))
	case r.URL.Path == "/wiki/rest/api/search":
		f.lastCQL = q.Get("cql")
		m := cqlSince.FindStringSubmatch(q.Get("cql"))
		if m == nil {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"statusCode": 400, "message": "Could not parse cql : " + q.Get("cql")})
			return
		}
		since, _ := time.Parse("2006/01/02 15:04", m[1])
		var ids []string
		for id, p := range f.pages {
			if p.status == "current" && !p.modified.Before(since) {
				ids = append(ids, id)
			}
		}
		sort.Strings(ids)
		limit, _ := strconv.Atoi(q.Get("limit"))
		if limit <= 0 {
			limit = 25
		}
		start, _ := strconv.Atoi(q.Get("start"))
		end := min(start+limit, len(ids))
		res := []any{}
		for _, id := range ids[min(start, end):end] {
			p := f.pages[id]
			res = append(res, map[string]any{"content": map[string]any{"id": id, "type": "page", "status": "current", "title": p.title},
				"title": p.title, "lastModified": p.modified.Format(time.RFC3339), "url": "/spaces/ENG/pages/" + id})
		}
		links := map[string]any{"base": f.srv.URL + "/wiki", "context": "/wiki"}
		if end < len(ids) {
			nq := r.URL.Query()
			nq.Set("start", strconv.Itoa(end))
			links["next"] = "/rest/api/search?" + nq.Encode()
		}
		json.NewEncoder(w).Encode(map[string]any{"results": res, "start": start, "limit": limit, "size": len(res), "totalSize": len(ids), "_links": links})
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}
