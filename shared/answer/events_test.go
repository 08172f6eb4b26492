package answer

import (
	"encoding/json"
	"testing"

	"github.com/docmind/docmind/shared/rank"
)

// TestEventWireBytes pins each typed event to the bytes of the map payload it replaced: the stream is a
// contract with clients and stored traces, and the golden streams only check keys.
func TestEventWireBytes(t *testing.T) {
	u := Understanding{Scope: "KB_QUERY", Rewrite: "leave policy", Intent: "policy"}
	src := []Source{{N: 1, FileName: "h.md", Chapter: "Leave", Score: 0.8}}
	no, yes := false, true
	prof := rank.Profile{K: 60, BM25Weight: 1, VectorWeight: 1}
	cases := []struct {
		name     string
		typed    any
		previous any
	}{
		{"understanding", UnderstandingEvent{Query: "q", Rewritten: true, Understanding: u},
			map[string]any{"query": "q", "rewritten": true, "understanding": u}},
		{"routing standard", RoutingEvent{Path: PathStandard, Reason: "RULES_DEFAULT", Detail: "d"},
			map[string]any{"path": PathStandard, "reason": "RULES_DEFAULT", "detail": "d"}},
		{"routing selected", RoutingEvent{Path: PathSelectedDoc, Reason: "SELECTED_DOC", Documents: []string{"d1"}, Detail: "d"},
			map[string]any{"path": PathSelectedDoc, "reason": "SELECTED_DOC", "documents": []string{"d1"}, "detail": "d"}},
		{"routing decomposed", RoutingEvent{Path: PathDecomposed, Reason: "DECOMPOSED", SubQueries: []string{"a", "b"}, Detail: "d"},
			map[string]any{"path": PathDecomposed, "reason": "DECOMPOSED", "sub_queries": []string{"a", "b"}, "detail": "d"}},
		{"routing hyde failed", RoutingEvent{Path: PathStandard, Reason: "R", Detail: "d", HyDE: &no},
			map[string]any{"path": PathStandard, "reason": "R", "detail": "d", "hyde": false}},
		{"routing hyde", RoutingEvent{Path: PathStandard, Reason: "R", Detail: "d", HyDE: &yes},
			map[string]any{"path": PathStandard, "reason": "R", "detail": "d", "hyde": true}},
		{"retrieval", RetrievalEvent{Keyword: 3, Vector: 4, Fused: 5, Evidence: 2, StageMS: map[string]int64{"bm25": 1}, Profile: prof},
			map[string]any{"keyword": 3, "vector": 4, "fused": 5, "evidence": 2, "stage_ms": map[string]int64{"bm25": 1},
				"degraded": []string(nil), "profile": prof}},
		{"rerank", RerankEvent{RerankerScored: true, Top: []RerankTop{{N: 1, FileName: "h.md", Score: 0.5}}},
			map[string]any{"reranker_scored": true, "top": []map[string]any{{"n": 1, "file_name": "h.md", "chapter": "", "score": 0.5}}}},
		{"start", StartEvent{Sources: src, Path: PathStandard},
			map[string]any{"sources": src, "path": PathStandard}},
		{"start replayed", ReplayStartEvent{Sources: []Source{}, Path: ShortChitchat, ShortCircuit: ShortChitchat},
			map[string]any{"sources": []Source{}, "path": ShortChitchat, "short_circuit": ShortChitchat, "from_cache": false}},
		{"token", TokenEvent{Text: "Twenty "}, map[string]string{"text": "Twenty "}},
		{"confidence_warning", ConfidenceWarningEvent{Score: 0.4, Band: BandLow, Message: "m", Reason: "r"},
			map[string]any{"score": 0.4, "band": BandLow, "message": "m", "reason": "r"}},
		{"error partial", ErrorEvent{Code: "Unavailable", Partial: true, Message: "m"},
			map[string]any{"code": "Unavailable", "partial": true, "message": "m"}},
		{"error", ErrorEvent{Code: "Internal", Message: "m"}, map[string]string{"code": "Internal", "message": "m"}},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.typed)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(c.previous)
		if string(got) != string(want) {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, want)
		}
	}
}
