// Command fakellm is an OpenAI-compatible chat model for the browser tests (make test-browser): it listens
// on 127.0.0.1 (port 0 unless -addr says otherwise), prints "listening on http://HOST:PORT" once ready,
// and answers POST /v1/chat/completions from a fixed script chosen by words in the request:
//
//   - "zzslow": a long answer, one word every 150 ms (the page's stop button aborts it);
//   - "zzxss": an answer made of the XSS payloads in the file named by -xss (one per line), each cited;
//   - "zzdegraded": every call fails with 503 (docmind answers extractively, marked degraded: llm);
//   - "zzclaim": the short answer's first sentence, then a cited sentence no passage supports (docmind's
//     claim check marks it);
//   - a question (after the last "Question: ") in Chinese, when the system message says "Answer in the
//     language of the question": the short answer in Chinese, as a model following that rule would;
//   - anything else: a short markdown answer citing [1] (bold, a list and a table).
//
// Calls that are not streamed (understanding, summaries, agent rounds) get "{}", which the pipeline
// treats as an unusable reply and falls back to its rules for.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	xssFile := flag.String("xss", "", "file of XSS payloads, one per line, answered to a question containing \"zzxss\"")
	flag.Parse()
	var payloads []string
	if *xssFile != "" {
		b, err := os.ReadFile(*xssFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fakellm:", err)
			os.Exit(2)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				payloads = append(payloads, l)
			}
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(2)
	}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: model{payloads: payloads}, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, "fakellm:", err)
		os.Exit(1)
	}
}

type model struct{ payloads []string }

// request is the part of a chat completion request the script reads.
type request struct {
	Stream   bool `json:"stream"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

const chineseAnswer = "全职员工每年有 **20 天**带薪年假 [1]。\n\n- 在 HR 门户申请\n- 未休年假可顺延一年\n"

// languageRule is the system prompt's sentence the Chinese answer depends on (shared/answer/prompts/system.tmpl).
const languageRule = "Answer in the language of the question"

// askedInChinese reports whether the question the user message ends with is written in Chinese and the
// system message tells the model to answer in the question's language.
func askedInChinese(req request) bool {
	rule, question := false, ""
	for _, m := range req.Messages {
		switch m.Role {
		case "system":
			rule = rule || strings.Contains(m.Content, languageRule)
		case "user":
			if i := strings.LastIndex(m.Content, "Question: "); i >= 0 {
				question = m.Content[i:]
			}
		}
	}
	return rule && strings.ContainsFunc(question, func(r rune) bool { return unicode.Is(unicode.Han, r) })
}

// claimAnswer cites [1] for a number the leave policy does not state.
const claimAnswer = "Full-time employees get **20 days** of paid annual leave per year [1]. " +
	"Managers get 45 days of paid annual leave per year [1].\n"

const plainAnswer = "Full-time employees get **20 days** of paid annual leave per year [1].\n\n" +
	"- Leave is requested in the HR portal\n- Unused days carry over until March\n\n" +
	"| Type | Days |\n| --- | --- |\n| Annual | 20 |\n"

func (m model) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
		return
	}
	var req request
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	last := ""
	if n := len(req.Messages); n > 0 {
		last = strings.ToLower(req.Messages[n-1].Content)
	}
	if strings.Contains(last, "zzdegraded") {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		return
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "fake", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "message": map[string]string{"role": "assistant", "content": "{}"}, "finish_reason": "stop"}},
			"usage":   map[string]int{"prompt_tokens": 50, "completion_tokens": 2, "total_tokens": 52}})
		return
	}
	answer, gap := plainAnswer, 20*time.Millisecond
	switch {
	case strings.Contains(last, "zzslow"):
		answer, gap = strings.Repeat("This answer streams slowly so that it can be stopped [1]. ", 60), 150*time.Millisecond
	case strings.Contains(last, "zzclaim"):
		answer = claimAnswer
	case askedInChinese(req):
		answer = chineseAnswer
	case strings.Contains(last, "zzxss"):
		var b strings.Builder
		for _, p := range m.payloads {
			fmt.Fprintf(&b, "%s [1]\n\n", p)
		}
		answer = b.String()
	}
	stream(w, r, answer, gap)
}

// stream sends answer as chat.completion.chunk deltas, one word each, gap apart, then usage and [DONE].
func stream(w http.ResponseWriter, r *http.Request, answer string, gap time.Duration) {
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	words := strings.SplitAfter(answer, " ")
	for i, word := range words {
		if i > 0 {
			select {
			case <-time.After(gap):
			case <-r.Context().Done():
				return
			}
		}
		b, _ := json.Marshal(word)
		fmt.Fprintf(w, "data: {\"id\":\"fake\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%s}}]}\n\n", b)
		_ = rc.Flush()
	}
	fmt.Fprint(w, "data: {\"id\":\"fake\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":100,\"completion_tokens\":10,\"total_tokens\":110}}\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}
