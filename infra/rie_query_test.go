package infra

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/aws/aws-lambda-go/events"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/llm/llmtest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rankfn"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/milvus"
	mysqlstore "github.com/docmind/docmind/shared/store/mysql"
)

const queryHandbook = `# Refunds

Annual plans can be refunded within 30 days of purchase. Monthly plans are not refundable.

# Support

Support answers on weekdays from 9 to 17.
`

// TestRIEQuery runs the query side's built binaries under aws-lambda-rie with the template's own
// environment against in-process MySQL, Milvus and Redis and a fake OpenAI-compatible model: the chat
// function answers a Function URL event with a cited, streamed answer; the api function answers
// POST /api/ask (API Gateway payload 2.0); rerank and grade answer their contracts; and the answer state
// machine (the ASL file, run by aslrun) invokes the askstep, rerank and grade binaries for every Task.
func TestRIEQuery(t *testing.T) {
	rie := requireRIE(t)
	f := newFixture(t)
	ctx := context.Background()
	redis := miniredis.RunT(t)
	model := llmtest.New(t, func(c llmtest.Call) llmtest.Reply {
		if !c.Stream {
			return llmtest.Reply{Content: "{}"}
		}
		return llmtest.Reply{Content: "Annual plans can be refunded within 30 days of purchase [1]."}
	})
	key := seedQueryData(t, f)
	dir := t.TempDir()
	env := func(fn string, extra ...string) []string {
		return append(f.envFor(fn), append([]string{"DOCMIND_REDIS_ADDR=" + redis.Addr(), "DOCMIND_REDIS_TLS=false",
			"DOCMIND_CHAT_PROVIDER=openai", "DOCMIND_CHAT_BASE_URL=" + model.URL + "/v1", "DOCMIND_CHAT_MAIN_MODEL=main"}, extra...)...)
	}

	// size and cold init (exec to the first /next: config, secrets, connections) with the stores seeded,
	// as on a warm account; the numbers are reported, not asserted (CI machines are loaded)
	t.Run("SizeAndColdInit", func(t *testing.T) {
		for _, fn := range []string{"QueryFunction", "ApiFunction", "AskStepFunction", "RerankFunction", "GradeFunction", "CanaryFunction"} {
			arm := build(t, fn, "arm64", dir)
			st, err := os.Stat(arm)
			if err != nil {
				t.Fatal(err)
			}
			d, logs, err := coldInit(t, build(t, fn, runtime.GOARCH, dir), env(fn, "DOCMIND_ANSWER_STATE_MACHINE_ARN=arn:aws:states:us-east-1:123456789012:stateMachine:answer"))
			if err != nil {
				t.Errorf("%s did not start: %v\n%s", fn, err, logs)
				continue
			}
			t.Logf("%-16s arm64 %5.1f MB, cold init %6.1f ms", fn, float64(st.Size())/1e6, float64(d.Microseconds())/1000)
		}
	})

	t.Run("Chat", func(t *testing.T) {
		q := startRIE(t, rie, build(t, "QueryFunction", runtime.GOARCH, dir), env("QueryFunction"))
		raw, err := os.ReadFile(filepath.Join("..", "functions", "query", "testdata", "chat.json"))
		if err != nil {
			t.Fatal(err)
		}
		var ev events.LambdaFunctionURLRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		// the template's default AuthType is AWS_IAM: the app's key travels in X-Docmind-Authorization
		delete(ev.Headers, "authorization")
		ev.Headers["x-docmind-authorization"] = "Bearer " + key
		payload, _ := json.Marshal(ev)
		out, err := q.invoke(payload)
		if err != nil {
			t.Fatalf("chat: %v\n%s", err, q.logs)
		}
		// the emulator returns the whole streamed body: the HTTP-integration prelude, 8 NUL bytes, SSE
		prelude, body, ok := bytes.Cut(out, make([]byte, 8))
		if !ok {
			t.Fatalf("no prelude separator in %q", out)
		}
		var pre struct {
			StatusCode int               `json:"statusCode"`
			Headers    map[string]string `json:"headers"`
		}
		if err := json.Unmarshal(prelude, &pre); err != nil || pre.StatusCode != 200 || !strings.HasPrefix(pre.Headers["Content-Type"], "text/event-stream") {
			t.Fatalf("prelude %s (%v)", prelude, err)
		}
		done := lastEvent(t, string(body), "done")
		if !strings.Contains(done.Answer, "30 days") || len(done.Sources) == 0 || !done.Sources[0].Cited || done.Sources[0].FileName != "billing.md" {
			t.Errorf("done %+v, want a cited answer from billing.md\n%s", done, body)
		}
		// without a key the function answers 401 before any model call
		delete(ev.Headers, "x-docmind-authorization")
		payload, _ = json.Marshal(ev)
		out, _ = q.invoke(payload)
		if prelude, _, _ := bytes.Cut(out, make([]byte, 8)); !bytes.Contains(prelude, []byte(`"statusCode":401`)) {
			t.Errorf("no key: %s", prelude)
		}
	})

	t.Run("MCP", func(t *testing.T) {
		// one stateless tools/call of ask at /mcp behind the Function URL: progress, then the cited result
		q := startRIE(t, rie, build(t, "QueryFunction", runtime.GOARCH, dir), env("QueryFunction"))
		raw, err := os.ReadFile(filepath.Join("..", "functions", "query", "testdata", "mcp.json"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := q.invoke(bytes.ReplaceAll(raw, []byte("Bearer KEY"), []byte("Bearer "+key)))
		if err != nil {
			t.Fatalf("mcp: %v\n%s", err, q.logs)
		}
		prelude, body, ok := bytes.Cut(out, make([]byte, 8))
		if !ok || !bytes.Contains(prelude, []byte(`"statusCode":200`)) {
			t.Fatalf("prelude %q", prelude)
		}
		progress := bytes.Index(body, []byte(`"method":"notifications/progress"`))
		result := bytes.Index(body, []byte(`"result":`))
		if progress < 0 || result < progress || !bytes.Contains(body, []byte("30 days")) || !bytes.Contains(body, []byte(`"file_name":"billing.md"`)) {
			t.Errorf("want progress notifications, then a cited result: %s", body)
		}
	})

	t.Run("Ask", func(t *testing.T) {
		// the answer state machine is exercised below; here /api/ask runs in the function
		a := startRIE(t, rie, build(t, "ApiFunction", runtime.GOARCH, dir), env("ApiFunction", "DOCMIND_ANSWER_STATE_MACHINE_ARN="))
		raw, err := os.ReadFile(filepath.Join("..", "functions", "api", "testdata", "ask.json"))
		if err != nil {
			t.Fatal(err)
		}
		raw = bytes.ReplaceAll(raw, []byte("Bearer KEY"), []byte("Bearer "+key))
		out, err := a.invoke(raw)
		if err != nil {
			t.Fatalf("ask: %v\n%s", err, a.logs)
		}
		var res events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &res); err != nil || res.StatusCode != 200 {
			t.Fatalf("ask answered %s (%v)\n%s", out, err, a.logs)
		}
		var done answer.Done
		if err := json.Unmarshal([]byte(res.Body), &done); err != nil || !strings.Contains(done.Answer, "30 days") || len(done.Sources) == 0 {
			t.Errorf("done %s (%v)", res.Body, err)
		}
	})

	rerank := startRIE(t, rie, build(t, "RerankFunction", runtime.GOARCH, dir), env("RerankFunction"))
	grade := startRIE(t, rie, build(t, "GradeFunction", runtime.GOARCH, dir), env("GradeFunction"))
	t.Run("Contracts", func(t *testing.T) {
		raw, _ := os.ReadFile(filepath.Join("..", "functions", "rerank", "testdata", "rerank.json"))
		out, err := rerank.invoke(raw)
		var rr rankfn.RerankOut
		if err != nil || json.Unmarshal(out, &rr) != nil || len(rr.Scores) != 3 || rr.Scores[1] <= rr.Scores[0] {
			t.Errorf("rerank: %s %v (want 3 scores, the refund passage above the renewal one)\n%s", out, err, rerank.logs)
		}
		raw, _ = os.ReadFile(filepath.Join("..", "functions", "grade", "testdata", "grade.json"))
		out, err = grade.invoke(raw)
		var g rankfn.GradeOut
		if err != nil || json.Unmarshal(out, &g) != nil || g.Grade.Tier != "HIGH" {
			t.Errorf("grade: %s %v\n%s", out, err, grade.logs)
		}
		if _, err := grade.invoke([]byte(`{"query":""}`)); err == nil || err.(*aslrun.Error).Name != "Invalid" {
			t.Errorf("grade of an empty query: %v, want errorType Invalid", err)
		}
	})

	t.Run("AnswerStateMachine", func(t *testing.T) {
		step := startRIE(t, rie, build(t, "AskStepFunction", runtime.GOARCH, dir), env("AskStepFunction"))
		def, err := os.ReadFile(filepath.Join("statemachines", "answer.asl.json"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := aslrun.Parse(def)
		if err != nil {
			t.Fatal(err)
		}
		fns := map[string]*emulator{"${AskStepFunctionArn}": step, "${RerankFunctionArn}": rerank, "${GradeFunctionArn}": grade}
		runner := &aslrun.Runner{Machine: m, Sleep: func(context.Context, time.Duration) error { return nil },
			Invoke: func(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
				return fns[resource].invoke(input)
			}}
		in, _ := json.Marshal(answer.Request{Tenant: "default", Question: "How long is the refund window for annual plans?"})
		out, tr, err := runner.Run(ctx, "ask", in)
		if err != nil {
			t.Fatalf("execution: %v (states %v)\n%s", err, tr.States, step.logs)
		}
		var done answer.Done
		if err := json.Unmarshal(out, &done); err != nil || !strings.Contains(done.Answer, "30 days") || len(done.Sources) == 0 || done.Answerer != "llm" {
			t.Errorf("done %s (%v)", out, err)
		}
		t.Logf("answer workflow: states %v, max state %d bytes", tr.States, tr.MaxStateBytes)
	})
}

// seedQueryData applies the migrations, ingests one document into MySQL and Milvus the way the stage
// functions do, and returns an API key of an admin of tenant "default".
func seedQueryData(t *testing.T, f *fixture) string {
	t.Helper()
	ctx := context.Background()
	db, err := mysqlstore.Open(ctx, f.dsn, mysqlstore.Options{MaxOpenConns: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	vec, err := milvus.Open(ctx, milvus.Options{Addr: f.milvus.Addr(), Token: "root:Milvus", Collection: "docmind_chunks", Dim: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vec.Close() })
	// the memory index too: a cold start on an account measures opening collections, not creating them
	mem, err := milvus.Open(ctx, milvus.Options{Addr: f.milvus.Addr(), Token: "root:Milvus", Collection: "docmind_chunks_memories", Dim: 64})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	st := &ingest.Stages{Records: db, Vectors: vec, Blobs: memblob.New(), Staging: memblob.New(), Embedder: embed.NewOffline(64),
		Limits: extract.Limits{MaxFileBytes: 1 << 20}, Chunking: chunk.Options{ChildChars: 400, Overlap: 50, ParentChars: 1600}}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}}
	rep, err := svc.Ingest(ctx, "default", ingest.Source{KBName: "handbook", URI: "inbox/handbook/billing.md", Name: "billing.md", Data: []byte(queryHandbook)})
	if err != nil || rep.Status != rag.StatusReady {
		t.Fatalf("ingest: %+v %v", rep, err)
	}
	u := rag.User{Tenant: "default", Email: "ops@example.com", Role: rag.RoleAdmin}
	if err := db.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	plain, prefix, hash, err := auth.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateAPIKey(ctx, &rag.APIKey{Tenant: "default", UserID: u.ID, Hash: hash, Prefix: prefix, Name: "rie"}); err != nil {
		t.Fatal(err)
	}
	return plain
}

// lastEvent decodes the last SSE event of body, which must be named want.
func lastEvent(t *testing.T, body, want string) answer.Done {
	t.Helper()
	frames := strings.Split(strings.TrimSpace(body), "\n\n")
	last := frames[len(frames)-1]
	name, data, _ := strings.Cut(last, "\n")
	if name != "event: "+want {
		t.Fatalf("last event %q, want %s\n%s", name, want, body)
	}
	var d answer.Done
	if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &d); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	return d
}
