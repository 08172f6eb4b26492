package httpapi

import (
	"context"
	"encoding/json"
	"errors"
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
