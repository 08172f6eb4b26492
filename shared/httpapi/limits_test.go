package httpapi

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/limits"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
)

// fakeLimiter answers every Allow with one decision and records what was spent.
type fakeLimiter struct {
	d     limits.Decision
	spent atomic.Int64
	asked atomic.Int32
}

func (f *fakeLimiter) Allow(context.Context, string, string) limits.Decision {
	f.asked.Add(1)
	return f.d
}

func (f *fakeLimiter) Spend(_ context.Context, _, _ string, tokens int64) { f.spent.Add(tokens) }

func TestLimitsRefuseBeforeThePipeline(t *testing.T) {
	for _, c := range []struct {
		d         limits.Decision
		wantLimit string
	}{
		{limits.Decision{Limit: limits.LimitRate, RetryAfter: 1500 * time.Millisecond}, `"limit":"rate"`},
		{limits.Decision{Limit: limits.LimitDailyTokens, RetryAfter: 3 * time.Hour}, `"limit":"daily_tokens"`},
	} {
		lim := &fakeLimiter{d: c.d}
		f := newChatFixtureWith(t, false, func(d *Deps) { d.Limits = lim })
		resp := f.post(t, `{"question":"How many days of leave?"}`)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 429 || !strings.Contains(string(body), c.wantLimit) || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: %d %s Retry-After=%q", c.d.Limit, resp.StatusCode, body, resp.Header.Get("Retry-After"))
		}
		if n := len(f.rec.got); n != 0 {
			t.Fatalf("%s: the pipeline retrieved %d times after a refusal", c.d.Limit, n)
		}
	}
}

func TestLimitsStoreDownFailsOpenAndSaysSo(t *testing.T) {
	lim := &fakeLimiter{d: limits.Decision{Allowed: true, Degraded: true}}
	f := newChatFixtureWith(t, false, func(d *Deps) { d.Limits = lim })
	resp := f.post(t, `{"question":"How many days of leave?"}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"limits"`) {
		t.Fatalf("a failing limits store: %d; the done event must name limits in degraded: %s", resp.StatusCode, body)
	}
	if !strings.Contains(f.logs.String(), "limits store failed") {
		t.Fatalf("no log line for the failing limits store: %s", f.logs.String())
	}
	// the other limited endpoints say so too: ask, search and the OpenAI-compatible endpoint (its docmind
	// extension), streamed or not
	for _, c := range []struct{ path, body string }{
		{"/api/ask", `{"question":"How many days of leave?"}`},
		{"/api/search", `{"query":"days of leave"}`},
		{"/v1/chat/completions", `{"model":"docmind","messages":[{"role":"user","content":"How many days of leave?"}]}`},
		{"/v1/chat/completions", `{"model":"docmind","stream":true,"messages":[{"role":"user","content":"How many days of leave?"}]}`},
	} {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !regexp.MustCompile(`"degraded":\[[^\]]*"limits"`).Match(body) {
			t.Errorf("%s %s with the limits store down: %d; degraded must name limits: %.400s", c.path, c.body, resp.StatusCode, body)
		}
	}
}

// countingMembers grants one knowledge base and counts the lookups.
type countingMembers struct {
	kbID  string
	calls atomic.Int32
}

func (m *countingMembers) MemberRoles(context.Context, string, string) (map[string]rag.KBRole, error) {
	m.calls.Add(1)
	return map[string]rag.KBRole{m.kbID: rag.KBReader}, nil
}

type memberAuth struct{}

func (memberAuth) Authenticate(context.Context, string) (rag.Principal, error) {
	return rag.Principal{Tenant: "acme", UserID: "usr_member", Role: rag.RoleMember, Method: "key"}, nil
}

// One question reads the caller's roles once, however many checks it makes.
func TestRolesReadOncePerRequest(t *testing.T) {
	members := &countingMembers{}
	f := newChatFixtureWith(t, true, func(d *Deps) { d.Auth, d.Members = memberAuth{}, members })
	members.kbID = f.mine.ID
	resp := f.post(t, `{"question":"How many days of leave?","kbs":["handbook"]}`)
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("a reader asking: %d", resp.StatusCode)
	}
	if n := members.calls.Load(); n != 1 {
		t.Fatalf("roles read %d times for one question, want 1", n)
	}
	if got := f.rec.got[len(f.rec.got)-1].Filter.KBIDs; len(got) != 1 || got[0] != f.mine.ID {
		t.Fatalf("retrieval filter %v, want only %s", got, f.mine.ID)
	}
}

// charge spends what the request's model calls counted; an answer's own usage counts only when it is more
// (an Asker ran the model elsewhere) and never for a cached answer, whose usage is the original's.
func TestChargeCountsThisRequestsCalls(t *testing.T) {
	used := llm.Usage{PromptTokens: 200, CompletionTokens: 20}
	for _, c := range []struct {
		name string
		done *answer.Done
		want int64
	}{
		{"stopped: no done, nothing counted", nil, 0},
		{"answered elsewhere (Asker)", &answer.Done{Usage: used}, 220},
		{"a cache hit", &answer.Done{Usage: used, FromCache: true}, 0},
	} {
		lim := &fakeLimiter{}
		h := &handler{d: Deps{Limits: lim}}
		h.charge(t.Context(), rag.Principal{Tenant: "t", UserID: "u"}, &llm.Meter{}, c.done)
		if got := lim.spent.Load(); got != c.want {
			t.Errorf("%s: spent %d, want %d", c.name, got, c.want)
		}
	}
}
