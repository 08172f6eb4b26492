package askflow

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// oldRetrieveInput is a Retrieve Task's input as the workflow wrote it before the request carried its
// metadata filter: the documents passing it only.
const oldRetrieveInput = `{"state":{"request":{"tenant":"local","kb_ids":["kb_1"],"restrict":["doc_a","doc_b"],
"filter_keys":["year"],"question":"What is the allowance?"},"question":"What is the allowance?","max_tokens":1024,
"understanding":{},"route":{},"agent_usage":{},"prompt":{},"done":{"path":"STANDARD","stage_ms":{}}},
"ranked":false,"query":"What is the allowance?","documents":[],"rerank_known":false,"reranker":false}`

// TestStateCarriesTheFilter: a state written before the filter was carried reads as it did (the
// documents, no filter); a state with a filter keeps it across JSON, as the same filter; a state with
// a malformed filter is refused Invalid naming it, not searched without it.
func TestStateCarriesTheFilter(t *testing.T) {
	var old Flow
	if err := json.Unmarshal([]byte(oldRetrieveInput), &old); err != nil {
		t.Fatal(err)
	}
	req := old.State.Request
	if req.Filter != nil || !slices.Equal(req.Restrict, []string{"doc_a", "doc_b"}) || req.Tenant != "local" {
		t.Fatalf("old state read as %+v", req)
	}

	f, err := rag.ParseMetaFilter([]byte(`{"and":[{"key":"year","gte":2025},{"key":"dept","in":["hr","finance"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	old.State.Request.Filter = f
	b, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	var back Flow
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := back.State.Request.Filter; got == nil || got.CacheKey() != f.CacheKey() || !slices.Equal(back.State.Request.Restrict, req.Restrict) {
		t.Fatalf("filter after JSON: %v (state %s)", got, b)
	}

	bad := strings.Replace(oldRetrieveInput, `"restrict":`, `"filter":{"key":"year","like":"20%"},"restrict":`, 1)
	_, err = (&Stages{}).Dispatch(context.Background(), Envelope{Stage: "Retrieve", Input: json.RawMessage(bad)})
	if !rag.Is(err, rag.KindInvalid) || !strings.Contains(err.Error(), "like") {
		t.Fatalf("a state with a malformed filter: %v, want Invalid naming it", err)
	}
}
