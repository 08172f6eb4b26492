package sharepoint

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fake is an in-process Microsoft identity platform and Graph speaking the shapes of their
// documentation: POST /{tenant}/oauth2/v2.0/token (client credentials grant, form encoded, answering
// {token_type, expires_in, access_token} or {error: invalid_client}), GET /v1.0/sites/{site-id}/drive,
// GET /v1.0/drives/{id}/root/delta (pages joined by @odata.nextLink with a $skiptoken, the last page
// carrying @odata.deltaLink with a token; an incremental call returns only what changed since, deleted
// items as {id, deleted: {state}, parentReference} tombstones; a token too old answers 410 resyncRequired),
// GET /v1.0/drives/{id}/items/{id}, /content answering 302 to the pre-authenticated
// @microsoft.graph.downloadUrl, and 429 with Retry-After and RateLimit-* headers when told to limit.
type fake struct {
	mu       sync.Mutex
	srv      *httptest.Server
	items    map[string]*fitem
	seq      int
	oldest   int // delta tokens below this answer 410 Gone (resyncRequired)
	limit    int // answer the next n Graph requests with 429
	pageSize int
	now      time.Time
	token    string
	calls    map[string]int // by kind: token, drive, delta, item, content, download
	authOnDL int            // downloads that carried an Authorization header (must stay 0)
	noDLURL  bool           // list files without @microsoft.graph.downloadUrl (as $select does)
}

type fitem struct {
	id, name, parent string
	folder, deleted  bool
	data             []byte
	etag, ctag, seq  int
	created, mod     time.Time
	author, editor   string
	failDownloads    int
	readers          []string // e-mails the file is shared with, beyond its owner, site group and link
	sharedSeq        int      // the change sequence of its last sharing change
}

const (
	tenantID = "72f988bf-86f1-41af-91ab-2d7cd011db47"
	clientID = "4a1aa1d5-c567-49d0-ad0b-cd957a47f842"
	secret   = "s3cr3t~value"
	siteID   = "contoso.sharepoint.com,2C712604-1370-44E7-A1F5-426573FDA80A,2D2244C3-251A-49EA-93A8-39E1C3A060FE"
	driveID  = "b!t18F8ybsHUq1z3LTz8xvZqP8zaSWjkFNhsME-Fepo75dTf9vQKfeRblBZjoSQrd7"
)

func newFake(t *testing.T) *fake {
	f := &fake{items: map[string]*fitem{}, pageSize: 3, now: time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC),
		token: "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik", calls: map[string]int{}}
	f.items["root"] = &fitem{id: "root", folder: true, name: "root"}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// folder creates a folder under parent ("root" for the top).
func (f *fake) folder(id, name, parent string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	f.items[id] = &fitem{id: id, name: name, parent: parent, folder: true, seq: f.seq, etag: 1, created: f.now, mod: f.now}
}

// put creates or edits a file: new content bumps both tags, as SharePoint does.
func (f *fake) put(id, name, parent, data, editor string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	it := f.items[id]
	if it == nil {
		it = &fitem{id: id, created: f.now, author: editor}
		f.items[id] = it
	}
	it.name, it.parent, it.data, it.editor, it.mod, it.seq = name, parent, []byte(data), editor, f.now, f.seq
	it.etag++
	it.ctag++
}

// touch changes an item's metadata only (a property, its sharing): the eTag moves, the cTag does not.
func (f *fake) touch(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	it := f.items[id]
	it.etag++
	it.seq, it.mod = f.seq, f.now
}

// share grants (or, with grant false, removes) one person's read access. Sharing leaves both tags and
// the item's place in the default feed alone: delta lists the file again only when asked with
// Prefer: deltashowsharingchanges, flagged with @microsoft.graph.sharedChanged.
func (f *fake) share(id, email string, grant bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	it := f.items[id]
	it.readers = slices.DeleteFunc(it.readers, func(r string) bool { return r == email })
	if grant {
		it.readers = append(it.readers, email)
	}
	it.sharedSeq = f.seq
}

// remove deletes an item into the recycle bin: delta reports a tombstone for it (not for its children).
func (f *fake) remove(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	it := f.items[id]
	it.deleted, it.seq = true, f.seq
}

// path is an item's parentReference.path: percent-encoded, as Graph documents it.
func (f *fake) path(it *fitem) string {
	var parts []string
	for p := f.items[it.parent]; p != nil && p.id != "root"; p = f.items[p.parent] {
		parts = append([]string{url.PathEscape(p.name)}, parts...)
	}
	return "/drive/root:" + strings.TrimSuffix("/"+strings.Join(parts, "/"), "/")
}

func (f *fake) depth(it *fitem) int {
	n := 0
	for p := it; p != nil && p.parent != ""; p = f.items[p.parent] {
		n++
	}
	return n
}

// alive says whether an item and every folder above it are not deleted.
func (f *fake) alive(it *fitem) bool {
	for p := it; p != nil; p = f.items[p.parent] {
		if p.deleted {
			return false
		}
	}
	return true
}

func (f *fake) itemJSON(it *fitem) map[string]any {
	if it.deleted {
		return map[string]any{"id": it.id, "deleted": map[string]any{"state": "deleted"},
			"parentReference": map[string]any{"driveId": driveID, "driveType": "documentLibrary", "id": it.parent}}
	}
	m := map[string]any{"id": it.id, "name": it.name,
		"eTag": fmt.Sprintf(`"{%s},%d"`, it.id, it.etag), "cTag": fmt.Sprintf(`"c:{%s},%d"`, it.id, it.ctag),
		"createdDateTime": it.created.Format(time.RFC3339), "lastModifiedDateTime": it.mod.Format(time.RFC3339),
		"webUrl":         "https://contoso.sharepoint.com/sites/eng/Shared%20Documents" + strings.TrimPrefix(f.path(it), "/drive/root:") + "/" + url.PathEscape(it.name),
		"createdBy":      map[string]any{"user": map[string]any{"displayName": it.author, "email": strings.ToLower(strings.Fields(it.author + " x")[0]) + "@contoso.com"}},
		"lastModifiedBy": map[string]any{"user": map[string]any{"displayName": it.editor}}}
	switch {
	case it.id == "root":
		m["root"], m["folder"], m["name"] = map[string]any{}, map[string]any{"childCount": 0}, "root"
		m["parentReference"] = map[string]any{"driveId": driveID, "driveType": "documentLibrary"}
		return m
	case it.folder:
		m["folder"] = map[string]any{"childCount": 0}
		m["size"] = 0
	default:
		mime := "application/octet-stream"
		switch {
		case strings.HasSuffix(it.name, ".md"):
			mime = "text/markdown"
		case strings.HasSuffix(it.name, ".txt"):
			mime = "text/plain"
		case strings.HasSuffix(it.name, ".png"):
			mime = "image/png"
		}
		m["file"] = map[string]any{"mimeType": mime, "hashes": map[string]any{"quickXorHash": base64.StdEncoding.EncodeToString([]byte(it.id))}}
		m["size"] = len(it.data)
		m["@microsoft.graph.downloadUrl"] = f.srv.URL + "/download/" + it.id + "?tempauth=v1.eyJhdWQiOiIwMDAwMDAwMy0w"
		if f.noDLURL {
			delete(m, "@microsoft.graph.downloadUrl")
		}
	}
	m["parentReference"] = map[string]any{"driveId": driveID, "driveType": "documentLibrary", "id": it.parent, "path": f.path(it)}
	return m
}

func graphErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg,
		"innerError": map[string]any{"date": "2026-06-01T08:00:00", "request-id": "b7a9c2de-0000", "client-request-id": "b7a9c2de-0000"}}})
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := r.URL.Path
	switch {
	case p == "/"+tenantID+"/oauth2/v2.0/token":
		f.calls["token"]++
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		r.ParseForm()
		if r.Method != http.MethodPost || r.PostForm.Get("grant_type") != "client_credentials" || r.PostForm.Get("scope") != "http://"+r.Host+"/.default" {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"error": "invalid_request", "error_description": "AADSTS900144: bad request " + r.PostForm.Get("scope")})
			return
		}
		if r.PostForm.Get("client_id") != clientID || r.PostForm.Get("client_secret") != secret {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided.", "error_codes": []int{7000215}})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": f.token})
		return
	case strings.HasPrefix(p, "/download/"):
		f.calls["download"]++
		if r.Header.Get("Authorization") != "" {
			f.authOnDL++
		}
		it := f.items[strings.TrimPrefix(p, "/download/")]
		if it == nil || !f.alive(it) || r.URL.Query().Get("tempauth") == "" {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		if it.failDownloads > 0 {
			it.failDownloads--
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.Write(it.data)
		return
	}
	if f.limit > 0 {
		f.limit--
		w.Header().Set("Retry-After", "3")
		w.Header().Set("RateLimit-Limit", "1200")
		w.Header().Set("RateLimit-Remaining", "0")
		w.Header().Set("RateLimit-Reset", "3")
		graphErr(w, http.StatusTooManyRequests, "activityLimitReached", "The request has been throttled")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		graphErr(w, http.StatusUnauthorized, "InvalidAuthenticationToken", "Access token is empty.")
		return
	}
	drive := "/v1.0/drives/" + driveID
	w.Header().Set("Content-Type", "application/json")
	switch {
	case p == "/v1.0/sites/"+siteID+"/drive" || p == drive:
		f.calls["drive"]++
		json.NewEncoder(w).Encode(map[string]any{"id": driveID, "driveType": "documentLibrary", "name": "Documents",
			"webUrl": "https://contoso.sharepoint.com/sites/eng/Shared%20Documents"})
	case p == drive+"/root/delta":
		f.calls["delta"]++
		f.delta(w, r)
	case strings.HasPrefix(p, drive+"/items/") && strings.HasSuffix(p, "/permissions"):
		f.calls["permissions"]++
		it := f.items[strings.TrimSuffix(strings.TrimPrefix(p, drive+"/items/"), "/permissions")]
		if it == nil || !f.alive(it) {
			graphErr(w, http.StatusNotFound, "itemNotFound", "The resource could not be found.")
			return
		}
		perms := []any{}
		for i, r := range it.readers {
			perms = append(perms, map[string]any{"id": fmt.Sprintf("dXNlcn%d", i), "roles": []string{"read"},
				"grantedToV2": map[string]any{"user": map[string]any{"id": fmt.Sprintf("user-%d", i), "displayName": r, "email": r}}})
		}
		json.NewEncoder(w).Encode(map[string]any{"value": append(perms,
			map[string]any{"id": "aTowIy5mfG1lbWJlcnNoaXB8", "roles": []string{"owner"},
				"grantedToV2": map[string]any{"user": map[string]any{"id": "48d31887-5fad-4d73-a9f5-3c356e68a038", "displayName": it.author, "email": "megan@contoso.com"}}},
			map[string]any{"id": "c3RlZ3JvdXA", "roles": []string{"read"},
				"grantedToV2": map[string]any{"siteGroup": map[string]any{"id": "4", "displayName": "Engineering Members", "loginName": "Engineering Members"}}},
			map[string]any{"id": "bGluaw", "roles": []string{"read"}, "link": map[string]any{"scope": "organization", "type": "view", "webUrl": "https://contoso.sharepoint.com/:w:/s/eng/x"},
				"grantedToIdentitiesV2": []any{}},
		)})
	case strings.HasPrefix(p, drive+"/items/") && strings.HasSuffix(p, "/content"):
		f.calls["content"]++
		it := f.items[strings.TrimSuffix(strings.TrimPrefix(p, drive+"/items/"), "/content")]
		if it == nil || !f.alive(it) {
			graphErr(w, http.StatusNotFound, "itemNotFound", "The resource could not be found.")
			return
		}
		http.Redirect(w, r, f.srv.URL+"/download/"+it.id+"?tempauth=v1.eyJhdWQiOiIwMDAwMDAwMy0w", http.StatusFound)
	case strings.HasPrefix(p, drive+"/items/"):
		f.calls["item"]++
		it := f.items[strings.TrimPrefix(p, drive+"/items/")]
		if it == nil || !f.alive(it) {
			graphErr(w, http.StatusNotFound, "itemNotFound", "The resource could not be found.")
			return
		}
		json.NewEncoder(w).Encode(f.itemJSON(it))
	default:
		graphErr(w, http.StatusBadRequest, "invalidRequest", "Invalid request")
	}
}

// delta answers one page. The position is the change sequence: a full enumeration lists every live
// item (parents first), an incremental one every item changed after the token, tombstones included.
func (f *fake) delta(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	since, off, upto := -1, 0, f.seq
	if t := q.Get("token"); t != "" {
		n, err := strconv.Atoi(t)
		if err != nil || n < f.oldest {
			graphErr(w, http.StatusGone, "resyncRequired", "Resync required. Replace any local items with the server's version (including deletes) if you're sure that the service was up to date with your local changes when you last sync'd. Upload any local changes that the server doesn't know about.")
			return
		}
		since = n
	}
	if s := q.Get("$skiptoken"); s != "" {
		b, _ := base64.RawURLEncoding.DecodeString(s)
		fmt.Sscanf(string(b), "%d:%d:%d", &since, &off, &upto)
	}
	sharing := strings.Contains(r.Header.Get("Prefer"), "deltashowsharingchanges")
	var list []*fitem
	flagged := map[string]bool{}
	for _, it := range f.items {
		switch {
		case since < 0: // a full enumeration: every live item as of upto
			if it.seq <= upto && f.alive(it) {
				list = append(list, it)
			}
		case it.seq > since && it.seq <= upto:
			list = append(list, it)
		case sharing && !it.folder && it.sharedSeq > since && it.sharedSeq <= upto && f.alive(it):
			// Graph flags files (not folders) whose sharing changed
			list = append(list, it)
			flagged[it.id] = true
		}
	}
	sort.Slice(list, func(i, j int) bool {
		if di, dj := f.depth(list[i]), f.depth(list[j]); di != dj {
			return di < dj
		}
		return list[i].id < list[j].id
	})
	end := min(off+f.pageSize, len(list))
	vals := []any{}
	for _, it := range list[off:end] {
		m := f.itemJSON(it)
		if flagged[it.id] {
			m["@microsoft.graph.sharedChanged"] = "True"
		}
		vals = append(vals, m)
	}
	base := f.srv.URL + "/v1.0/drives/" + driveID + "/root/delta"
	page := map[string]any{"@odata.context": "https://graph.microsoft.com/v1.0/$metadata#Collection(driveItem)", "value": vals}
	if end < len(list) {
		page["@odata.nextLink"] = base + "?$skiptoken=" + base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d:%d:%d", since, end, upto))
	} else {
		page["@odata.deltaLink"] = base + "?token=" + strconv.Itoa(upto)
	}
	json.NewEncoder(w).Encode(page)
}
