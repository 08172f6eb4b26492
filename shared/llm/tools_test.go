package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

func TestCallTools(t *testing.T) {
	var calls atomic.Int32
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
			return
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Error(err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"",
			"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search_docs","arguments":"{\"query\":\"leave\"}"}}]}}],
			"usage":{"prompt_tokens":30,"completion_tokens":7,"total_tokens":37}}`)
	}))
	defer srv.Close()
	o := NewOpenAI(srv.URL, "sk-test", srv.Client())
	o.RetryDelay = time.Millisecond
	msgs := []Message{{Role: "user", Content: "q"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_0", Name: "keyword_search", Arguments: `{"query":"a"}`}}},
		{Role: "tool", ToolCallID: "call_0", Content: "result"}}
	r, err := o.CallTools(context.Background(), Request{Model: "m", Messages: msgs},
		[]Tool{{Name: "search_docs", Description: "d", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 || len(r.ToolCalls) != 1 || r.ToolCalls[0] != (ToolCall{ID: "call_1", Name: "search_docs", Arguments: `{"query":"leave"}`}) || r.Usage.PromptTokens != 30 {
		t.Fatalf("calls %d reply %+v", calls.Load(), r)
	}
	// The request carries the tool schema and the earlier call and its result.
	tools, _ := got["tools"].([]any)
	sent, _ := got["messages"].([]any)
	if len(tools) != 1 || len(sent) != 3 || sent[2].(map[string]any)["tool_call_id"] != "call_0" || sent[1].(map[string]any)["tool_calls"] == nil {
		t.Fatalf("request %v", got)
	}
	// A 400 is not retried and is Invalid.
	calls.Store(10)
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, `{"error":{"message":"no"}}`, http.StatusBadRequest)
	}))
	defer bad.Close()
	if _, err := NewOpenAI(bad.URL, "k", bad.Client()).CallTools(context.Background(), Request{Model: "m"}, nil); !rag.Is(err, rag.KindInvalid) || calls.Load() != 11 {
		t.Fatalf("400: %v after %d calls", err, calls.Load()-10)
	}
}
