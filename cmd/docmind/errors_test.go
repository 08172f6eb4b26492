package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/rag"
)

// goInternals matches what a caller of the API cannot act on: Go types and package-qualified names
// (httpapi.chatRequest, auth.Verify), encoding/json's "json:" prefix and "Go value", Go type syntax and
// formatting mistakes.
var goInternals = regexp.MustCompile(`Go value|Go struct|json: |<nil>|%!|\bstruct ?\{|\bmap\[|\[\]string|\binterface ?\{|\bfunc\(|` +
	`\b(rag|httpapi|auth|identity|sqldb|sqlite|mysql|memvec|milvus|ingest|answer|retrieve|json|http|strconv|io|sql|os|multipart|mime|limits|memory|llm|netx|wire|config|store|fsblob|memkv|bm25|rank|extract|chunk|embed|sse|url|net|context|jwt|jws|jwk|reflect|errors|syscall)\.[A-Za-z_]\w*`)

// Every error path a caller can reach with a bad request (bad JSON of every request type, missing, bad
// and expired credentials, wrong content types, unknown ids and routes, oversize bodies) answers a JSON
// error whose message is written for the caller: no Go type, package or function names.
func TestErrorBodiesSpeakToTheCaller(t *testing.T) {
	m, base := startServer(t, func(m *Main) {
		m.NoDemo, m.NoWatch = true, true
		a := &m.Config.Auth
		a.Mode, a.HS256Secret, a.Issuer, a.Audience = "keys,jwt", jwtSecret, jwtIssuer, jwtAudience
	})
	ctx := t.Context()
	u := rag.User{Tenant: "acme", Email: "ana@acme.example", Role: rag.RoleAdmin}
	if err := m.Stores.SQL.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	k, err := httpapi.CreateKey(ctx, m.Stores.SQL, "acme", u.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	admin := client{base: base, token: k.Key}
	if code, b := admin.json(t, http.MethodPost, "/api/kbs", map[string]string{"name": "manuals"}); code != 201 {
		t.Fatalf("create kb: %d %s", code, b)
	}

	type probe struct {
		name, method, path, ct, body string
		c                            client
		header                       []string
	}
	var probes []probe
	// every JSON request type, with the fields it takes
	endpoints := []struct {
		method, path string
		fields       []string
	}{
		{"POST", "/api/kbs", []string{"name", "description"}},
		{"POST", "/api/chat", []string{"question", "kbs", "documents", "conversation_id"}},
		{"POST", "/api/ask", []string{"question", "kbs", "documents"}},
		{"POST", "/api/search", []string{"query", "kbs"}},
		{"POST", "/v1/chat/completions", []string{"model", "messages", "stream", "kbs", "documents"}},
		{"POST", "/api/users", []string{"email", "name", "role"}},
		{"PATCH", "/api/users/ana@acme.example", []string{"role"}},
		{"POST", "/api/keys", []string{"name", "user"}},
		{"PUT", "/api/kbs/manuals/members", []string{"user", "role"}},
	}
	bad := []string{``, `{`, `[1,2]`, `"text"`, `42`, `true`, `{"question": "q",}`, `{"no_such_field": 1}`, `{"a":1} trailing`}
	for _, ep := range endpoints {
		for _, b := range bad {
			probes = append(probes, probe{name: "body " + b, method: ep.method, path: ep.path, ct: "application/json", body: b, c: admin})
		}
		for _, f := range ep.fields {
			for _, v := range []string{`[1]`, `{}`, `true`, `12.5`, `"text"`} {
				probes = append(probes, probe{name: f + "=" + v, method: ep.method, path: ep.path, ct: "application/json", body: fmt.Sprintf(`{%q: %s}`, f, v), c: admin})
			}
		}
		probes = append(probes,
			probe{name: "wrong content type", method: ep.method, path: ep.path, ct: "text/plain", body: `{}`, c: admin},
			probe{name: "too large", method: ep.method, path: ep.path, ct: "application/json", body: `{"question":"` + strings.Repeat("x", 600<<10) + `"}`, c: admin},
		)
	}
	// credentials
	expired := hs256(t, claims("acme", "sub-1", "ana@acme.example", -time.Hour))
	wrongIssuer := claims("acme", "sub-1", "ana@acme.example", time.Hour)
	wrongIssuer["iss"] = "https://elsewhere.example"
	notYet := claims("acme", "sub-1", "ana@acme.example", time.Hour)
	notYet["nbf"] = time.Now().Add(time.Hour).Unix()
	badTenant := claims("not a tenant!", "sub-1", "ana@acme.example", time.Hour)
	noExp := claims("acme", "sub-1", "ana@acme.example", time.Hour)
	delete(noExp, "exp")
	for _, tok := range []string{"", "dm_notarealkey", "a.b.c", "not-a-token", expired, hs256(t, wrongIssuer), hs256(t, notYet), hs256(t, badTenant), hs256(t, noExp),
		expired[:len(expired)-4] + "AAAA", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."} {
		for _, path := range []string{"/api/kbs", "/api/me", "/v1/models"} {
			probes = append(probes, probe{name: "token " + tok, method: "GET", path: path, c: client{base: base, token: tok}})
		}
	}
	probes = append(probes, probe{name: "basic auth", method: "GET", path: "/api/kbs", c: client{base: base}, header: []string{"Authorization", "Basic YTpi"}})
	// unknown ids, routes and methods; bad uploads
	for _, p := range []string{"/api/documents/nope", "/api/documents/bad%20id!", "/api/documents/nope/chunks", "/api/kbs/nope", "/api/kbs/nope/documents",
		"/api/conversations/nope/messages", "/api/nothing-here", "/api/kbs/manuals/members"} {
		probes = append(probes, probe{name: "get", method: "GET", path: p, c: admin})
	}
	for _, p := range []string{"/api/documents/nope", "/api/kbs/nope", "/api/keys/nope", "/api/memories/nope", "/api/conversations/nope", "/api/users/nobody@acme.example", "/api/kbs/manuals/members/nobody@acme.example"} {
		probes = append(probes, probe{name: "delete", method: "DELETE", path: p, c: admin})
	}
	probes = append(probes,
		probe{name: "reprocess unknown", method: "POST", path: "/api/documents/nope/reprocess", c: admin},
		probe{name: "upload not multipart", method: "POST", path: "/api/kbs/manuals/documents", ct: "application/json", body: `{}`, c: admin},
		probe{name: "upload broken multipart", method: "POST", path: "/api/kbs/manuals/documents", ct: "multipart/form-data; boundary=x", body: "--x\r\nbroken", c: admin},
		probe{name: "upload no boundary", method: "POST", path: "/api/kbs/manuals/documents", ct: "multipart/form-data", body: "", c: admin},
		probe{name: "method", method: "PUT", path: "/api/kbs", ct: "application/json", body: `{}`, c: admin},
		probe{name: "chat unknown kb", method: "POST", path: "/api/chat", ct: "application/json", body: `{"question":"q","kbs":["nope"]}`, c: admin},
		probe{name: "chat unknown conversation", method: "POST", path: "/api/chat", ct: "application/json", body: `{"question":"q","conversation_id":"nope"}`, c: admin},
		probe{name: "openai no messages", method: "POST", path: "/v1/chat/completions", ct: "application/json", body: `{"model":"docmind","messages":[]}`, c: admin},
		probe{name: "openai bad content", method: "POST", path: "/v1/chat/completions", ct: "application/json", body: `{"model":"docmind","messages":[{"role":"user","content":5}]}`, c: admin},
		probe{name: "duplicate kb", method: "POST", path: "/api/kbs", ct: "application/json", body: `{"name":"manuals"}`, c: admin},
		probe{name: "bad kb name", method: "POST", path: "/api/kbs", ct: "application/json", body: `{"name":"../x"}`, c: admin},
		probe{name: "bad role", method: "PUT", path: "/api/kbs/manuals/members", ct: "application/json", body: `{"user":"ana@acme.example","role":"god"}`, c: admin},
		probe{name: "bad user role", method: "POST", path: "/api/users", ct: "application/json", body: `{"email":"x@acme.example","role":"god"}`, c: admin},
		probe{name: "bad email", method: "POST", path: "/api/users", ct: "application/json", body: `{"email":"not an email"}`, c: admin},
	)
	// a multipart upload without a file field
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("note", "no file here")
	mw.Close()
	probes = append(probes, probe{name: "upload without file", method: "POST", path: "/api/kbs/manuals/documents", ct: mw.FormDataContentType(), body: buf.String(), c: admin})

	errorsSeen := 0
	for _, p := range probes {
		code, body := p.c.do(t, p.method, p.path, p.ct, strings.NewReader(p.body), append(p.header, "Origin", base)...)
		if code < 400 {
			continue
		}
		errorsSeen++
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Message == "" {
			t.Errorf("%s %s (%s): %d body is not a JSON error: %s", p.method, p.path, p.name, code, body)
			continue
		}
		if loc := goInternals.FindString(e.Error.Message); loc != "" {
			t.Errorf("%s %s (%s): %d message shows Go internals (%q): %s", p.method, p.path, p.name, code, loc, e.Error.Message)
		}
	}
	if errorsSeen < len(probes)*9/10 {
		t.Fatalf("only %d of %d probes failed: the probes do not reach the error paths", errorsSeen, len(probes))
	}
}

// The JSON decoding messages name the body's field and the JSON types.
func TestErrorBodiesNameTheField(t *testing.T) {
	_, base := startServer(t, func(m *Main) { m.NoDemo, m.NoWatch = true, true })
	c := client{base: base}
	for body, want := range map[string]string{
		`[1]`:                `the body must be a JSON object, not an array`,
		`{"question": [1]}`:  `field "question" must be a string, not an array`,
		`{"kbs": "demo"}`:    `field "kbs" must be an array, not a string`,
		`{"question": "q",}`: `the body is not valid JSON (at byte`,
		`{"nope": 1}`:        `unknown field "nope"`,
		``:                   `the body is empty`,
		`{"question": "q"`:   `the body ends in the middle of a JSON value`,
	} {
		code, b := c.do(t, http.MethodPost, "/api/chat", "application/json", strings.NewReader(body), "Origin", base)
		var e struct {
			Error struct{ Message string } `json:"error"`
		}
		json.Unmarshal(b, &e)
		if code != 400 || !strings.Contains(e.Error.Message, want) {
			t.Errorf("%s: %d %s, want %q", body, code, b, want)
		}
	}
}

// An empty file is refused when it is uploaded (400, saying it is empty), and no document is created.
func TestEmptyUploadIsRefused(t *testing.T) {
	_, base := startServer(t, func(m *Main) { m.NoDemo, m.NoWatch = true, true })
	c := client{base: base}
	if code, b := c.json(t, http.MethodPost, "/api/kbs", map[string]string{"name": "manuals"}); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	code, b := c.upload(t, "manuals", "empty.txt", "")
	if code != 400 || !strings.Contains(string(b), `the file \"empty.txt\" is empty (0 bytes)`) {
		t.Fatalf("empty upload: %d %s", code, b)
	}
	if _, b := c.json(t, http.MethodGet, "/api/kbs/manuals/documents", nil); strings.Contains(string(b), "empty.txt") {
		t.Fatalf("a document was created for the empty file: %s", b)
	}
}
