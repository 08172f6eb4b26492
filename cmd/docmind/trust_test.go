package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
)

// Issue #13 on the demo knowledge base: the offline reader answers the question from the right
// document (a table cell, a handbook sentence), cites only it, and every cited sentence is supported.
func TestTrustOfflineDemoAnswers(t *testing.T) {
	_, base := startServer(t, nil)
	waitDemo(t, base)
	for _, c := range []struct {
		q, file, want string
	}{
		{"What was the North region revenue in 2026-Q2?", "sales-figures.xlsx", "515"},
		{"How many sick leave days per year?", "employee-handbook.docx", "Sick leave: 10"},
		{"What is the monthly price of the Team plan?", "price-list.csv", "Team: 49"},
		// the README's examples
		{"How many days of paid annual leave do full-time employees get?", "employee-handbook.docx", "20 days of paid annual leave"},
		{"年假每年多少天？", "employee-handbook.docx", "20"},
	} {
		done, _ := chat(t, base, c.q, "demo")
		used, invalid := answer.Citations(done.Answer, len(done.Sources))
		if len(used) == 0 || invalid != 0 || !strings.Contains(done.Answer, c.want) {
			t.Errorf("%s: answer %q, want it to hold %q", c.q, done.Answer, c.want)
			continue
		}
		for _, n := range used {
			if f := done.Sources[n-1].FileName; f != c.file {
				t.Errorf("%s: cites [%d] %s, want only %s:\n%s", c.q, n, f, c.file, done.Answer)
			}
		}
		if len(done.Claims) == 0 {
			t.Errorf("%s: no claims in done", c.q)
		}
		for _, cl := range done.Claims {
			if !cl.Supported {
				t.Errorf("%s: a quoted sentence is unsupported: %+v", c.q, cl)
			}
		}
		if done.Confidence.Reason == "" || strings.Contains(done.Confidence.Reason, "middling") {
			t.Errorf("%s: confidence reason %q", c.q, done.Confidence.Reason)
		}
	}
}

// A model answer that changes the number its citation holds is flagged claim by claim and is never
// HIGH; the right one is supported.
func TestTrustModelClaims(t *testing.T) {
	reply := make(chan string, 4)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		d := <-reply
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", d)
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer fake.Close()
	_, base := startServer(t, func(m *Main) {
		c := &m.Config.Chat
		// no small model call: the understanding falls back to rules only when the call fails, so
		// every call (understanding first) reads the next reply
		c.Provider, c.BaseURL, c.APIKey, c.MainModel, c.SmallModel = "openai", fake.URL, "sk-test", "main-model", "small-model"
		c.CacheEnabled = false
	})
	waitDemo(t, base)
	const understanding = `{"scope":"KB_QUERY","rewrite":"paid annual leave days full-time employees","intent":"policy","complexity":"simple","specificity":"precise","decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":[]}`
	for _, c := range []struct {
		name, reply string
		supported   bool
	}{
		{"right", "Full-time employees get 20 days of paid annual leave per year [1].", true},
		{"changed number", "Full-time employees get 30 days of paid annual leave per year [1].", false},
	} {
		reply <- understanding
		reply <- c.reply
		done, _ := chat(t, base, "How many days of paid annual leave do full-time employees get?", "demo")
		if done.Answerer != "llm" || len(done.Claims) != 1 {
			t.Fatalf("%s: answerer %s, claims %+v", c.name, done.Answerer, done.Claims)
		}
		if cl := done.Claims[0]; cl.Supported != c.supported || len(cl.Citations) != 1 || cl.Citations[0] != 1 {
			t.Fatalf("%s: claim %+v, want supported %v", c.name, cl, c.supported)
		}
		if !c.supported && done.Confidence.Band == answer.BandHigh {
			t.Fatalf("%s: HIGH with an unsupported number: %+v", c.name, done.Confidence)
		}
	}
}
