package answer

import "github.com/docmind/docmind/shared/rank"

// The chat stream's events (DESIGN.md section 7, docs/chat-protocol.md), one typed payload each. The wire
// JSON is a contract with the page, `docmind ask` and the stored traces: the fields are declared in the
// order of their JSON keys (the order the map payloads these replace encoded them in), and optional keys
// are omitted exactly when they used to be absent, so the bytes on the wire did not change. The golden
// event streams in cmd/docmind/testdata/events check the keys of every path.

// Event names, in the order a standard answer sends them (meta, sent by the edge, comes first; agent_step
// only on the AGENTIC path; confidence_warning only below the HIGH band; error only for a model that broke
// off mid-answer, or from the edge for a failure).
const (
	EventUnderstanding     = "understanding"
	EventRouting           = "routing"
	EventAgentStep         = "agent_step"
	EventCached            = "cached"          // payload: CacheOrigin, first on a replay from the semantic cache
	EventInferredFilter    = "inferred_filter" // payload: *InferredFilter, after understanding and on a fallback
	EventRetrieval         = "retrieval"
	EventGrader            = "grader" // payload: rank.Grade
	EventRerank            = "rerank"
	EventStart             = "start"
	EventToken             = "token"
	EventConfidenceWarning = "confidence_warning"
	EventError             = "error"
	EventDone              = "done" // payload: *Done, sent by the edge after it stored the answer
)

// UnderstandingEvent is what the question was understood as.
type UnderstandingEvent struct {
	Query         string        `json:"query"`
	Rewritten     bool          `json:"rewritten"`
	Understanding Understanding `json:"understanding"`
}

// RoutingEvent is the path chosen and why. Documents is set on SELECTED_DOC, SubQueries on DECOMPOSED;
// HyDE is set (true or false) only when a hypothetical answer was attempted for a fuzzy question.
type RoutingEvent struct {
	Detail     string   `json:"detail"`
	Documents  []string `json:"documents,omitempty"`
	HyDE       *bool    `json:"hyde,omitempty"`
	Path       string   `json:"path"`
	Reason     string   `json:"reason"`
	SubQueries []string `json:"sub_queries,omitempty"`
}

// AgentStepEvent is one round of the AGENTIC loop.
type AgentStepEvent struct {
	Round int         `json:"round"`
	Calls []AgentCall `json:"calls"`
	New   int         `json:"new_evidence"`
}

// AgentCall is one tool call of an agent round.
type AgentCall struct {
	Tool    string `json:"tool"`
	Query   string `json:"query,omitempty"`
	Results int    `json:"results"`
	New     int    `json:"new"`
	Error   string `json:"error,omitempty"`
}

// RetrievalEvent counts what each retrieval leg found and how many passages the answer is written from.
type RetrievalEvent struct {
	Degraded []string         `json:"degraded"`
	Evidence int              `json:"evidence"`
	Fused    int              `json:"fused"`
	Keyword  int              `json:"keyword"`
	Profile  rank.Profile     `json:"profile"`
	StageMS  map[string]int64 `json:"stage_ms"`
	Vector   int              `json:"vector"`
	// Read is set on the SELECTED_DOC reading: what was read instead of searched.
	Read *ReadStats `json:"read,omitempty"`
}

// RerankEvent is the sources in rank order, and whether a real reranker scored them.
type RerankEvent struct {
	RerankerScored bool        `json:"reranker_scored"`
	Top            []RerankTop `json:"top"`
}

// RerankTop is one ranked source.
type RerankTop struct {
	Chapter  string  `json:"chapter"`
	FileName string  `json:"file_name"`
	N        int     `json:"n"`
	Score    float64 `json:"score"`
}

// StartEvent opens the answer with its sources (numbered as the answer cites them).
type StartEvent struct {
	Path    string   `json:"path"`
	Sources []Source `json:"sources"`
}

// ReplayStartEvent opens a prepared answer (a short circuit's or a cached one), saying which.
type ReplayStartEvent struct {
	FromCache    bool     `json:"from_cache"`
	Path         string   `json:"path"`
	ShortCircuit string   `json:"short_circuit"`
	Sources      []Source `json:"sources"`
}

// TokenEvent is one piece of the answer's text.
type TokenEvent struct {
	Text string `json:"text"`
}

// ConfidenceWarningEvent says the answer is not well supported, in words for the reader.
type ConfidenceWarningEvent struct {
	Band    string  `json:"band"`
	Message string  `json:"message"`
	Reason  string  `json:"reason"`
	Score   float64 `json:"score"`
}

// ErrorEvent is a failure: Code is the error kind, Message public text. Partial says the model broke
// off mid-answer and done still follows with what arrived.
type ErrorEvent struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Partial bool   `json:"partial,omitempty"`
}
