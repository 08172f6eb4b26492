package answer

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/netx"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

func TestWebCompensation(t *testing.T) {
	var queries []string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		queries = append(queries, string(b))
		if r.Header.Get("Authorization") != "Bearer tv-key" {
			t.Errorf("authorization %q", r.Header.Get("Authorization"))
		}
		w.WriteHeader(status)
		io.WriteString(w, `{"results":[{"title":"Leave law","url":"https://example.org/leave","content":"Statutory annual leave is at least 20 days per year.","score":0.8},`+
			`{"title":"bad","url":"javascript:alert(1)","content":"x"}]}`)
	}))
	defer srv.Close()
	client := netx.NewClient(netx.Options{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	kb := []rank.Evidence{ev("handbook.docx", "Something about annual leave requests.", 0.2)}
	fr := &fakeRetriever{res: &retrieve.Result{Evidence: kb, Grade: rank.Grade{Tier: rank.TierLow, WebCompensation: true}}}
	p := &Pipeline{Retriever: fr, Web: &WebSearch{URL: srv.URL, APIKey: "tv-key", Client: client}}
	done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "statutory annual leave days"}, (&recorder{}).emit)
	if err != nil {
		t.Fatal(err)
	}
	if done.WebSources != 1 || len(done.Sources) != 2 || done.Sources[0].FileName != "handbook.docx" || done.Sources[1].FileName != "https://example.org/leave" || done.Sources[1].KBID != "web" {
		t.Fatalf("sources %+v: web results follow the KB's, unsafe URLs dropped", done.Sources)
	}
	if !strings.Contains(queries[0], `"query":"statutory annual leave days"`) {
		t.Fatalf("request %s", queries[0])
	}
	// No compensation asked: no call.
	fr.res = &retrieve.Result{Evidence: kb, Grade: rank.Grade{Tier: rank.TierHigh}}
	if done, _ := p.Run(context.Background(), Request{Tenant: "acme", Question: "annual leave"}, (&recorder{}).emit); len(queries) != 1 || done.WebSources != 0 {
		t.Fatalf("web searched without compensation: %d calls", len(queries))
	}
	// A failing provider degrades.
	status = http.StatusTooManyRequests
	fr.res = &retrieve.Result{Evidence: kb, Grade: rank.Grade{Tier: rank.TierLow, WebCompensation: true}}
	if done, err := p.Run(context.Background(), Request{Tenant: "acme", Question: "annual leave"}, (&recorder{}).emit); err != nil || !strings.Contains(strings.Join(done.Degraded, ","), "web") {
		t.Fatalf("failing web: %+v %v", done, err)
	}
	// Without the test allowance the hardened client refuses the loopback server.
	p.Web.Client = netx.NewClient(netx.Options{})
	status = http.StatusOK
	if done, _ := p.Run(context.Background(), Request{Tenant: "acme", Question: "annual leave"}, (&recorder{}).emit); !strings.Contains(strings.Join(done.Degraded, ","), "web") {
		t.Fatalf("loopback reached: %+v", done.Degraded)
	}
}
