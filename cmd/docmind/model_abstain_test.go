package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/llm/llmtest"
)

// A model's "the documents do not say" is an abstention as the offline one is (issue #20): on the demo
// with a fake model, /api/chat's done, /api/ask's body and /v1's docmind extension carry
// abstained true, the answer cites nothing and no source is marked cited, and the band is LOW, in
// English and Chinese, whatever passage the model named; a model answer that cites nothing over
// passages that do not answer is one too; a partial answer that cites what the documents say, and an
// uncited answer over passages that answer, are not (the latter is never HIGH).
func TestModelAbstains(t *testing.T) {
	replies := map[string]string{
		"Who is the CEO of Example Corp?": "The provided documents do not mention who the CEO of Example Corp is [1].",
		"公司的CEO是谁？":                       "文档中没有提到公司的CEO。[2]",
		"Who is the CFO of Example Corp?": "The CFO of Example Corp is Jane Doe.", // cites nothing, no passage names a CFO
		"How many days of annual leave do full-time employees get?": "Full-time employees get 20 days of paid annual leave per year [1]. " +
			"The documents do not say whether part-time staff get the same.",
		"How many sick leave days per year?": "Ten days of sick leave per year.", // an answer citing nothing
	}
	fake := llmtest.New(t, func(c llmtest.Call) llmtest.Reply {
		if strings.Contains(c.System(), "You analyse one question") {
			return llmtest.Reply{Content: `{"scope":"KB_QUERY","rewrite":"","intent":"policy","complexity":"simple","specificity":"precise",` +
				`"decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":[]}`}
		}
		for q, r := range replies {
			if strings.Contains(c.Last(), q) {
				return llmtest.Reply{Content: r}
			}
		}
		return llmtest.Reply{Content: "I cannot tell."}
	})
	_, base := startServer(t, func(m *Main) {
		c := &m.Config.Chat
		c.Provider, c.BaseURL, c.APIKey, c.MainModel, c.SmallModel = "openai", fake.URL, "sk-test", "main", "small"
		c.CacheEnabled = false
	})
	waitDemo(t, base)

	abstains := []string{"Who is the CEO of Example Corp?", "公司的CEO是谁？", "Who is the CFO of Example Corp?"}
	for _, q := range abstains {
		done, _ := chat(t, base, q, "demo")
		checkModelAbstained(t, "/api/chat", q, done)
		checkModelAbstained(t, "/api/ask", q, askAPI(t, base, q))
		ext := v1Ext(t, base, q)
		if ext.Abstained != true || ext.Band != answer.BandLow {
			t.Errorf("/v1 %s: docmind extension %+v; want abstained, LOW", q, ext)
		}
	}
	// the model answers, and says what the documents leave open: an answer, cited
	q := "How many days of annual leave do full-time employees get?"
	done, _ := chat(t, base, q, "demo")
	if done.Abstained || !strings.Contains(done.Answer, "[1]") || !done.Sources[0].Cited {
		t.Errorf("%s: a partial answer taken for an abstention: %+v", q, done)
	}
	if ext := v1Ext(t, base, q); ext.Abstained {
		t.Errorf("/v1 %s: abstained", q)
	}
	// an answer citing nothing over passages that hold the answer: not an abstention, never HIGH
	q = "How many sick leave days per year?"
	done, _ = chat(t, base, q, "demo")
	if done.Abstained || done.Confidence.Band == answer.BandHigh || done.Answerer != "llm" {
		t.Errorf("%s: an uncited model answer: abstained %v, band %s, answerer %s", q, done.Abstained, done.Confidence.Band, done.Answerer)
	}
}

// checkModelAbstained: the model's abstention carries abstained, cites nothing, marks no source cited
// and is LOW with its reason, as an offline abstention is.
func checkModelAbstained(t *testing.T, route, q string, done answer.Done) {
	t.Helper()
	if done.Answerer != "llm" {
		t.Fatalf("%s %s: answerer %q; the fake model did not answer", route, q, done.Answerer)
	}
	if !done.Abstained || done.Confidence.Band != answer.BandLow || done.Confidence.Score != 0 {
		t.Errorf("%s %s: abstained %v, confidence %+v; want abstained, LOW 0", route, q, done.Abstained, done.Confidence)
	}
	if citeCount(done.Answer) != 0 {
		t.Errorf("%s %s: an abstention cites: %q", route, q, done.Answer)
	}
	for _, s := range done.Sources {
		if s.Cited {
			t.Errorf("%s %s: source [%d] marked cited", route, q, s.N)
		}
	}
	if len(done.Sources) == 0 {
		t.Errorf("%s %s: the passages searched are not listed", route, q)
	}
}

func askAPI(t *testing.T, base, q string) answer.Done {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"question": q, "kbs": []string{"demo"}})
	resp, err := http.Post(base+"/api/ask", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d answer.Done
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/api/ask %s: %d %v", q, resp.StatusCode, err)
	}
	return d
}

type v1Docmind struct {
	Band      string `json:"band"`
	Abstained bool   `json:"abstained"`
}

// v1Ext asks /v1/chat/completions (not streamed) and returns its docmind extension.
func v1Ext(t *testing.T, base, q string) v1Docmind {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "docmind", "messages": []map[string]string{{"role": "user", "content": q}}, "kbs": []string{"demo"}})
	resp, err := http.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Docmind v1Docmind `json:"docmind"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 || len(v.Choices) != 1 {
		t.Fatalf("/v1 %s: %d %v", q, resp.StatusCode, err)
	}
	if citeCount(v.Choices[0].Message.Content) != 0 && v.Docmind.Abstained {
		t.Errorf("/v1 %s: an abstention's content cites: %q", q, v.Choices[0].Message.Content)
	}
	return v.Docmind
}

// citeCount counts the citation markers of s, valid or not.
func citeCount(s string) int { return len(lang.CiteRe.FindAllString(s, -1)) }
