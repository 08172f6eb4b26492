package llmrank

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/docmind/docmind/shared/rank"
)

func chatServer(t *testing.T, reply string) *openai.Client {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req openai.ChatCompletionRequest
		json.NewDecoder(r.Body).Decode(&req)
		if !strings.Contains(req.Messages[1].Content, "<passages>") || req.Temperature <= 0 || req.Temperature > 1e-30 { // greedy, and sent (a zero would be omitted)
			t.Errorf("prompt: %+v", req)
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []map[string]any{{"message": map[string]string{"role": "assistant", "content": reply}}}})
	}))
	t.Cleanup(srv.Close)
	cfg := openai.DefaultConfig("k")
	cfg.BaseURL = srv.URL
	return openai.NewClientWithConfig(cfg)
}

func TestReranker(t *testing.T) {
	r := &Reranker{Client: chatServer(t, "Grades: [9, 2.5, 12]"), Model: "m"}
	s, err := r.Rerank(context.Background(), "q", []string{"a", "b", "c"})
	if err != nil || s[0] != 0.9 || s[1] != 0.25 || s[2] != 1 {
		t.Fatalf("scores %v %v", s, err)
	}
	bad := &Reranker{Client: chatServer(t, "I think the first one"), Model: "m"}
	out, degraded, err := rank.RerankEvidence(context.Background(), bad, "aspirin", []rank.Evidence{{ChunkID: "a", ChildText: "aspirin"}, {ChunkID: "b", ChildText: "x"}})
	if err == nil || !degraded || out[0].ChunkID != "a" {
		t.Fatalf("garbage reply must fall back to lexical: %v %v", err, degraded)
	}
}
