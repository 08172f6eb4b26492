package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/httpapi"
)

func runCLI(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb, func(k string) string { return env[k] })
	return code, out.String(), errb.String()
}

func TestConfigCommand(t *testing.T) {
	code, out, _ := runCLI(t, map[string]string{"DOCMIND_CHAT_API_KEY": "sk-canary-42", "DOCMIND_CHAT_PROVIDER": "openai", "DOCMIND_CHAT_MAIN_MODEL": "m"}, "config", "--json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if strings.Contains(out, "canary") {
		t.Fatal("docmind config printed a secret")
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil || m["chat.api_key"] != "[redacted]" || m["server.addr"] != "127.0.0.1:8080" {
		t.Fatalf("config --json = %v (%v)", m, err)
	}
	// every problem in one message, exit status 2
	code, _, errOut := runCLI(t, map[string]string{"DOCMIND_SQL_DRIVER": "oracle", "DOCMIND_VECTOR_DIM": "x", "DOCMIND_LOG_LEVEL": "loud"}, "config")
	if code != exitConfig {
		t.Fatalf("bad config exit %d, want 2", code)
	}
	for _, want := range []string{"DOCMIND_VECTOR_DIM"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("message lacks %s: %s", want, errOut)
		}
	}
	code, _, errOut = runCLI(t, map[string]string{"DOCMIND_SQL_DRIVER": "oracle", "DOCMIND_LOG_LEVEL": "loud", "DOCMIND_KV_DRIVER": "memcached"}, "config")
	if code != exitConfig || strings.Count(errOut, "\n  - ") != 3 {
		t.Fatalf("want 3 problems in one message, exit 2; got %d:\n%s", code, errOut)
	}
	code, out, _ = runCLI(t, nil, "config", "--vars")
	if code != 0 || !strings.Contains(out, "`DOCMIND_SQL_DSN`") {
		t.Fatalf("config --vars: %d %s", code, out)
	}
}

func TestUnknownCommandAndFlags(t *testing.T) {
	if code, _, _ := runCLI(t, nil, "frobnicate"); code != exitConfig {
		t.Fatalf("unknown command exit %d", code)
	}
	if code, _, _ := runCLI(t, nil, "serve", "--bogus"); code != exitConfig {
		t.Fatalf("unknown flag exit %d", code)
	}
	if code, _, _ := runCLI(t, nil); code != exitConfig {
		t.Fatalf("no command exit %d", code)
	}
	if code, out, _ := runCLI(t, nil, "version", "--json"); code != 0 || !strings.Contains(out, `"version"`) {
		t.Fatalf("version: %d %s", code, out)
	}
}

func TestServeRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "192.168.1.5:80", "[::]:8080", "example.com:80"} {
		code, _, errOut := runCLI(t, nil, "serve", "--data", t.TempDir(), "--addr", addr)
		if code != exitConfig || !strings.Contains(errOut, "authentication") {
			t.Errorf("serve --addr %s: exit %d, %q", addr, code, errOut)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0", "127.0.0.2:0"} {
		if err := checkListenAddr(addr, "none"); err != nil {
			t.Errorf("%s refused: %v", addr, err)
		}
	}
	// a padded "none" is still none (the server parses it so): refused
	for _, mode := range []string{" none", "none ", "", "bogus"} {
		if err := checkListenAddr("0.0.0.0:8080", mode); err == nil {
			t.Errorf("0.0.0.0:8080 with DOCMIND_AUTH=%q accepted", mode)
		}
	}
	// with authentication on, any address may be served
	for _, mode := range []string{"keys", "jwt", "keys,jwt"} {
		if err := checkListenAddr("0.0.0.0:8080", mode); err != nil {
			t.Errorf("0.0.0.0:8080 with DOCMIND_AUTH=%s refused: %v", mode, err)
		}
	}
}

func TestMigrateAndKB(t *testing.T) {
	data := t.TempDir()
	code, out, errOut := runCLI(t, nil, "migrate", "--data", data, "--json")
	if code != 0 || !strings.Contains(out, `"applied": [`) {
		t.Fatalf("migrate: %d %s %s", code, out, errOut)
	}
	code, out, _ = runCLI(t, nil, "migrate", "--data", data)
	if code != 0 || !strings.Contains(out, "schema is current") {
		t.Fatalf("second migrate: %d %s", code, out)
	}
	if code, out, errOut = runCLI(t, nil, "kb", "create", "手册", "--data", data, "--description", "manuals", "--json"); code != 0 || !strings.Contains(out, `"name": "手册"`) {
		t.Fatalf("kb create: %d %s %s", code, out, errOut)
	}
	if code, _, errOut = runCLI(t, nil, "kb", "create", "手册", "--data", data); code != exitConfig || !strings.Contains(errOut, "already exists") {
		t.Fatalf("duplicate kb: %d %s", code, errOut)
	}
	if code, _, errOut = runCLI(t, nil, "kb", "create", "../x", "--data", data); code != exitConfig {
		t.Fatalf("bad kb name: %d %s", code, errOut)
	}
	code, out, _ = runCLI(t, nil, "kb", "list", "--data", data, "--json")
	var kbs []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &kbs) != nil || len(kbs) != 1 || kbs[0]["description"] != "manuals" {
		t.Fatalf("kb list: %d %s", code, out)
	}
	if code, _, _ = runCLI(t, nil, "kb", "delete", "手册", "--data", data); code != 0 {
		t.Fatalf("kb delete exit %d", code)
	}
	if code, _, _ = runCLI(t, nil, "kb", "delete", "手册", "--data", data); code != exitConfig {
		t.Fatalf("kb delete missing exit %d", code)
	}
	if code, out, _ = runCLI(t, nil, "kb", "list", "--data", data); code != 0 || !strings.Contains(out, "no knowledge bases") {
		t.Fatalf("kb list after delete: %s", out)
	}
	if code, _, _ = runCLI(t, nil, "kb", "rename", "a", "--data", data); code != exitConfig {
		t.Fatalf("kb bad subcommand exit %d", code)
	}
}

// End to end: the server opens its stores under the data dir, serves /healthz, and shuts down cleanly
// on cancel, leaving the vector snapshot and database on disk.
func TestServeHealthz(t *testing.T) {
	data := t.TempDir()
	cfg := config.Default()
	cfg.DataDir = data
	cfg.Server.Addr = "127.0.0.1:0"
	m := &Main{Config: cfg, Version: "test", NoDemo: true}
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()

	client := &http.Client{Timeout: 5 * time.Second}
	var resp *http.Response
	var err error
	for range 50 { // Serve starts in a goroutine: give it a moment, without asserting a duration
		if resp, err = client.Get("http://" + m.Addr() + "/healthz"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var h httpapi.Health
	if resp.StatusCode != 200 || json.Unmarshal(body, &h) != nil || h.Status != "ok" || h.Version != "test" {
		t.Fatalf("healthz %d %s", resp.StatusCode, body)
	}
	for _, name := range []string{"sql", "vector", "kv", "blob"} {
		if !h.Stores[name].OK {
			t.Errorf("store %s not ok: %+v", name, h.Stores[name])
		}
	}
	if h.Stores["sql"].Driver != "sqlite" || h.Stores["vector"].Driver != "memvec" {
		t.Errorf("drivers: %+v", h.Stores)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "docmind.db")); err != nil {
		t.Fatalf("database not created under --data: %v", err)
	}
}

func TestIngestCommand(t *testing.T) {
	data := t.TempDir()
	docs := t.TempDir()
	os.WriteFile(filepath.Join(docs, "a.md"), []byte("# Title\n\nFirst paragraph about refunds.\n\n## Second\n\nMore text about returns."), 0o644)
	os.MkdirAll(filepath.Join(docs, ".hidden"), 0o755)
	os.WriteFile(filepath.Join(docs, ".hidden", "x.md"), []byte("# hidden"), 0o644)
	os.WriteFile(filepath.Join(docs, "notes.bin"), []byte{0, 1}, 0o644)
	os.WriteFile(filepath.Join(docs, "broken.docx"), []byte("not a zip"), 0o644)
	code, out, errOut := runCLI(t, nil, "ingest", "--kb", "manuals", "--data", data, "--json", docs)
	var sum ingestSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("ingest --json output %q: %v (%s)", out, err, errOut)
	}
	if code != exitFail || sum.Documents != 1 || sum.Chunks != 2 || sum.Embedded != 2 || len(sum.Failed) != 1 || !strings.Contains(sum.Failed[0].Error, "zip") {
		t.Fatalf("first run: exit %d %+v", code, sum)
	}
	os.Remove(filepath.Join(docs, "broken.docx"))
	code, out, _ = runCLI(t, nil, "ingest", "--kb", "manuals", "--data", data, "--json", docs)
	json.Unmarshal([]byte(out), &sum)
	if code != 0 || sum.Embedded != 0 || sum.Reused != 2 || sum.Parents != 1 || len(sum.Failed) != 0 {
		t.Fatalf("unchanged re-run: exit %d %+v", code, sum)
	}
	if code, _, _ := runCLI(t, nil, "ingest", "--data", data, docs); code != exitConfig {
		t.Fatalf("missing --kb: exit %d", code)
	}
}

func TestEvalCommand(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(`{"_id":"d1","title":"Aspirin","text":"Aspirin prevents heart attacks in adults."}
{"_id":"d2","title":"Statins","text":"Statins lower cholesterol levels."}
{"_id":"d3","title":"保险","text":"投保年龄为18至60周岁。"}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "queries.jsonl"), []byte(`{"_id":"q1","text":"heart attack prevention"}
{"_id":"q2","text":"lowering cholesterol"}
{"_id":"q3","text":"投保年龄"}
`), 0o644)
	os.MkdirAll(filepath.Join(dir, "qrels"), 0o755)
	os.WriteFile(filepath.Join(dir, "qrels", "train.tsv"), []byte("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\nq3\td3\t1\n"), 0o644)
	data := t.TempDir()
	code, out, errOut := runCLI(t, nil, "eval", "--data", data, "--dataset", dir, "--variant", "bm25", "--json")
	var r map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("eval: exit %d %s %s", code, out, errOut)
	}
	if r["ndcg@10"].(float64) != 1 || r["queries"].(float64) != 3 {
		t.Fatalf("eval result %v", r)
	}
	for _, key := range []string{"variant", "recall@10", "recall@100", "mrr@10", "p50_ms", "p95_ms"} {
		if _, ok := r[key]; !ok {
			t.Errorf("result lacks %s", key)
		}
	}
	// no answers.jsonl: the answer variant says what it needs
	if code, _, errOut := runCLI(t, nil, "eval", "--data", data, "--dataset", dir, "--variant", "answer"); code != exitConfig || !strings.Contains(errOut, "answers.jsonl") {
		t.Fatalf("answer variant without answers: %d %s", code, errOut)
	}
	os.WriteFile(filepath.Join(dir, "answers.jsonl"), []byte(`{"_id":"q1","answers":["heart attacks"]}
{"_id":"q3","answers":["18至60周岁"]}
`), 0o644)
	code, out, errOut = runCLI(t, nil, "eval", "--data", data, "--dataset", dir, "--variant", "answer", "--json")
	var a map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &a) != nil {
		t.Fatalf("eval answer: exit %d %s %s", code, out, errOut)
	}
	if a["queries"].(float64) != 2 || a["answer_recall"].(float64) != 1 || a["grounded"].(float64) != 1 || a["cited_relevant"].(float64) != 1 || a["answerer"] != "extractive" {
		t.Fatalf("answer eval %v", a)
	}
	// a second run reuses the ingested corpus; all variants in Markdown
	code, out, _ = runCLI(t, nil, "eval", "--data", data, "--dataset", dir)
	if code != 0 || !strings.Contains(out, "| bm25 |") || !strings.Contains(out, "| hybrid |") {
		t.Fatalf("markdown report: %d %s", code, out)
	}
	if !strings.Contains(out, "| ranked |") || !strings.Contains(out, "| full |") {
		t.Fatalf("all lacks the ranked list before the reader's cut: %s", out)
	}
	// the chain stage by stage, each a result of its own, in the chain's order
	code, out, errOut = runCLI(t, nil, "eval", "--data", data, "--dataset", dir, "--variant", "stages", "--json")
	var stages []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &stages) != nil {
		t.Fatalf("stages: exit %d %s %s", code, out, errOut)
	}
	var names []string
	for _, r := range stages {
		names = append(names, r["variant"].(string))
		if r["ndcg@10"].(float64) != 1 {
			t.Errorf("stage %v: nDCG@10 %v on a corpus each query finds first", r["variant"], r["ndcg@10"])
		}
	}
	if strings.Join(names, " ") != "fused ranked rerank filtered diverse full" {
		t.Fatalf("stages %v", names)
	}
	if code, _, _ := runCLI(t, nil, "eval", "--data", data, "--dataset", dir, "--variant", "magic"); code != exitConfig {
		t.Fatalf("bad variant exit %d", code)
	}
	if code, _, _ := runCLI(t, nil, "eval", "--data", data, "--dataset", filepath.Join(dir, "missing")); code != exitConfig {
		t.Fatalf("missing dataset exit %d", code)
	}
}

var citeMarker = regexp.MustCompile(`\[(\d+)\]`)

// docmind ask, offline, on the demo corpus: an extractive answer whose every [n] is a returned source,
// sources in citation order, and the events as the chat endpoint streams them.
func TestAskCommand(t *testing.T) {
	data := t.TempDir()
	if code, _, errOut := runCLI(t, nil, "ingest", "--kb", "demo", "--data", data, "../../shared/demo/corpus"); code != 0 {
		t.Fatalf("ingest: exit %d %s", code, errOut)
	}
	code, out, errOut := runCLI(t, nil, "ask", "--kb", "demo", "--data", data, "--json", "How many days of paid annual leave do full-time employees get?")
	var res askResult
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("ask: exit %d, %v: %s %s", code, err, out, errOut)
	}
	if res.Path != "STANDARD" || res.Band == "" || len(res.Sources) == 0 || !strings.Contains(res.Answer, "20 days") {
		t.Fatalf("ask --json: %+v", res)
	}
	// the demo's documents instruct nothing: injection_flags is present and empty
	if !strings.Contains(out, `"injection_flags": []`) || res.InjectionFlags == nil || len(res.InjectionFlags) != 0 {
		t.Fatalf("ask --json injection_flags %v in %s", res.InjectionFlags, out)
	}
	refs := citeMarker.FindAllStringSubmatch(res.Answer, -1)
	if len(refs) == 0 {
		t.Fatalf("no citation in %q", res.Answer)
	}
	for _, m := range refs {
		n, _ := strconv.Atoi(m[1])
		if n < 1 || n > len(res.Sources) || res.Sources[n-1].N != n || !res.Sources[n-1].Cited {
			t.Fatalf("[%d] does not map to a returned, cited source: %+v", n, res.Sources)
		}
	}
	var names []string
	for _, ev := range res.Events {
		names = append(names, ev.Name)
		var v map[string]any
		if err := json.Unmarshal(ev.Data, &v); err != nil {
			t.Fatalf("event %s data %s: %v", ev.Name, ev.Data, err)
		}
	}
	if seq := strings.Join(names, " "); !regexp.MustCompile(`^meta understanding routing retrieval grader rerank start (token )+(confidence_warning )?done$`).MatchString(seq) {
		t.Fatalf("events %s", seq)
	}
	// The terminal form: the answer on stdout with the sources, the timeline on stderr.
	code, out, errOut = runCLI(t, nil, "ask", "--data", data, "年假每年多少天？")
	if code != 0 || !strings.Contains(out, "employee-handbook.docx") || !strings.Contains(errOut, "· routing: STANDARD") || !strings.Contains(errOut, "· confidence:") {
		t.Fatalf("ask: exit %d\n%s\n%s", code, out, errOut)
	}
	// Bad input: no question, an unknown knowledge base, an over-long question.
	for _, args := range [][]string{{"ask", "--data", data}, {"ask", "--kb", "nope", "--data", data, "q"}, {"ask", "--data", data, strings.Repeat("x", 2001)}} {
		if code, _, _ := runCLI(t, nil, args...); code != exitConfig {
			t.Errorf("%v: exit %d, want %d", args[:3], code, exitConfig)
		}
	}
}

// With a server running, its data directory is locked: the CLI says so instead of failing obscurely, and
// `ask --server` goes through the server's API with the same output.
func TestAskWhileServing(t *testing.T) {
	m, base := startServer(t, nil)
	waitDemo(t, base)
	code, _, errOut := runCLI(t, nil, "ask", "--data", m.Config.DataDir, "annual leave")
	if code != exitFail || !strings.Contains(errOut, "open in another docmind process") {
		t.Fatalf("ask on a served data directory: exit %d: %s", code, errOut)
	}
	// the next step names the running server by the URL it recorded
	if want := `ask it instead: docmind ask --server ` + base + ` "question"`; !strings.Contains(errOut, want) {
		t.Fatalf("ask on a served data directory does not say %q:\n%s", want, errOut)
	}
	code, out, errOut := runCLI(t, nil, "ask", "--server", base, "--kb", "demo", "--json", "How many days of paid annual leave do full-time employees get?")
	var res askResult
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil {
		t.Fatalf("ask --server: exit %d %v: %s %s", code, err, out, errOut)
	}
	if !strings.Contains(res.Answer, "20 days") || len(res.Sources) == 0 || res.Events[0].Name != "meta" || res.Events[len(res.Events)-1].Name != "done" || res.Band == "" {
		t.Fatalf("ask --server --json: %+v", res)
	}
	code, out, errOut = runCLI(t, nil, "ask", "--server", base, "年假每年多少天？")
	if code != 0 || !strings.Contains(out, "employee-handbook.docx") || !strings.Contains(errOut, "· routing:") {
		t.Fatalf("ask --server: exit %d\n%s\n%s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, nil, "ask", "--server", base, "--kb", "nope", "q"); code != exitConfig || !strings.Contains(errOut, "404") {
		t.Fatalf("unknown kb through the server: exit %d %s", code, errOut)
	}
	// --doc through the server: the ids go as the request's documents, the server reads them in order
	doc := res.Sources[0].DocumentID
	code, out, errOut = runCLI(t, nil, "ask", "--server", base, "--doc", doc, "--json", "summarise this document")
	res = askResult{}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Path != "SELECTED_DOC" || len(res.Sources) == 0 {
		t.Fatalf("ask --server --doc: exit %d %v: %+v %s", code, err, res, errOut)
	}
	for _, s := range res.Sources {
		if s.DocumentID != doc || s.Part == nil {
			t.Fatalf("ask --server --doc %s: source %+v", doc, s)
		}
	}
	if code, _, errOut := runCLI(t, nil, "ask", "--server", base, "--doc", "doc_nosuch", "q"); code != exitConfig || !strings.Contains(errOut, "no document") {
		t.Fatalf("unknown document through the server: exit %d %s", code, errOut)
	}
}
