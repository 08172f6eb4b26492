package llm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// fakeOpenAI serves /chat/completions as an OpenAI-compatible stream. fail(n) decides the n-th call's
// fate: 0 streams the deltas, an HTTP status fails with it, -1 breaks the stream after one delta.
func fakeOpenAI(t *testing.T, deltas []string, fail func(n int) int) (*httptest.Server, *atomic.Int32, chan string) {
	t.Helper()
	var calls atomic.Int32
	bodies := make(chan string, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int(calls.Add(1))
		b, _ := io.ReadAll(r.Body)
		select {
		case bodies <- string(b):
		default:
		}
		if r.URL.Path != "/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad path or key"}}`, http.StatusNotFound)
			return
		}
		code := fail(n)
		if code > 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"error":{"message":"status %d","type":"x"}}`, code)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i, d := range deltas {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", d)
			w.(http.Flusher).Flush()
			if code < 0 && i == 0 {
				fmt.Fprint(w, "data: {not json\n\n")
				return
			}
		}
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":42,\"completion_tokens\":3,\"total_tokens\":45}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &calls, bodies
}

func collect(t *testing.T, o *OpenAI) (string, Usage, error) {
	t.Helper()
	var b strings.Builder
	u, err := o.Stream(context.Background(), Request{Model: "m", Temperature: 0.3, MaxTokens: 50,
		Messages: []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "q"}}}, func(d string) error {
		b.WriteString(d)
		return nil
	})
	return b.String(), u, err
}

func TestStream(t *testing.T) {
	srv, calls, bodies := fakeOpenAI(t, []string{"Twenty ", "days", " [1]."}, func(int) int { return 0 })
	o := NewOpenAI(srv.URL, "sk-test", srv.Client())
	got, u, err := collect(t, o)
	if err != nil || got != "Twenty days [1]." || u.PromptTokens != 42 || u.CompletionTokens != 3 || calls.Load() != 1 {
		t.Fatalf("got %q usage %+v err %v calls %d", got, u, err, calls.Load())
	}
	body := <-bodies
	for _, want := range []string{`"temperature":0.3`, `"max_tokens":50`, `"stream":true`, `"include_usage":true`, `"model":"m"`} {
		if !strings.Contains(body, want) {
			t.Errorf("request lacks %s: %s", want, body)
		}
	}
}

func TestStreamRetriesOnceBeforeFirstToken(t *testing.T) {
	srv, calls, _ := fakeOpenAI(t, []string{"ok"}, func(n int) int {
		if n == 1 {
			return 503
		}
		return 0
	})
	o := NewOpenAI(srv.URL, "sk-test", srv.Client())
	o.RetryDelay = 0
	if got, _, err := collect(t, o); err != nil || got != "ok" || calls.Load() != 2 {
		t.Fatalf("got %q err %v calls %d", got, err, calls.Load())
	}

	srv, calls, _ = fakeOpenAI(t, nil, func(int) int { return 429 })
	o = NewOpenAI(srv.URL, "sk-test", srv.Client())
	o.RetryDelay = 0
	if _, _, err := collect(t, o); !rag.Is(err, rag.KindUnavailable) || calls.Load() != 2 {
		t.Fatalf("429 twice: err %v calls %d (one retry, no more)", err, calls.Load())
	}
}

func TestStreamDoesNotRetry(t *testing.T) {
	for _, c := range []struct {
		name string
		code int
		kind rag.Kind
	}{{"unauthorised", 401, rag.KindPermission}, {"bad request", 400, rag.KindInvalid}} {
		srv, calls, _ := fakeOpenAI(t, nil, func(int) int { return c.code })
		o := NewOpenAI(srv.URL, "sk-test", srv.Client())
		if _, _, err := collect(t, o); !rag.Is(err, c.kind) || calls.Load() != 1 {
			t.Errorf("%s: err %v (kind %v) calls %d", c.name, err, rag.KindOf(err), calls.Load())
		}
	}
	// Broken after the first token: never replayed (the caller already streamed it).
	srv, calls, _ := fakeOpenAI(t, []string{"half", "rest"}, func(int) int { return -1 })
	o := NewOpenAI(srv.URL, "sk-test", srv.Client())
	if got, _, err := collect(t, o); err == nil || got != "half" || calls.Load() != 1 {
		t.Fatalf("mid-stream failure: got %q err %v calls %d", got, err, calls.Load())
	}
	// The caller stopping the stream returns its own error, unwrapped.
	srv, _, _ = fakeOpenAI(t, []string{"a", "b", "c"}, func(int) int { return 0 })
	stop := errors.New("cap")
	n := 0
	_, err := NewOpenAI(srv.URL, "sk-test", srv.Client()).Stream(context.Background(), Request{Model: "m"}, func(string) error {
		if n++; n == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 2 {
		t.Fatalf("callback error: %v after %d deltas", err, n)
	}
}
