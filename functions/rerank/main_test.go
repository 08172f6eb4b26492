package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/docmind/docmind/functions/internal/lambdatest"
	"github.com/docmind/docmind/functions/internal/linktest"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

// TestDeps: no forbidden package, and neither testing, the Milvus client nor go-openai is among the
// dependencies (go list -deps, as the Lambda build sees them).
func TestDeps(t *testing.T) { linktest.Computing(t, "github.com/docmind/docmind/functions/rerank") }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func event(t *testing.T) rankfn.RerankIn {
	return lambdatest.ReadJSON[rankfn.RerankIn](t, "testdata/rerank.json")
}

// TestContractHTTP: scores come back in input order from a Cohere-format rerank API.
func TestContractHTTP(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Documents []string }
		json.NewDecoder(r.Body).Decode(&body)
		// the API returns best first; the contract is input order
		w.Write([]byte(`{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":0.2},{"index":2,"relevance_score":0.1}]}`))
	}))
	defer api.Close()
	r, err := wire(context.Background(), env(map[string]string{"DOCMIND_RERANK_PROVIDER": "http", "DOCMIND_RERANK_URL": api.URL, "DOCMIND_RERANK_MODEL": "bge-reranker"}))
	if err != nil {
		t.Fatal(err)
	}
	out, err := awsrt.Handler(r.Rerank)(context.Background(), event(t))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{0.2, 0.9, 0.1}
	if len(out.Scores) != 3 || out.Scores[0] != want[0] || out.Scores[1] != want[1] || out.Scores[2] != want[2] || out.Model != "bge-reranker" {
		t.Errorf("got %+v, want scores %v in input order from bge-reranker", out, want)
	}
}

// TestContractFailure: a failing rerank API is a function error with errorType Unavailable (the caller
// degrades to lexical scores), never scores that look real.
func TestContractFailure(t *testing.T) {
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadRequest) }))
	defer api.Close()
	r, err := wire(context.Background(), env(map[string]string{"DOCMIND_RERANK_PROVIDER": "http", "DOCMIND_RERANK_URL": api.URL, "DOCMIND_RERANK_MODEL": "m"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = awsrt.Handler(r.Rerank)(context.Background(), event(t))
	var le messages.InvokeResponse_Error
	if !errors.As(err, &le) || le.Type == "" || le.Type == "Unknown" {
		t.Fatalf("got %#v, want a classified function error", err)
	}
	_, err = awsrt.Handler(r.Rerank)(context.Background(), rankfn.RerankIn{})
	if !errors.As(err, &le) || le.Type != "Invalid" {
		t.Errorf("empty query: %#v, want errorType Invalid", err)
	}
}

// TestLexicalEvidence: without a rerank API the evidence form ranks by lexical overlap, cuts to k and is
// not degraded (no model was asked).
func TestLexicalEvidence(t *testing.T) {
	r, err := wire(context.Background(), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	in := event(t)
	in.Evidence = nil
	for i, d := range in.Documents {
		in.Evidence = append(in.Evidence, evidence(i, d))
	}
	in.Documents, in.K = nil, 2
	out, err := r.Rerank(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Evidence) != 2 || out.Evidence[0].ChunkID != "c1" || out.Degraded || out.Model != "lexical" {
		t.Errorf("got %+v, want 2 items led by c1 (the refund passage), not degraded", out)
	}
	if _, err := wire(context.Background(), env(map[string]string{"DOCMIND_RERANK_PROVIDER": "llm"})); err == nil {
		t.Error("the llm provider was accepted: it would need the chat model's client")
	}
}

func evidence(i int, text string) rank.Evidence {
	return rank.Evidence{ChunkID: "c" + strconv.Itoa(i), DocumentID: "d", KBID: "kb", Text: text, ChildText: text, Score: 0.5}
}

// TestWireWithTemplateGlobals: the template's Globals name the cloud stores for every function; the
// rerank function opens none and must start without their settings.
func TestWireWithTemplateGlobals(t *testing.T) {
	lambdatest.StartsStoreless(t, func(getenv func(string) string) error { _, err := wire(context.Background(), getenv); return err })
}
