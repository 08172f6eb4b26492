package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/demo"
	"github.com/docmind/docmind/shared/rag"
)

// startServer runs a Main on a free loopback port until the test ends.
func startServer(t testing.TB, mod func(*Main)) (*Main, string) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Server.Addr = "127.0.0.1:0"
	cfg.Server.MaxBodyBytes = 1 << 20
	m := &Main{Config: cfg, Version: "test"}
	if mod != nil {
		mod(m)
	}
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		m.Close()
	})
	return m, "http://" + m.Addr()
}

func getJSON(t testing.TB, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %s", url, b)
		}
	}
	return resp.StatusCode
}

func poll(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second) // a hang detector: PDFium's WebAssembly start alone takes seconds
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type docList struct {
	Documents []struct {
		ID         string           `json:"id"`
		FileName   string           `json:"file_name"`
		Status     string           `json:"status"`
		Error      string           `json:"error"`
		ChunkCount int              `json:"chunk_count"`
		StageMS    map[string]int64 `json:"stage_ms"`
		SourceURI  string           `json:"source_uri"`
	} `json:"documents"`
}

// First start: the demo corpus lands in the inbox and every file becomes a ready document.
func TestServeIngestsDemoOnFirstStart(t *testing.T) {
	var progress syncBuffer
	_, base := startServer(t, func(m *Main) { m.Progress = &progress })
	list := waitDemo(t, base)
	// make run's first screen: what it is doing, then the demo's ingestion counted up to its end
	n := len(demo.Files())
	last := fmt.Sprintf("docmind: demo: %d of %d documents ingested; ask at %s/\n", n, n, base)
	poll(t, "the demo's last progress line", func() bool { return strings.Contains(progress.String(), last) })
	out := progress.String()
	for _, want := range []string{"docmind: opening the stores under ", "docmind: database ready (", " migrations applied)", fmt.Sprintf("docmind: demo: ingesting, 0 of %d documents done\n", n)} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
	if strings.Index(out, "ingesting, 0 of") > strings.Index(out, last) {
		t.Errorf("progress out of order:\n%s", out)
	}
	for _, d := range list.Documents {
		if d.ChunkCount == 0 || d.StageMS["extract"] < 0 || d.StageMS == nil {
			t.Errorf("document %+v lacks chunks or timings", d)
		}
	}
	var kb struct {
		Documents int `json:"documents"`
		Chunks    int `json:"chunks"`
	}
	getJSON(t, base+"/api/kbs/demo", &kb)
	if kb.Documents != len(demo.Files()) || kb.Chunks < 20 {
		t.Fatalf("kb summary %+v", kb)
	}

	// The offline chat answers from the demo corpus with a citation of the right document.
	for q, want := range map[string]string{
		"How many days of paid annual leave do full-time employees get?": "employee-handbook.docx",
		"年假每年多少天？":                                                       "employee-handbook.docx",
	} {
		done, names := chat(t, base, q, "demo")
		if names[0] != "meta" || names[len(names)-1] != "done" || done.Answerer != "extractive" {
			t.Fatalf("%s: events %v, answerer %q", q, names, done.Answerer)
		}
		used, invalid := answer.Citations(done.Answer, len(done.Sources))
		if len(used) == 0 || invalid != 0 || !strings.Contains(done.Answer, "20") {
			t.Fatalf("%s: answer %q", q, done.Answer)
		}
		if s := done.Sources[used[0]-1]; s.FileName != want || !s.Cited {
			t.Fatalf("%s: first citation %+v, want %s", q, s, want)
		}
		if len(done.Recommendations) == 0 || len(done.Recommendations) > 3 {
			t.Fatalf("%s: recommendations %+v", q, done.Recommendations)
		}
		for _, r := range done.Recommendations {
			if r.FileName == want {
				t.Fatalf("%s: the cited document is recommended: %+v", q, done.Recommendations)
			}
		}
	}

	// Asked a second time the answer is cached; the third time it is replayed.
	const q = "How many days of paid annual leave do full-time employees get?"
	second, _ := chat(t, base, q, "demo")
	third, names := chat(t, base, q, "demo")
	if second.FromCache || !third.FromCache || third.Answer != second.Answer || strings.Contains(strings.Join(names, " "), "retrieval") {
		t.Fatalf("cache: second %v, third %v %v", second.FromCache, third.FromCache, names)
	}
	// Any change to the knowledge base invalidates it.
	if resp, b := upload(t, base+"/api/kbs/demo/documents", "file", "extra.md", []byte("# Extra\n\nParking is free.")); resp.StatusCode != 202 {
		t.Fatalf("upload %d %s", resp.StatusCode, b)
	}
	poll(t, "the new document to be ready", func() bool {
		var list docList
		getJSON(t, base+"/api/kbs/demo/documents?status=ready", &list)
		return len(list.Documents) == len(demo.Files())+1
	})
	if after, _ := chat(t, base, q, "demo"); after.FromCache {
		t.Fatal("a cached answer outlived a change to its knowledge base")
	}
}

// Short circuits answer from rules and the database, without retrieval.
func TestChatShortCircuits(t *testing.T) {
	_, base := startServer(t, func(m *Main) { m.Config.Chat.EmergencyPhrases = "chest pain" })
	waitDemo(t, base)
	for q, want := range map[string]string{
		"Which knowledge bases do you have?": fmt.Sprintf("**demo**: %d document(s)", len(demo.Files())),
		"你好":                                 "你好",
		"I have chest pain":                  "emergency number",
	} {
		done, names := chat(t, base, q)
		if !strings.Contains(done.Answer, want) || done.ShortCircuit == "" || strings.Join(names[:2], " ") != "meta start" {
			t.Errorf("%s: %v %+v", q, names, done)
		}
	}
}

// TestChatWithModel: with an OpenAI-compatible provider configured, the model writes the answer from a
// prompt that carries the retrieved passages in a data block.
func TestChatWithModel(t *testing.T) {
	prompts := make(chan string, 16)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		prompts <- string(b)
		w.Header().Set("Content-Type", "text/event-stream")
		deltas := []string{"Full-time employees get ", "20 days of paid annual leave [1]."}
		if strings.Contains(string(b), "You analyse one question") {
			deltas = []string{`{"scope":"KB_QUERY","rewrite":"paid annual leave days full-time employees","intent":"policy",` +
				`"complexity":"simple","specificity":"precise","decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":["role: claims adjuster"]}`}
		}
		for _, d := range deltas {
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", d)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer fake.Close()
	_, base := startServer(t, func(m *Main) {
		c := &m.Config.Chat
		c.Provider, c.BaseURL, c.APIKey, c.MainModel, c.SmallModel = "openai", fake.URL, "sk-test", "main-model", "small-model"
	})
	waitDemo(t, base)
	done, _ := chat(t, base, "How many days of paid annual leave do full-time employees get?", "demo")
	if done.Answerer != "llm" || done.Answer != "Full-time employees get 20 days of paid annual leave [1]." || !done.Sources[0].Cited {
		t.Fatalf("done %+v", done)
	}
	understanding, answering := <-prompts, <-prompts
	if !strings.Contains(understanding, `"model":"small-model"`) || !strings.Contains(understanding, `"temperature":1e-45`) {
		t.Fatalf("understanding request %s", understanding)
	}
	if !strings.Contains(answering, `"model":"main-model"`) || !strings.Contains(answering, `\u003cdocuments\u003e`) ||
		!strings.Contains(answering, "[1] employee-handbook.docx") || !strings.Contains(answering, `"temperature":0.3`) {
		t.Fatalf("answer request %s", answering)
	}

	// The understanding's memory hint was remembered, and the next question's prompt carries it.
	var mems struct {
		Memories []rag.Memory `json:"memories"`
	}
	if getJSON(t, base+"/api/memories", &mems) != 200 || len(mems.Memories) != 1 || mems.Memories[0].Kind != "role" || mems.Memories[0].Content != "claims adjuster" || done.MemoriesWritten != 1 {
		t.Fatalf("memories %+v (written %d)", mems, done.MemoriesWritten)
	}
	done, _ = chat(t, base, "Do part-time employees get annual leave?", "demo")
	<-prompts
	if answering = <-prompts; !strings.Contains(answering, "role: claims adjuster") || done.MemoriesUsed != 1 || done.MemoriesWritten != 0 {
		t.Fatalf("memory not in the prompt (used %d, written %d): %s", done.MemoriesUsed, done.MemoriesWritten, answering)
	}
	// Forgotten: gone from the list and from the next prompt; forgetting twice is a 404.
	for i, want := range []int{http.StatusNoContent, http.StatusNotFound} {
		req, _ := http.NewRequest(http.MethodDelete, base+"/api/memories/"+mems.Memories[0].ID, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("delete %d: %v %v", i, resp.Status, err)
		}
		resp.Body.Close()
	}
	// (The fake understanding states the role again, so it is learnt anew, after this answer's recall.)
	done, _ = chat(t, base, "Can unused annual leave carry over?", "demo")
	<-prompts
	if answering = <-prompts; strings.Contains(answering, "role: claims adjuster") || done.MemoriesUsed != 0 || done.MemoriesWritten != 1 {
		t.Fatalf("a forgotten memory reached the prompt (used %d, written %d): %s", done.MemoriesUsed, done.MemoriesWritten, answering)
	}
}

// waitDemo waits until every demo document is ready and returns them.
func waitDemo(t testing.TB, base string) docList {
	t.Helper()
	var list docList
	poll(t, "every demo document to be ready", func() bool {
		if getJSON(t, base+"/api/kbs/demo/documents", &list) != 200 {
			return false
		}
		ready := 0
		for _, d := range list.Documents {
			if d.Status == "failed" {
				t.Fatalf("demo document %s failed: %s", d.FileName, d.Error)
			}
			if d.Status == "ready" && len(d.StageMS) > 0 { // the timings are recorded just after ready
				ready++
			}
		}
		return ready == len(demo.Files())
	})
	return list
}

// chat posts a question and returns the done event and the event names.
func chat(t *testing.T, base, question string, kbs ...string) (answer.Done, []string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"question": question, "kbs": kbs})
	resp, err := http.Post(base+"/api/chat", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("chat status %d", resp.StatusCode)
	}
	var names []string
	var done answer.Done
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, n)
		} else if d, ok := strings.CutPrefix(line, "data: "); ok && names[len(names)-1] == "done" {
			if err := json.Unmarshal([]byte(d), &done); err != nil {
				t.Fatal(err)
			}
		}
	}
	return done, names
}

func upload(t *testing.T, url, field, name string, body []byte) (*http.Response, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile(field, name)
	fw.Write(body)
	mw.Close()
	resp, err := http.Post(url, mw.FormDataContentType(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestUploadListChunksDelete(t *testing.T) {
	_, base := startServer(t, func(m *Main) { m.NoDemo = true })
	if resp, b := upload(t, base+"/api/kbs/nokb/documents", "file", "a.md", []byte("# a")); resp.StatusCode != 404 || strings.Contains(string(b), "sql") {
		t.Fatalf("upload to a missing kb: %d %s", resp.StatusCode, b)
	}
	if r, err := http.Post(base+"/api/kbs", "application/json", strings.NewReader(`{"name":"policies","description":"refunds"}`)); err != nil || r.StatusCode != 201 {
		t.Fatalf("create kb: %v %v", err, r.Status)
	}
	resp, body := upload(t, base+"/api/kbs/policies/documents", "file", "../../etc/退款 政策.md", []byte("# 退款政策\n\n七天内可无理由退款。\n\n## 例外\n\n定制商品不支持退款。"))
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %d %s", resp.StatusCode, body)
	}
	var doc struct {
		ID        string `json:"id"`
		FileName  string `json:"file_name"`
		SourceURI string `json:"source_uri"`
	}
	json.Unmarshal(body, &doc)
	if doc.FileName != "退款 政策.md" || !strings.HasPrefix(doc.SourceURI, "upload/up_") {
		t.Fatalf("the user's path leaked into storage or metadata: %+v", doc)
	}
	var list docList
	poll(t, "the upload to be ready", func() bool {
		getJSON(t, base+"/api/kbs/policies/documents", &list)
		return len(list.Documents) == 1 && list.Documents[0].Status == "ready"
	})
	var chunks struct {
		Chunks []struct {
			Level   string `json:"level"`
			Content string `json:"content"`
		} `json:"chunks"`
	}
	if getJSON(t, base+"/api/documents/"+doc.ID+"/chunks", &chunks) != 200 || len(chunks.Chunks) != 3 || !strings.HasPrefix(chunks.Chunks[0].Content, "# 退款政策") {
		t.Fatalf("chunks: %+v", chunks)
	}

	// bad uploads: too large (413), wrong field (400), unsupported type (400), unknown kb id (404)
	if resp, b := upload(t, base+"/api/kbs/policies/documents", "file", "big.md", bytes.Repeat([]byte("a"), 2<<20)); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB upload with a 1 MiB limit: %d %s", resp.StatusCode, b)
	}
	if resp, b := upload(t, base+"/api/kbs/policies/documents", "other", "a.md", []byte("x")); resp.StatusCode != 400 {
		t.Errorf("wrong field: %d %s", resp.StatusCode, b)
	}
	if resp, b := upload(t, base+"/api/kbs/policies/documents", "file", "a.exe", []byte("MZ")); resp.StatusCode != 400 {
		t.Errorf("exe: %d %s", resp.StatusCode, b)
	}
	if code := getJSON(t, base+"/api/kbs/kb_000000000000000000000000/documents", nil); code != 404 {
		t.Errorf("unknown kb: %d", code)
	}
	if code := getJSON(t, base+"/api/documents/doc_'%20or%201=1/chunks", nil); code != 404 {
		t.Errorf("hostile document id: %d", code)
	}

	// re-process: 202, the document stays ready (and served) and is ready again afterwards; a hostile or
	// unknown id is a 404
	var before, after struct {
		Status    string `json:"status"`
		UpdatedAt string `json:"updated_at"`
	}
	getJSON(t, base+"/api/documents/"+doc.ID, &before)
	time.Sleep(5 * time.Millisecond) // updated_at has millisecond resolution
	rresp, err := http.Post(base+"/api/documents/"+doc.ID+"/reprocess", "application/json", nil)
	if err != nil || rresp.StatusCode != http.StatusAccepted {
		t.Fatalf("reprocess: %v %v", err, rresp.Status)
	}
	rresp.Body.Close()
	poll(t, "the re-processed upload to be ready again", func() bool {
		getJSON(t, base+"/api/documents/"+doc.ID, &after)
		return after.Status == "ready" && after.UpdatedAt != before.UpdatedAt
	})
	for _, id := range []string{"doc_000000000000000000000000", "doc_'%20or%201=1"} {
		if r, err := http.Post(base+"/api/documents/"+id+"/reprocess", "application/json", nil); err != nil || r.StatusCode != 404 {
			t.Fatalf("reprocess %s: %v %v", id, err, r.Status)
		}
	}

	req, _ := http.NewRequest(http.MethodDelete, base+"/api/documents/"+doc.ID, nil)
	dresp, err := http.DefaultClient.Do(req)
	if err != nil || dresp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %v %v", err, dresp.Status)
	}
	if code := getJSON(t, base+"/api/documents/"+doc.ID, nil); code != 404 {
		t.Fatalf("deleted document still answers %d", code)
	}
	var kbs struct {
		KnowledgeBases []struct{ Name string } `json:"knowledge_bases"`
	}
	getJSON(t, base+"/api/kbs", &kbs)
	if len(kbs.KnowledgeBases) != 1 || kbs.KnowledgeBases[0].Name != "policies" {
		t.Fatalf("kbs %+v", kbs)
	}
	resp2, err := http.Post(base+"/api/kbs", "application/json", strings.NewReader(`{"name":"policies"}`))
	if err != nil || resp2.StatusCode != http.StatusConflict {
		t.Fatalf("duplicate kb: %v %v", err, resp2.Status)
	}
	resp3, _ := http.Post(base+"/api/kbs", "application/json", strings.NewReader(`{"nam":"x"}`))
	if resp3.StatusCode != 400 {
		t.Fatalf("bad kb body: %s", resp3.Status)
	}
	_ = fmt.Sprint
}
