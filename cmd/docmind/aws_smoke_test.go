package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
	"github.com/docmind/docmind/shared/awssmoke"
	"github.com/docmind/docmind/shared/llm/llmtest"
)

// TestSmokeStreamMeasure holds the smoke's one-at-a-time check against the real chat handler (docmind
// serve, the handler the chat function wraps) with a model streaming tokens 50 ms apart: the frames
// arrive in as many arrivals as there are tokens. Through a proxy that buffers the whole response (what
// a Function URL in BUFFERED mode, an API Gateway or aws-lambda-rie delivers) they arrive at once, and
// the check says so.
func TestSmokeStreamMeasure(t *testing.T) {
	const tokens = 6
	fake := llmtest.New(t, func(c llmtest.Call) llmtest.Reply {
		if strings.Contains(c.System(), "You analyse one question") {
			return llmtest.Reply{Content: `{"scope":"KB_QUERY","rewrite":"","intent":"policy","complexity":"simple","specificity":"precise",` +
				`"decompose":false,"sub_queries":[],"time_aware":false,"memory_hints":[]}`}
		}
		return llmtest.Reply{Content: "Paid annual leave is twenty days a year [1].", Gap: 50 * time.Millisecond}
	})
	_, base := startServer(t, func(m *Main) {
		c := &m.Config.Chat
		c.Provider, c.BaseURL, c.APIKey, c.MainModel, c.SmallModel = "openai", fake.URL, "sk-test", "main", "small"
		c.CacheEnabled = false
	})
	waitDemo(t, base)
	buffered := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body) // the whole answer, then one write
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = w.Write(b)
	}))
	defer buffered.Close()

	for _, tc := range []struct {
		name     string
		url      string
		streamed bool
	}{{"served", base, true}, {"buffered", buffered.URL, false}} {
		t.Run(tc.name, func(t *testing.T) {
			s := &awssmoke.Smoke{Out: awssmoke.Outputs{ChatURL: tc.url}, Key: "unused-with-auth-none"}
			st, err := s.Measure(context.Background(), "How many days of paid annual leave?", []string{"demo"})
			if err != nil {
				t.Fatalf("measure: %v (%+v)", err, st)
			}
			if st.First != "meta" || st.Last != "done" || st.Tokens < tokens {
				t.Fatalf("stream %+v, want meta, at least %d tokens, done", st, tokens)
			}
			t.Logf("%s: %d frames, %d tokens, %d arrivals, spread %s, longest gap %s", tc.name, st.Frames, st.Tokens, st.Groups, st.Spread, st.MaxGap)
			// 50 ms between tokens is five times the 10 ms that separates two arrivals; a loaded machine may
			// still merge a few, so half the tokens' arrivals is the bar (and the check's own 3)
			if tc.streamed && (st.Groups < 3 || 2*st.Groups < st.Tokens) {
				t.Errorf("served: %d tokens in %d arrivals, want about one arrival per token", st.Tokens, st.Groups)
			}
			if !tc.streamed && st.Groups >= 3 {
				t.Errorf("buffered: %d arrivals, want the answer at once (fewer than 3)", st.Groups)
			}
		})
	}
}

// TestAWSSmokeCommand drives `docmind aws smoke` through the SDK's default configuration (moto_server for
// CloudFormation): --stack and the key (from the environment) are required, and a stack that does not
// exist fails with its name (ReadOutputs' own test covers a stack without the outputs).
func TestAWSSmokeCommand(t *testing.T) {
	run1 := func(getenv func(string) string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), append([]string{"aws", "smoke"}, args...), &out, &errb, getenv)
		return code, out.String() + errb.String()
	}
	if code, out := run1(os.Getenv); code != exitConfig || !strings.Contains(out, "--stack is required") {
		t.Errorf("no --stack: exit %d %s", code, out)
	}
	noKey := func(k string) string { return map[string]string{}[k] }
	if code, out := run1(noKey, "--stack", "s"); code != exitConfig || !strings.Contains(out, "DOCMIND_SMOKE_KEY") {
		t.Errorf("no key: exit %d %s", code, out)
	}
	moto := mototest.Start(t)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": moto, "AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "secret", "DOCMIND_SMOKE_KEY": "dm_x",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"), "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	code, out := run1(os.Getenv, "--stack", "never-deployed", "--region", "us-east-1")
	if code != exitFail || !strings.Contains(out, "never-deployed") {
		t.Errorf("a stack that does not exist: exit %d %s", code, out)
	}
}
