package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
)

// Issue #20 item 2 on the demo knowledge base: a question about a name no document holds abstains in
// the question's language, through /api/chat and /api/ask, citing nothing; questions the demo answers
// (a table cell, a handbook sentence, Chinese questions the reader covers only in part) do not.
func TestDemoAbstains(t *testing.T) {
	_, base := startServer(t, nil)
	waitDemo(t, base)
	for q, want := range map[string]string{
		"Who is the CEO of Example Corp?": "The documents do not say",
		"公司的CEO是谁？":                       "文档中没有提到CEO",
	} {
		done, _ := chat(t, base, q, "demo")
		checkAbstained(t, "/api/chat", q, want, done)
		body, _ := json.Marshal(map[string]any{"question": q, "kbs": []string{"demo"}})
		resp, err := http.Post(base+"/api/ask", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var asked answer.Done
		err = json.NewDecoder(resp.Body).Decode(&asked)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("/api/ask %s: %d %v", q, resp.StatusCode, err)
		}
		checkAbstained(t, "/api/ask", q, want, asked)
	}
	for _, q := range []string{
		"What is the monthly price of the Team plan?",
		"What was the North region revenue in 2026-Q2?",
		"How many sick leave days per year?",
		"年假每年多少天？",
		"犹豫期是多少天？",
		"服务月可用性是多少？",
	} {
		done, _ := chat(t, base, q, "demo")
		if done.Abstained {
			t.Errorf("%s: abstained on a question the demo answers:\n%s", q, done.Answer)
		}
		if used, _ := answer.Citations(done.Answer, len(done.Sources)); len(used) == 0 {
			t.Errorf("%s: nothing cited:\n%s", q, done.Answer)
		}
	}
}

func checkAbstained(t *testing.T, route, q, want string, done answer.Done) {
	t.Helper()
	if !done.Abstained || !strings.Contains(done.Answer, want) {
		t.Errorf("%s %s: abstained %v, answer %q, want it to hold %q", route, q, done.Abstained, done.Answer, want)
	}
	if used, _ := answer.Citations(done.Answer, len(done.Sources)); len(used) != 0 {
		t.Errorf("%s %s: an abstention cites %v", route, q, used)
	}
	for _, s := range done.Sources {
		if s.Cited {
			t.Errorf("%s %s: source [%d] %s marked cited", route, q, s.N, s.FileName)
		}
	}
}
