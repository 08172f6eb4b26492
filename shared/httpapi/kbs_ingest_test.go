package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/docmind/docmind/shared/ingest"
)

// TestKBListSaysWhetherThisServerIngests: GET /api/kbs says "ingest": true where uploads, deletes and
// reprocessing are served (docmind serve) and false where they are not (the AWS query function), so
// that the page shows or hides those controls.
func TestKBListSaysWhetherThisServerIngests(t *testing.T) {
	db := migratedDB(t)
	for _, withIngester := range []bool{false, true} {
		d := Deps{Library: db, Logger: slog.New(slog.DiscardHandler), Tenant: func(*http.Request) (string, error) { return "acme", nil }}
		if withIngester {
			d.Ingester = queueIngester{&ingest.Queue{Service: &ingest.Service{}}}
		}
		rec := httptest.NewRecorder()
		New(d).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/kbs", nil))
		var out struct {
			KnowledgeBases []json.RawMessage `json:"knowledge_bases"`
			Ingest         *bool             `json:"ingest"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK {
			t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
		}
		if out.Ingest == nil || *out.Ingest != withIngester || out.KnowledgeBases == nil {
			t.Fatalf("with an ingester %v: %s", withIngester, rec.Body)
		}
	}
}
