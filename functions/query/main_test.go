package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/docmind/docmind/functions/internal/httpfn"
	"github.com/docmind/docmind/functions/internal/kbtest"
	"github.com/docmind/docmind/functions/internal/lambdatest"
	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/deptest"
	"github.com/docmind/docmind/shared/llm/llmtest"
	"github.com/docmind/docmind/shared/obs"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memkv"
	"github.com/docmind/docmind/shared/store/sqldb"
)

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/query") }

// fixture is the query function's handler over the embedded stores with one ingested document and a
// fake OpenAI-compatible model.
type fixture struct {
	h   func(context.Context, *events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error)
	llm *llmtest.Server
	log *bytes.Buffer
	db  *sqldb.DB
}

func newFixture(t *testing.T, mode string, c caps, reply llmtest.Reply) *fixture {
	t.Helper()
	return newOffloadFixture(t, mode, c, offload{}, reply)
}

// newOffloadFixture is newFixture with rerank or grade done by the functions off names.
func newOffloadFixture(t *testing.T, mode string, c caps, off offload, reply llmtest.Reply) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{log: &bytes.Buffer{}}
	f.llm = llmtest.New(t, func(call llmtest.Call) llmtest.Reply {
		if !call.Stream {
			return llmtest.Reply{Content: "{}"}
		}
		return reply
	})
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Auth.Mode = mode
	cfg.Chat.Provider, cfg.Chat.BaseURL, cfg.Chat.MainModel, cfg.Chat.AgentRounds = "openai", f.llm.URL+"/v1", "main", 0
	cfg.Chat.CacheEnabled, cfg.Chat.MemoryEnabled = false, false
	lib := kbtest.New(t, cfg)
	f.db = lib.DB
	tr, err := obs.Setup(ctx, obs.Options{Service: "test"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(tr.LogHandler(slog.NewJSONHandler(f.log, nil)))
	h, err := newHandler(cfg, c, httpfn.Stores{SQL: lib.DB, Keyword: lib.Keyword, Vectors: lib.Vectors, KV: memkv.New(nil, 0)}, off, uploads{}, tr, log)
	if err != nil {
		t.Fatal(err)
	}
	f.h = lambdaurl.Wrap(h)
	return f
}

// urlEvent is a Function URL event as Lambda delivers it (payload format 2.0).
func urlEvent(method, path, body string, headers map[string]string) *events.LambdaFunctionURLRequest {
	ev := &events.LambdaFunctionURLRequest{RawPath: path, Body: body, Headers: map[string]string{"content-type": "application/json", "host": "abc.lambda-url.eu-west-1.on.aws"}}
	for k, v := range headers {
		ev.Headers[k] = v
	}
	ev.RequestContext.DomainName = "abc.lambda-url.eu-west-1.on.aws"
	ev.RequestContext.HTTP.Method = method
	ev.RequestContext.HTTP.Path = path
	ev.RequestContext.HTTP.SourceIP = "203.0.113.7"
	return ev
}

// frame is one SSE event and when the reader got it.
type frame struct {
	name string
	data json.RawMessage
	at   time.Time
}

// stream is the response as Lambda's runtime client reads it: the HTTP-integration prelude (JSON with
// status and headers), eight NUL bytes, then the body.
type stream struct {
	prelude struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	body *bufio.Reader
}

func readPrelude(t *testing.T, res *events.LambdaFunctionURLStreamingResponse) *stream {
	t.Helper()
	r := bufio.NewReader(res)
	var pre []byte
	for !bytes.HasSuffix(pre, make([]byte, 8)) {
		b, err := r.ReadByte()
		if err != nil {
			t.Fatalf("prelude: %v after %q", err, pre)
		}
		pre = append(pre, b)
		if len(pre) > 64<<10 {
			t.Fatal("no 8-NUL separator in the first 64 KiB")
		}
	}
	s := &stream{body: r}
	if err := json.Unmarshal(pre[:len(pre)-8], &s.prelude); err != nil {
		t.Fatalf("prelude %q: %v", pre, err)
	}
	return s
}

// next reads one SSE frame as soon as it is complete.
func (s *stream) next() (frame, error) {
	var f frame
	for {
		line, err := s.body.ReadString('\n')
		if err != nil {
			return f, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "event: "):
			f.name = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			f.data = json.RawMessage(line[len("data: "):])
		case line == "" && f.name != "":
			f.at = time.Now()
			return f, nil
		}
	}
}

func (s *stream) all(t *testing.T) []frame {
	t.Helper()
	var out []frame
	for {
		f, err := s.next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
}

// TestChatStreamsThroughLambdaURL: the chat through lambdaurl, read the way the runtime reads it. The
// fake model pauses 150 ms between words, so a buffered response would deliver every token at once.
func TestChatStreamsThroughLambdaURL(t *testing.T) {
	const gap = 150 * time.Millisecond
	answerText := "Annual plans can be refunded within 30 days of purchase [1]. Monthly plans are not refundable [1]."
	f := newFixture(t, "none", caps{URLAuth: authIAM, MaxTokens: 256, StreamMax: time.Minute, IdleGap: 30 * time.Second, Reserve: 3 * time.Second},
		llmtest.Reply{Content: answerText, Gap: gap})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := f.h(ctx, urlEvent("POST", "/api/chat", `{"question":"How long is the refund window for annual plans?"}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	s := readPrelude(t, res)
	if s.prelude.StatusCode != 200 || !strings.HasPrefix(s.prelude.Headers["Content-Type"], "text/event-stream") {
		t.Fatalf("prelude %+v, want 200 text/event-stream", s.prelude)
	}
	if s.prelude.Headers["X-Trace-Id"] == "" {
		t.Error("no X-Trace-Id header")
	}
	frames := s.all(t)
	if len(frames) < 3 || frames[0].name != "meta" {
		t.Fatalf("frames %v", names(frames))
	}
	var tokens []frame
	for _, fr := range frames {
		if fr.name == "token" {
			tokens = append(tokens, fr)
		}
	}
	last := frames[len(frames)-1]
	if last.name != "done" {
		t.Fatalf("last event %s %s", last.name, last.data)
	}
	// the conversation is named before the stream too (the page adopts a stopped answer's by it)
	var stored struct {
		ConversationID string `json:"conversation_id"`
	}
	if json.Unmarshal(last.data, &stored) != nil || stored.ConversationID == "" || s.prelude.Headers["X-Docmind-Conversation"] != stored.ConversationID {
		t.Errorf("X-Docmind-Conversation %q, done's conversation %s", s.prelude.Headers["X-Docmind-Conversation"], last.data)
	}
	words := len(strings.Fields(answerText))
	if len(tokens) < words/2 {
		t.Fatalf("%d token events for %d words: %v", len(tokens), words, names(frames))
	}
	// one at a time: the first token was read while the model was still writing the rest
	spread := tokens[len(tokens)-1].at.Sub(tokens[0].at)
	if want := time.Duration(words-1) * gap / 2; spread < want {
		t.Errorf("tokens arrived within %v, want at least %v apart (buffered to the end?)", spread, want)
	}
	var done struct {
		Answer  string `json:"answer"`
		TraceID string `json:"trace_id"`
		Sources []struct {
			FileName string `json:"file_name"`
		} `json:"sources"`
	}
	if err := json.Unmarshal(last.data, &done); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done.Answer, "30 days") || len(done.Sources) == 0 || done.Sources[0].FileName != "billing.md" {
		t.Errorf("done = %s, want a cited answer from billing.md", last.data)
	}
	if done.TraceID != s.prelude.Headers["X-Trace-Id"] || len(done.TraceID) != 32 {
		t.Errorf("done trace_id %q, header %q", done.TraceID, s.prelude.Headers["X-Trace-Id"])
	}
	if calls := f.llm.Calls(); len(calls) == 0 || calls[len(calls)-1].MaxTokens != 256 {
		t.Errorf("model calls %+v, want max_tokens 256 on the answer", calls)
	}
	if !strings.Contains(f.log.String(), `"trace_id":"`+done.TraceID+`"`) {
		t.Errorf("no log line carries the trace id: %s", f.log.String())
	}
}

func names(fs []frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.name)
	}
	return out
}

// TestTerminalEventBeforeDeadline (STR-05): the model stalls after its first word; the invocation's
// deadline is 8 s away. The stream still ends with its own terminal event at least 2 s before it.
func TestTerminalEventBeforeDeadline(t *testing.T) {
	f := newFixture(t, "none", caps{URLAuth: authIAM, MaxTokens: 256, StreamMax: time.Minute, IdleGap: time.Minute, Reserve: 4 * time.Second},
		llmtest.Reply{Content: "Annual plans stall here forever", Gap: time.Hour})
	deadline := time.Now().Add(8 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	res, err := f.h(ctx, urlEvent("POST", "/api/chat", `{"question":"How long is the refund window for annual plans?"}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	frames := readPrelude(t, res).all(t)
	last := frames[len(frames)-1]
	if last.name != "done" && last.name != "error" {
		t.Fatalf("last event %q (%v), want done or error", last.name, names(frames))
	}
	if left := deadline.Sub(last.at); left < 2*time.Second {
		t.Errorf("terminal event %s only %v before the deadline, want >= 2s", last.name, left)
	}
	if !json.Valid(last.data) {
		t.Errorf("terminal frame not valid JSON: %s", last.data)
	}
}

// TestIdleGap: a model silent for longer than the idle cap ends the stream with a terminal event long
// before the wall-time cap.
func TestIdleGap(t *testing.T) {
	f := newFixture(t, "none", caps{URLAuth: authIAM, MaxTokens: 256, StreamMax: time.Minute, IdleGap: 500 * time.Millisecond, Reserve: 3 * time.Second},
		llmtest.Reply{Content: "Annual plans stall here forever", Gap: time.Hour})
	start := time.Now()
	res, err := f.h(context.Background(), urlEvent("POST", "/api/chat", `{"question":"How long is the refund window for annual plans?"}`, nil))
	if err != nil {
		t.Fatal(err)
	}
	frames := readPrelude(t, res).all(t)
	last := frames[len(frames)-1]
	if (last.name != "done" && last.name != "error") || time.Since(start) > 30*time.Second {
		t.Fatalf("last %s after %v, want a terminal event well before the 60 s wall cap", last.name, time.Since(start))
	}
}

// TestAuthentication: with keys, a request without a key is refused before anything runs; the page
// and the health check stay reachable.
func TestAuthentication(t *testing.T) {
	f := newFixture(t, "keys", caps{URLAuth: authNone, MaxTokens: 256, StreamMax: time.Minute, IdleGap: time.Second, Reserve: 3 * time.Second}, llmtest.Reply{Content: "x"})
	for _, c := range []struct {
		method, path, body string
		headers            map[string]string
		want               int
	}{
		{"POST", "/api/chat", `{"question":"q"}`, nil, http.StatusUnauthorized},
		{"POST", "/api/chat", `{"question":"q"}`, map[string]string{"authorization": "Bearer dm_forged"}, http.StatusUnauthorized},
		{"POST", "/v1/chat/completions", `{"model":"docmind","messages":[{"role":"user","content":"q"}]}`, nil, http.StatusUnauthorized},
		{"GET", "/", "", nil, http.StatusOK},
		{"GET", "/healthz", "", nil, http.StatusOK},
	} {
		res, err := f.h(context.Background(), urlEvent(c.method, c.path, c.body, c.headers))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res)
		if res.StatusCode != c.want {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, res.StatusCode, c.want)
		}
	}
	if len(f.llm.Calls()) != 0 {
		t.Error("the model was called for an unauthenticated request")
	}
}

// TestOtherTenantRefused: the chat serves the stack's tenant (DOCMIND_TENANT) only; a valid key of
// another tenant gets 403 JSON naming the stack's tenant, and the model is never called.
func TestOtherTenantRefused(t *testing.T) {
	f := newFixture(t, "keys", caps{URLAuth: authNone, MaxTokens: 256, StreamMax: time.Minute, IdleGap: time.Second, Reserve: 3 * time.Second}, llmtest.Reply{Content: "x"})
	ctx := context.Background()
	u := rag.User{Tenant: "acme", Email: "ops@acme.example", Role: rag.RoleAdmin}
	if err := f.db.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	plain, prefix, hash, err := auth.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.CreateAPIKey(ctx, &rag.APIKey{Tenant: "acme", UserID: u.ID, Hash: hash, Prefix: prefix, Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	res, err := f.h(ctx, urlEvent("POST", "/api/chat", `{"question":"q"}`, map[string]string{"authorization": "Bearer " + plain}))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `serves tenant \"local\"`) {
		t.Errorf("another tenant: %d %s, want 403 naming the stack's tenant", res.StatusCode, b)
	}
	if len(f.llm.Calls()) != 0 {
		t.Error("the model was called for another tenant")
	}
}

func TestRequireAuth(t *testing.T) {
	// none is refused behind either AuthType: OAC's signature says nothing about who the viewer is
	for _, url := range []string{authNone, authIAM} {
		if err := requireAuth("none", url); err == nil || !strings.Contains(err.Error(), "every caller") {
			t.Errorf("none behind %s: %v, want a refusal", url, err)
		}
	}
	for _, c := range []struct{ mode, url string }{{"keys", authIAM}, {"keys", authNone}, {"jwt", authNone}, {"keys,jwt", authIAM}} {
		if err := requireAuth(c.mode, c.url); err != nil {
			t.Errorf("%s behind %s: %v", c.mode, c.url, err)
		}
	}
}

func TestLoadCaps(t *testing.T) {
	c, err := loadCaps(func(string) string { return "" })
	if err != nil || c != defaultCaps() {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	env := map[string]string{"DOCMIND_MAX_TOKENS": "9", "DOCMIND_STREAM_IDLE": "soon", "DOCMIND_STREAM_RESERVE": "1s", "DOCMIND_FUNCTION_URL_AUTH": "OPEN",
		"DOCMIND_GRADE_TIMEOUT": "0s"}
	_, err = loadCaps(func(k string) string { return env[k] })
	var ve *config.ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 5 {
		t.Errorf("got %v, want all five problems reported", err)
	}
}

// TestOpenRefusesEmbeddedStores: the main refuses the embedded drivers and DOCMIND_AUTH=none on a
// public URL before opening anything.
func TestOpenRefusesEmbeddedStores(t *testing.T) {
	lambdatest.RefusesEmbeddedStores(t, func(getenv func(string) string) error {
		_, err := open(context.Background(), getenv, nil, slog.New(slog.DiscardHandler))
		return err
	})
	env := map[string]string{"DOCMIND_SQL_DRIVER": "mysql", "DOCMIND_VECTOR_DRIVER": "milvus", "DOCMIND_BLOB_DRIVER": "s3", "DOCMIND_KV_DRIVER": "redis",
		"DOCMIND_SQL_DSN": "u:p@tcp(127.0.0.1:1)/db", "DOCMIND_MILVUS_ADDR": "127.0.0.1:1", "DOCMIND_S3_BUCKET": "b", "DOCMIND_REDIS_ADDR": "127.0.0.1:1"}
	if _, err := open(context.Background(), func(k string) string { return env[k] }, nil, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), "DOCMIND_AUTH=none") {
		t.Errorf("auth none on a public URL: %v", err)
	}
}

// TestKBsSayNoIngest: the query function takes no uploads, deletes or reprocessing (the ingest function
// does), and GET /api/kbs says so, so that the page hides them instead of offering what fails.
func TestKBsSayNoIngest(t *testing.T) {
	f := newFixture(t, "none", caps{URLAuth: authIAM, MaxTokens: 256, StreamMax: time.Minute, IdleGap: time.Second, Reserve: 3 * time.Second}, llmtest.Reply{Content: "x"})
	res, err := f.h(context.Background(), urlEvent("GET", "/api/kbs", "", nil))
	if err != nil {
		t.Fatal(err)
	}
	s := readPrelude(t, res)
	var got struct {
		KnowledgeBases []json.RawMessage `json:"knowledge_bases"`
		Ingest         *bool             `json:"ingest"`
	}
	if err := json.NewDecoder(s.body).Decode(&got); err != nil || s.prelude.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/kbs: %d, %v", s.prelude.StatusCode, err)
	}
	if got.Ingest == nil || *got.Ingest {
		t.Fatalf(`GET /api/kbs says ingest %v, want false`, got.Ingest)
	}
	if len(got.KnowledgeBases) == 0 {
		t.Fatal("no knowledge bases listed: the fixture has one")
	}
}
