package gdrive

import (
	"crypto"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
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

// fake is an in-process Google OAuth token endpoint and Drive API v3 speaking the shapes of Google's
// documentation: POST /token exchanging a service account's RS256 JWT assertion
// (grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer; the signature is checked against the key's
// public half), GET /drive/v3/changes/startPageToken, GET /drive/v3/changes (pageToken, nextPageToken
// pages, newStartPageToken on the last; removed changes without a file, trashed files with
// file.trashed), GET /drive/v3/files with a `q` of trashed/mimeType/'id' in parents terms
// (nextPageToken paging; another q is 400 Invalid Value), GET /drive/v3/files/{id} (?alt=media for
// bytes, 403 fileNotDownloadable for Google formats), GET /drive/v3/files/{id}/export?mimeType=, errors
// as {"error": {"code", "message", "errors": [{"domain", "reason"}]}}, and 429 rateLimitExceeded with
// Retry-After when told to limit.
type fake struct {
	mu       sync.Mutex
	srv      *httptest.Server
	key      *rsa.PublicKey
	files    map[string]*ffile
	log      []string // change log: the file id changed at each position (the page token is an index)
	limit    int
	limit403 int // answer the next n Drive requests with 403 userRateLimitExceeded
	now      time.Time
	token    string
	calls    map[string]int // token, start, changes, list, get, media, export
	subjects []string       // the JWT sub claims seen (domain-wide delegation)
	// shared is a shared drive's id: every file is in it (no owners, a driveId), and the list and
	// changes calls must carry the shared-drive parameters Google documents for it
	shared string
}

// sharedParams checks the shared-drive parameters of a call: driveId and supportsAllDrives always,
// includeItemsFromAllDrives when items are listed, corpora=drive for files.list.
func (f *fake) sharedParams(q map[string][]string, items, list bool) bool {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if f.shared == "" {
		return get("driveId") == ""
	}
	return get("driveId") == f.shared && get("supportsAllDrives") == "true" &&
		(!items || get("includeItemsFromAllDrives") == "true") && (!list || get("corpora") == "drive")
}

type ffile struct {
	id, name, mime string
	parents        []string
	trashed, gone  bool
	data           string
	version        int
	modified       time.Time
	owner, editor  string
	failMedia      int
	// perms, when set, are the file's permissions resource list (else the owner and the domain)
	perms []map[string]any
}

const (
	docMime    = "application/vnd.google-apps.document"
	sheetMime  = "application/vnd.google-apps.spreadsheet"
	formMime   = "application/vnd.google-apps.form"
	saEmail    = "docmind-sync@acme-docs.iam.gserviceaccount.com"
	rootFolder = "1AbCdEfGhIjKlMnOpQrStUvWxYz012345"
)

func newKey(t *testing.T) (*rsa.PrivateKey, string) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	return k, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

func newFake(t *testing.T, pub *rsa.PublicKey) *fake {
	f := &fake{key: pub, files: map[string]*ffile{}, now: time.Date(2026, 7, 1, 10, 0, 0, 0, time.UTC),
		token: "ya29.c.b0AXv0zTPmock", calls: map[string]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

// put creates or edits a file (a folder when mime is the folder type): its version moves and a change
// is logged.
func (f *fake) put(id, name, mime, parent, data, editor string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.files[id]
	if x == nil {
		x = &ffile{id: id, owner: editor}
		f.files[id] = x
	}
	x.name, x.mime, x.parents, x.data, x.editor, x.modified = name, mime, []string{parent}, data, editor, f.now
	x.version++
	f.log = append(f.log, id)
}

// change applies fn to a file and logs a change.
func (f *fake) change(id string, fn func(*ffile)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	x := f.files[id]
	fn(x)
	x.version++
	f.log = append(f.log, id)
}

func (f *fake) fileJSON(x *ffile) map[string]any {
	m := map[string]any{"kind": "drive#file", "id": x.id, "name": x.name, "mimeType": x.mime, "trashed": x.trashed,
		"parents": x.parents, "createdTime": "2026-01-05T09:00:00.000Z", "modifiedTime": x.modified.Format("2006-01-02T15:04:05.000Z"),
		"version":           strconv.Itoa(x.version),
		"owners":            []any{map[string]any{"kind": "drive#user", "displayName": x.owner, "emailAddress": strings.ToLower(strings.Fields(x.owner + " x")[0]) + "@acme.example"}},
		"lastModifyingUser": map[string]any{"kind": "drive#user", "displayName": x.editor}}
	owner, _ := m["owners"].([]any)[0].(map[string]any)
	m["permissions"] = []any{map[string]any{"kind": "drive#permission", "type": "user", "role": "owner", "emailAddress": owner["emailAddress"]},
		map[string]any{"kind": "drive#permission", "type": "domain", "role": "reader", "domain": "acme.example"}}
	if x.perms != nil {
		list := make([]any, len(x.perms))
		for i, p := range x.perms {
			list[i] = p
		}
		m["permissions"] = list
	}
	if f.shared != "" {
		delete(m, "owners")
		m["driveId"] = f.shared
	}
	switch {
	case x.mime == docMime:
		m["webViewLink"] = "https://docs.google.com/document/d/" + x.id + "/edit?usp=drivesdk"
	case strings.HasPrefix(x.mime, "application/vnd.google-apps."):
		m["webViewLink"] = "https://drive.google.com/drive/folders/" + x.id
	default:
		m["md5Checksum"] = fmt.Sprintf("%x", md5.Sum([]byte(x.data)))
		m["size"] = strconv.Itoa(len(x.data))
		m["webViewLink"] = "https://drive.google.com/file/d/" + x.id + "/view?usp=drivesdk"
	}
	return m
}

func driveErr(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": code, "message": msg,
		"errors": []any{map[string]any{"domain": "global", "reason": reason, "message": msg}}}})
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.URL.Path == "/token" {
		f.calls["token"]++
		f.tokenEndpoint(w, r)
		return
	}
	if f.limit > 0 {
		f.limit--
		w.Header().Set("Retry-After", "5")
		driveErr(w, http.StatusTooManyRequests, "rateLimitExceeded", "Rate Limit Exceeded")
		return
	}
	if f.limit403 > 0 {
		f.limit403--
		driveErr(w, http.StatusForbidden, "userRateLimitExceeded", "User Rate Limit Exceeded")
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
		driveErr(w, http.StatusUnauthorized, "authError", "Invalid Credentials")
		return
	}
	q := r.URL.Query()
	p := strings.TrimPrefix(r.URL.Path, "/drive/v3/")
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	switch {
	case (p == "changes/startPageToken" && !f.sharedParams(q, false, false)) || (p == "changes" && !f.sharedParams(q, true, false)) ||
		(p == "files" && !f.sharedParams(q, true, true)):
		driveErr(w, 400, "invalid", "Invalid Value")
	case p == "changes/startPageToken":
		f.calls["start"]++
		json.NewEncoder(w).Encode(map[string]any{"kind": "drive#startPageToken", "startPageToken": strconv.Itoa(len(f.log) + 1)})
	case p == "changes":
		f.calls["changes"]++
		f.changes(w, q)
	case p == "files":
		f.calls["list"]++
		f.list(w, q)
	case strings.HasSuffix(p, "/export") && strings.HasPrefix(p, "files/"):
		f.calls["export"]++
		x := f.files[strings.TrimSuffix(strings.TrimPrefix(p, "files/"), "/export")]
		if x == nil || x.gone {
			driveErr(w, 404, "notFound", "File not found: .")
			return
		}
		want := map[string]string{docMime: "text/markdown", sheetMime: "text/csv"}[x.mime]
		if want == "" || q.Get("mimeType") != want {
			driveErr(w, 400, "badRequest", "The requested conversion is not supported.")
			return
		}
		w.Header().Set("Content-Type", want)
		fmt.Fprint(w, x.data)
	case strings.HasPrefix(p, "files/"):
		id := strings.TrimPrefix(p, "files/")
		x := f.files[id]
		if x == nil || x.gone {
			driveErr(w, 404, "notFound", "File not found: "+id+".")
			return
		}
		if q.Get("alt") != "media" {
			f.calls["get"]++
			json.NewEncoder(w).Encode(f.fileJSON(x))
			return
		}
		f.calls["media"]++
		if strings.HasPrefix(x.mime, "application/vnd.google-apps.") {
			driveErr(w, 403, "fileNotDownloadable", "Only files with binary content can be downloaded. Use Export with Docs Editors files.")
			return
		}
		if x.failMedia > 0 {
			x.failMedia--
			driveErr(w, 500, "internalError", "Internal Error")
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		fmt.Fprint(w, x.data)
	default:
		driveErr(w, 404, "notFound", "Not Found")
	}
}

// tokenEndpoint checks the JWT assertion (RS256 over header.claims with the service account's key,
// issuer, audience, scope) and answers a bearer token.
func (f *fake) tokenEndpoint(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	r.ParseForm()
	bad := func(desc string) {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": "invalid_grant", "error_description": desc})
	}
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		bad("Invalid grant_type")
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		bad("Invalid JWT")
		return
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(f.key, crypto.SHA256, sum[:], sig) != nil {
		bad("Invalid JWT Signature.")
		return
	}
	var claims struct {
		Iss, Scope, Aud, Sub string
		Exp, Iat             int64
	}
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	json.Unmarshal(b, &claims)
	if claims.Iss != saEmail || claims.Aud != f.srv.URL+"/token" || claims.Scope != Scope || claims.Exp <= claims.Iat {
		bad("Invalid JWT claims")
		return
	}
	f.subjects = append(f.subjects, claims.Sub)
	json.NewEncoder(w).Encode(map[string]any{"access_token": f.token, "expires_in": 3599, "token_type": "Bearer"})
}

// changes answers one page of the change log from pageToken (an index into it), the latest state of
// each file changed, pageSize to a page.
func (f *fake) changes(w http.ResponseWriter, q map[string][]string) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	pos, err := strconv.Atoi(get("pageToken"))
	if err != nil || pos < 1 || pos > len(f.log)+1 {
		driveErr(w, 400, "invalid", "Invalid Value")
		return
	}
	size, _ := strconv.Atoi(get("pageSize"))
	if size <= 0 {
		size = 100
	}
	var out []any
	i := pos
	for ; i <= len(f.log) && len(out) < size; i++ {
		id := f.log[i-1]
		x := f.files[id] // every change of a file carries its current state, so a file may repeat
		ch := map[string]any{"kind": "drive#change", "changeType": "file", "fileId": id, "time": f.now.Format(time.RFC3339), "removed": x.gone}
		if !x.gone {
			ch["file"] = f.fileJSON(x)
		}
		out = append(out, ch)
	}
	page := map[string]any{"kind": "drive#changeList", "changes": out}
	if i <= len(f.log) {
		page["nextPageToken"] = strconv.Itoa(i)
	} else {
		page["newStartPageToken"] = strconv.Itoa(len(f.log) + 1)
	}
	json.NewEncoder(w).Encode(page)
}

var (
	termParents = regexp.MustCompile(`^'([A-Za-z0-9_-]+)' in parents$`)
	termMime    = regexp.MustCompile(`^mimeType (=|!=) '([^']+)'$`)
)

// list answers files.list for the q forms the Drive documentation shows: terms joined by "and", one
// parenthesised "or" group of parents.
func (f *fake) list(w http.ResponseWriter, q map[string][]string) {
	query := q["q"][0]
	trashed := false
	var mimeEq, mimeNe string
	parents := map[string]bool{}
	rest := query
	if i := strings.Index(rest, " and ("); i >= 0 && strings.HasSuffix(rest, ")") {
		for _, t := range strings.Split(rest[i+len(" and ("):len(rest)-1], " or ") {
			m := termParents.FindStringSubmatch(t)
			if m == nil {
				driveErr(w, 400, "invalid", "Invalid Value")
				return
			}
			parents[m[1]] = true
		}
		rest = rest[:i]
	}
	for _, t := range strings.Split(rest, " and ") {
		switch m := termMime.FindStringSubmatch(t); {
		case t == "trashed = false":
			trashed = true
		case m != nil && m[1] == "=":
			mimeEq = m[2]
		case m != nil:
			mimeNe = m[2]
		default:
			driveErr(w, 400, "invalid", "Invalid Value")
			return
		}
	}
	var ids []string
	for id, x := range f.files {
		if x.gone || (trashed && x.trashed) || (mimeEq != "" && x.mime != mimeEq) || (mimeNe != "" && x.mime == mimeNe) {
			continue
		}
		if len(parents) > 0 && !parents[x.parents[0]] {
			continue
		}
		ids = append(ids, id)
	}
	sort.Strings(ids)
	size := 100
	if v := q["pageSize"]; len(v) > 0 {
		size, _ = strconv.Atoi(v[0])
	}
	off := 0
	if v := q["pageToken"]; len(v) > 0 {
		b, _ := base64.RawURLEncoding.DecodeString(v[0])
		off, _ = strconv.Atoi(string(b))
	}
	end := min(off+size, len(ids))
	files := []any{}
	for _, id := range ids[off:end] {
		files = append(files, f.fileJSON(f.files[id]))
	}
	page := map[string]any{"kind": "drive#fileList", "incompleteSearch": false, "files": files}
	if end < len(ids) {
		page["nextPageToken"] = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	json.NewEncoder(w).Encode(page)
}
