package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/llm/llmtest"
	"github.com/docmind/docmind/shared/mcp"
	"github.com/docmind/docmind/shared/rag"
)

// functionURL carries each HTTP request of a client to the query function's handler as a Function URL
// event (payload 2.0) and hands back the streamed response as lambdaurl produces it, so that the official
// MCP client talks to the function as it would behind its URL (the runtime interface emulator is not
// installed here; `make test-lambda` runs the built functions under it).
type functionURL struct{ f *fixture }

func (u functionURL) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body.Close()
	}
	headers := map[string]string{}
	for k, v := range r.Header {
		headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	res, err := u.f.h(r.Context(), urlEvent(r.Method, r.URL.Path, string(body), headers))
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	for k, v := range res.Headers {
		h.Set(k, v)
	}
	return &http.Response{StatusCode: res.StatusCode, Header: h, Body: io.NopCloser(res.Body), Request: r}, nil
}

// TestMCPThroughFunctionURL: the query function answers MCP at /mcp behind its Function URL, with the
// caller's key: tools listed, a cited answer from ask with progress notifications streamed before it.
func TestMCPThroughFunctionURL(t *testing.T) {
	answerText := "Annual plans can be refunded within 30 days of purchase [1]."
	f := newFixture(t, "keys", caps{URLAuth: authNone, MaxTokens: 256, StreamMax: time.Minute, IdleGap: 30 * time.Second, Reserve: 3 * time.Second},
		llmtest.Reply{Content: answerText, Gap: 20 * time.Millisecond})
	key := f.key(t)
	var progress atomic.Int64
	client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) { progress.Add(1) }})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := &http.Client{Transport: withBearer{key, functionURL{f}}}
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "https://abc.lambda-url.eu-west-1.on.aws/mcp", HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("tools: %v %+v", err, tools)
	}
	p := &sdk.CallToolParams{Name: "ask", Arguments: map[string]any{"question": "How long is the refund window for annual plans?"}}
	p.SetProgressToken("t1")
	res, err := cs.CallTool(ctx, p)
	if err != nil || res.IsError {
		t.Fatalf("ask: %v %+v", err, res)
	}
	var out mcp.AskOutput
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil || !strings.Contains(out.Answer, "30 days") || len(out.Sources) == 0 || out.Sources[0].FileName != "billing.md" {
		t.Errorf("ask = %s", b)
	}
	// the client hands notifications to their handler apart from the result: wait for it a little
	for deadline := time.Now().Add(10 * time.Second); progress.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if progress.Load() == 0 {
		t.Error("no progress notification came through the Function URL stream")
	}
	// without the key: 401 before any tool runs
	anon := sdk.NewClient(&sdk.Implementation{Name: "anon", Version: "1"}, nil)
	if _, err := anon.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: "https://abc.lambda-url.eu-west-1.on.aws/mcp",
		HTTPClient: &http.Client{Transport: functionURL{f}}, MaxRetries: -1}, nil); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("connect without a key: %v, want 401", err)
	}
}

// key creates an admin of the stack's tenant ("local") and returns a key of theirs.
func (f *fixture) key(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	u := rag.User{Tenant: "local", Email: "ops@local.example", Role: rag.RoleAdmin}
	if err := f.db.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	plain, prefix, hash, err := auth.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.CreateAPIKey(ctx, &rag.APIKey{Tenant: "local", UserID: u.ID, Hash: hash, Prefix: prefix, Name: "mcp"}); err != nil {
		t.Fatal(err)
	}
	return plain
}

type withBearer struct {
	token string
	next  http.RoundTripper
}

func (b withBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestMCPEvent: testdata/mcp.json, a Function URL event carrying one stateless tools/call of ask (the
// event infra's TestRIEQuery sends the built function under the emulator), answered in the call's own
// event stream: progress notifications first, then the cited result.
func TestMCPEvent(t *testing.T) {
	f := newFixture(t, "keys", caps{URLAuth: authIAM, MaxTokens: 256, StreamMax: time.Minute, IdleGap: 30 * time.Second, Reserve: 3 * time.Second},
		llmtest.Reply{Content: "Annual plans can be refunded within 30 days of purchase [1]."})
	key := f.key(t)
	raw, err := os.ReadFile(filepath.Join("testdata", "mcp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.LambdaFunctionURLRequest
	if err := json.Unmarshal(bytes.ReplaceAll(raw, []byte("Bearer KEY"), []byte("Bearer "+key)), &ev); err != nil {
		t.Fatal(err)
	}
	res, err := f.h(context.Background(), &ev)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Headers["Content-Type"], "text/event-stream") {
		t.Fatalf("%d %v: %s", res.StatusCode, res.Headers, body)
	}
	progress := strings.Index(string(body), `"method":"notifications/progress"`)
	result := strings.Index(string(body), `"result":`)
	if progress < 0 || result < progress || !strings.Contains(string(body), "30 days") || !strings.Contains(string(body), `"file_name":"billing.md"`) {
		t.Errorf("want progress notifications, then a cited result: %s", body)
	}
}
