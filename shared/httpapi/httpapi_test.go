package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

func TestHealth(t *testing.T) {
	up := Check{Name: "sql", Driver: "sqlite", Probe: func(context.Context) error { return nil }}
	down := Check{Name: "kv", Driver: "redis", Probe: func(context.Context) error {
		return rag.E("redis.Ping", rag.KindUnavailable, errors.New("dial tcp 10.0.0.7:6379: secret-host refused"))
	}}
	for _, c := range []struct {
		checks []Check
		code   int
		status string
	}{
		{[]Check{up}, 200, "ok"},
		{[]Check{up, down}, 503, "degraded"},
	} {
		rec := httptest.NewRecorder()
		New(Deps{Version: "v-test", Checks: c.checks}).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
		if rec.Code != c.code {
			t.Fatalf("code %d, want %d", rec.Code, c.code)
		}
		var h Health
		if err := json.Unmarshal(rec.Body.Bytes(), &h); err != nil {
			t.Fatal(err)
		}
		if h.Status != c.status || h.Version != "v-test" || !h.Stores["sql"].OK || h.Stores["sql"].Driver != "sqlite" {
			t.Fatalf("health = %+v", h)
		}
		if strings.Contains(rec.Body.String(), "secret-host") {
			t.Fatal("internal error text leaked into /healthz")
		}
	}
}

func TestErrorsAreJSONAndSanitised(t *testing.T) {
	rec := httptest.NewRecorder()
	New(Deps{}).ServeHTTP(rec, httptest.NewRequest("GET", "/nope", nil))
	if rec.Code != 404 || !strings.Contains(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("unknown route: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	var body struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(rec.Body.Bytes(), &body)
	if body.Error.Code != "NotFound" {
		t.Fatalf("body %s", rec.Body)
	}
	for kind, want := range map[rag.Kind]int{rag.KindInvalid: 400, rag.KindNotFound: 404, rag.KindConflict: 409, rag.KindUnavailable: 503, rag.KindInternal: 500, rag.KindUnknown: 500, rag.KindPermission: 403} {
		rec := httptest.NewRecorder()
		WriteError(rec, httptest.NewRequest("GET", "/x", nil), nil2(), rag.E("op", kind, errors.New("password=hunter2 at db.internal")))
		if rec.Code != want {
			t.Errorf("%v: status %d, want %d", kind, rec.Code, want)
		}
		if kind != rag.KindInvalid && kind != rag.KindNotFound && kind != rag.KindConflict && strings.Contains(rec.Body.String(), "hunter2") {
			t.Errorf("%v: internal text leaked: %s", kind, rec.Body)
		}
	}
	rec = httptest.NewRecorder()
	New(Deps{}).ServeHTTP(rec, httptest.NewRequest("POST", "/healthz", nil))
	if rec.Code != http.StatusMethodNotAllowed && rec.Code != 404 {
		t.Fatalf("POST /healthz = %d", rec.Code)
	}
}

func nil2() *slog.Logger { return slog.New(slog.DiscardHandler) }

// The web page is served from the binary with a strict policy; other paths stay JSON 404s.
func TestWebPage(t *testing.T) {
	// Without the chat endpoints there is no page.
	bare := httptest.NewServer(New(Deps{}))
	defer bare.Close()
	if resp, err := http.Get(bare.URL + "/"); err != nil || resp.StatusCode != 404 {
		t.Fatalf("a handler without chat serves the page: %v", err)
	}
	srv := newChatFixture(t, false).srv
	for path, want := range map[string]string{"/": "text/html", "/app.js": "text/javascript", "/app.css": "text/css"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), want) || !strings.Contains(csp, "script-src 'self'") ||
			strings.Contains(csp, "unsafe-inline") || len(body) < 100 {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, resp.Header)
		}
		if path == "/" && (!strings.Contains(string(body), `<script type="module" src="/app.js">`) || strings.Contains(string(body), "<script>")) {
			t.Fatal("the page must load its script from /app.js as a module, with no inline script")
		}
		if path == "/app.js" && strings.Contains(string(body), "innerHTML") {
			t.Fatal("app.js must not write innerHTML")
		}
	}
	resp, _ := http.Get(srv.URL + "/index.php")
	if resp.StatusCode != 404 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("unknown path: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp.Body.Close()
}
