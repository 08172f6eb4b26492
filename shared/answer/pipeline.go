package answer

import (
	"context"
	"errors"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/inject"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

// Retriever is the retrieval chain (retrieve.Retriever).
type Retriever interface {
	Retrieve(ctx context.Context, q retrieve.Query) (*retrieve.Result, error)
}

// Emit sends one event. The SSE writer's Send is one; the events it records are the persisted trace,
// so the stream and the trace cannot drift.
type Emit func(name string, v any) error

// Request is one question. It marshals to JSON as part of State; never decode a client's body into it:
// Tenant and User come from authentication, and the edge resolves the knowledge bases the caller may
// read.
type Request struct {
	Tenant string   `json:"tenant"`
	KBIDs  []string `json:"kb_ids,omitempty"` // empty: every knowledge base of the tenant
	// DocumentIDs limits retrieval to selected documents (the SELECTED_DOC path).
	DocumentIDs []string `json:"document_ids,omitempty"`
	// Restrict is the documents a metadata filter lets through (docs/metadata-filters.md): retrieval is
	// limited to them on every path, without the SELECTED_DOC reading. Empty: no restriction.
	Restrict []string `json:"restrict,omitempty"`
	// Filter is the metadata filter Restrict was resolved from (nil: none). It never widens Restrict,
	// which stays the authority; it travels beside it so that an index keeping metadata on its rows
	// (Milvus on AWS) searches by it as an expression instead of a long id list. An edge composing
	// filters (the user's, a permission filter) sets their and here and their documents in Restrict.
	Filter *rag.MetaFilter `json:"filter,omitempty"`
	// AccessRestricted says Restrict leaves out documents of the knowledge bases that the caller may
	// not read (their access lists, shared/access): filter inference then describes only Restrict's
	// documents, so a value held only by a document the caller may not read is never inferred (nor
	// shown to the model). A flag rather than the denied ids: the state stays as small as Restrict.
	AccessRestricted bool `json:"access_restricted,omitempty"`
	// FilterKeys are the keys the user's metadata filter names: filter inference leaves them alone.
	FilterKeys []string `json:"filter_keys,omitempty"`
	Question   string   `json:"question"`
	// History is the conversation's earlier turns, oldest first (the prompt keeps the newest that fit).
	History []llm.Message `json:"history,omitempty"`
	// HistoryAt, when given, is each History message's time; with it, Summary (covering the messages up
	// to SummaryUpto) is reused, and only turns newer than it are summarised again.
	HistoryAt   []time.Time `json:"history_at,omitempty"`
	Summary     string      `json:"summary,omitempty"`
	SummaryUpto time.Time   `json:"summary_upto,omitzero"`
	// User is the asker (long-term memory is per user; empty: no memory).
	User string `json:"user,omitempty"`
	// ConversationID and MessageID say where the edge will store this answer (empty: it will not): the
	// semantic cache keeps them as the turn a replay comes from (CacheOrigin).
	ConversationID string `json:"conversation_id,omitempty"`
	MessageID      string `json:"message_id,omitempty"`
}

// Pipeline answers on the standard path with the extractive answerer.
type Pipeline struct {
	Retriever Retriever
	Answerer  Extractive
	// Abstains decides whether the extractive answer abstains (nil: reader.Abstains); evaluation sets it
	// to record the rule's signals and answer anyway, so that rules can be compared on the same answers.
	Abstains func(question string, ev []rank.Evidence, g rank.Grade) (string, bool)
	// RerankKnown says a real reranker scores the evidence (its top score is a calibrated signal).
	RerankKnown bool
	// MaxQuestionRunes bounds the question (default 2000).
	MaxQuestionRunes int
	// MaxTokens bounds the streamed answer (default 1024 tokens): Lambda does not stop a stream when the
	// client goes away, so the server caps it.
	MaxTokens int
	// LLM writes the answer when set (Model names the main model); nil, or a provider failing before its
	// first token, means the extractive answerer, and "llm" in degraded.
	LLM   llm.Streamer
	Model string
	// PriceIn and PriceOut are the main model's USD prices per million prompt and completion tokens.
	PriceIn, PriceOut float64
	// ContextTokens is the prompt's one token ceiling (default 6000).
	ContextTokens int
	// Guard is the safety guard; Catalog answers KB_META questions (nil: they take the full pipeline).
	Guard   Guard
	Catalog Catalog
	// Cache is the semantic cache (nil: off).
	Cache *SemanticCache
	// Infer reads the knowledge bases' metadata for filter inference (infer.go); nil: no inference.
	Infer MetaCatalog
	// Understander makes the merged understanding call (nil: rules only).
	Understander *Understander
	// Web searches the web when the grader asks for compensation (nil: off).
	Web *WebSearch
	// Agent runs the AGENTIC path for complex questions (nil: they take the standard path).
	Agent *Agent
	// Memory is long-term memory per user (nil: off). It is recalled into a model's prompt and written
	// from the understanding's memory hints.
	Memory Memory
	// Calibration maps an answer's features to the probability that it is right, per answerer; nil
	// means the calibration shipped in the binary (calibration.json), an empty map none (the
	// uncalibrated formula).
	Calibration Calibrations
	// Documents reads a selected document's passages in order for a summary question (the SELECTED_DOC
	// reading, read.go); nil: such a question is retrieved within the selection like any other.
	// ReadTokens is the reading's token budget (default ReadTokens, at most half of ContextTokens).
	Documents  Documents
	ReadTokens int
	// RecentTurns is how many of the newest history messages the prompt keeps verbatim (default 6);
	// older ones become a short summary by the small model.
	RecentTurns int
}

// Retrieve runs the pipeline's retrieval chain alone: the retrieval test (POST /api/search) sees what a
// question's retrieval sees.
func (p *Pipeline) Retrieve(ctx context.Context, q retrieve.Query) (*retrieve.Result, error) {
	return p.Retriever.Retrieve(ctx, q)
}

// Memory is long-term memory per user (memory.Store).
type Memory interface {
	Recall(ctx context.Context, tenant, user, q string) ([]rag.Memory, error)
	Remember(ctx context.Context, tenant, user string, hints []string) (int, error)
}

// Done is the final event.
type Done struct {
	Answer     string     `json:"answer"`
	Sources    []Source   `json:"sources"`
	Confidence Confidence `json:"confidence"`
	Path       string     `json:"path"`
	FromCache  bool       `json:"from_cache"`
	// Cached, on a replayed answer, names the turn it was first given for (see CacheOrigin); the
	// confidence, its warning, the claims and the injection flags are that turn's.
	Cached     *CacheOrigin     `json:"cached,omitempty"`
	IsFallback bool             `json:"is_fallback"`
	Degraded   []string         `json:"degraded"`
	StageMS    map[string]int64 `json:"stage_ms"`
	Truncated  bool             `json:"truncated,omitempty"`
	// Partial says the model stopped mid-answer (an error event came first): the answer is what arrived.
	Partial  bool   `json:"partial,omitempty"`
	Answerer string `json:"answerer"` // "llm" or "extractive"
	// Abstained says the documents do not answer the question: the answer says so in the question's
	// language and cites nothing (reader.Abstains decides, for the extractive answerer).
	Abstained bool `json:"abstained"`
	// FallbackReason is the error kind that made the extractive answerer stand in for the model.
	FallbackReason string    `json:"fallback_reason,omitempty"`
	Usage          llm.Usage `json:"usage"`
	CostUSD        float64   `json:"cost_usd"` // from usage and the configured prices (0 offline or unpriced)
	// InjectionFlags names each retrieved passage that instructs the assistant (source number, document,
	// reason): such a passage is shown as a source but never obeyed, and its instructions are never
	// quoted. Always present; an empty list when no passage does.
	InjectionFlags []inject.Flag `json:"injection_flags"`
	// Sanitised counts what was removed from the answer: outside images, links and HTML, an injected
	// passage's URLs, sentences echoing an injected instruction.
	Sanitised int `json:"sanitised,omitempty"`
	// ShortCircuit names why retrieval and the model were skipped (EMERGENCY, CHITCHAT, KB_META); the
	// confidence band is then empty, since the answer does not come from passages.
	ShortCircuit string `json:"short_circuit,omitempty"`
	// WebSources counts the web results added as sources (grader-gated compensation).
	WebSources int `json:"web_sources,omitempty"`
	// AgentRounds and AgentStop say how the AGENTIC loop went (rounds run, and why it stopped).
	AgentRounds int    `json:"agent_rounds,omitempty"`
	AgentStop   string `json:"agent_stop,omitempty"`
	// MemoriesUsed counts remembered facts put in the prompt; MemoriesWritten the new ones this question
	// taught.
	MemoriesUsed    int `json:"memories_used,omitempty"`
	MemoriesWritten int `json:"memories_written,omitempty"`
	// InferredFilter is the metadata filter read from the question, when one was (infer.go).
	InferredFilter *InferredFilter `json:"inferred_filter,omitempty"`
	// Recommendations are up to 3 related documents: retrieved for the question but not cited.
	Recommendations []Recommendation `json:"recommendations"`
	// Claims are the answer's cited sentences checked against the passages they cite, in answer
	// order (empty when nothing is cited).
	Claims []Claim `json:"claims"`
	// NewSummary, when set, is a new summary of the conversation's older turns, covering the messages up
	// to NewSummaryUpto: the caller stores it with the conversation.
	NewSummary     string    `json:"-"`
	NewSummaryUpto time.Time `json:"-"`
	// ConversationID and MessageID say where the answer was stored (empty when it was not): set by the
	// edge that stored it, before it sends done.
	ConversationID string `json:"conversation_id,omitempty"`
	MessageID      string `json:"message_id,omitempty"`
}

// Path names and the reason codes of the routing event.
const (
	PathStandard    = "STANDARD"
	PathSelectedDoc = "SELECTED_DOC"
)

// Check validates a request, so that a server can reject it with a status before the stream starts.
func (p *Pipeline) Check(req Request) error {
	const op = "answer.Check"
	maxQ := p.MaxQuestionRunes
	if maxQ <= 0 {
		maxQ = 2000
	}
	q := strings.TrimSpace(req.Question)
	switch {
	case q == "":
		return rag.Errorf(op, rag.KindInvalid, "question is empty")
	case !utf8.ValidString(q):
		return rag.Errorf(op, rag.KindInvalid, "question is not valid UTF-8")
	case utf8.RuneCountInString(q) > maxQ:
		return rag.Errorf(op, rag.KindInvalid, "question is longer than %d characters", maxQ)
	}
	return rag.Filter{Tenant: req.Tenant, KBIDs: req.KBIDs, DocumentIDs: scopeDocs(req)}.Validate()
}

// Recommendation is a related document.
type Recommendation struct {
	DocumentID string  `json:"document_id"`
	KBID       string  `json:"kb_id"`
	FileName   string  `json:"file_name"`
	Chapter    string  `json:"chapter,omitempty"` // the best-matching section
	Score      float64 `json:"score"`
}

// Recommend returns up to n documents from the ranked candidates that no cited source comes from, in
// rank order, one entry per document.
func Recommend(sources []Source, ranked []rank.Evidence, n int) []Recommendation {
	seen := map[string]bool{}
	for _, s := range sources {
		if s.Cited {
			seen[s.DocumentID] = true
		}
	}
	out := []Recommendation{}
	for _, e := range ranked {
		if len(out) == n {
			break
		}
		if e.DocumentID == "" || seen[e.DocumentID] {
			continue
		}
		seen[e.DocumentID] = true
		out = append(out, Recommendation{DocumentID: e.DocumentID, KBID: e.KBID, FileName: e.FileName, Chapter: e.Chapter, Score: e.Score})
	}
	return out
}

// decomposedK is how many evidence items a decomposed question keeps across its sub-questions.
const decomposedK = 8

var errTokenCap = errors.New("answer: token cap reached")

// Run answers req, emitting understanding, routing, agent_step*, retrieval, grader, rerank, start,
// token* and confidence_warning?, and returns the final answer without storing or sending it: the edge
// (HTTP handler, CLI, Lambda) stores the message, then sends the returned Done as the done event, so that
// the stored trace and the stream end the same way. A short circuit, a cache hit and an out-of-scope
// question send start and token* only. An error is returned for the caller to send as an error event;
// the caller owns the meta event. The steps run over one State in three phases, Begin, Gather and
// Finish, which the answer workflow (shared/askflow) runs as separate Tasks.
func (p *Pipeline) Run(ctx context.Context, req Request, emit Emit) (*Done, error) {
	st, prepared, err := p.Begin(ctx, req, emit)
	if err != nil {
		return nil, err
	}
	if prepared != nil {
		return p.Replay(ctx, st, prepared, emit)
	}
	if err := p.Gather(ctx, st, emit); err != nil {
		return nil, err
	}
	return p.Finish(ctx, st, emit)
}

// Begin checks req and runs the steps before retrieval: the short circuits, the cache lookup, the
// understanding (emitted), the route and HyDE (emitted as routing). A non-nil prepared answer (a short
// circuit, a cache hit, an out-of-scope question) is to be given to Replay instead of retrieving.
// Errors: Invalid for a request that fails Check; the catalog's for a KB_META question; emit's.
func (p *Pipeline) Begin(ctx context.Context, req Request, emit Emit) (st *State, prepared *Done, err error) {
	if err := p.Check(req); err != nil {
		return nil, nil, err
	}
	st = p.newState(req)
	if prepared, err = p.shortCircuit(ctx, st); err != nil {
		return nil, nil, err
	}
	if prepared == nil {
		p.infer(ctx, st) // before the cache: the inferred filter is part of the answer's scope
		prepared = p.lookup(ctx, st)
	}
	if prepared == nil {
		prepared = p.understand(ctx, st)
	}
	if prepared == nil && p.inferByModel(ctx, st) {
		prepared = p.lookup(ctx, st) // the model narrowed the scope: the answer is looked up (and kept) under it
	}
	if prepared != nil {
		return st, prepared, nil
	}
	if err := emit(EventUnderstanding, UnderstandingEvent{Query: st.Question, Rewritten: st.Understanding.Rewrite != st.Question,
		Understanding: st.Understanding}); err != nil {
		return nil, nil, err
	}
	if st.Inferred != nil {
		if err := emit(EventInferredFilter, st.Inferred); err != nil {
			return nil, nil, err
		}
	}
	p.route(st)
	p.hyde(ctx, st)
	if err := emit(EventRouting, st.Route); err != nil {
		return nil, nil, err
	}
	return st, nil, nil
}

// Gather is the retrieval step over a begun state: st.Result is the evidence, reranked and graded by
// the retrieval chain (the agent's and each sub-question's on those paths). Errors: the retriever's
// (Unavailable when both legs fail), the agent's, emit's.
func (p *Pipeline) Gather(ctx context.Context, st *State, emit Emit) error {
	return p.retrieve(ctx, st, emit)
}

// Finish runs the steps after retrieval over a gathered state: web compensation, the prompt, the
// sources (announced), the answer (streamed), its verification, memory and the cache, and returns
// the final answer as Run does.
func (p *Pipeline) Finish(ctx context.Context, st *State, emit Emit) (*Done, error) {
	st.Done.InferredFilter = st.Inferred // here, not when inferred: a state may travel as JSON in between
	p.compensate(ctx, st)
	if err := p.composePrompt(ctx, st); err != nil {
		return nil, err
	}
	st.sources()
	if err := p.announce(st, emit); err != nil {
		return nil, err
	}
	if err := p.generate(ctx, st, emit); err != nil {
		return nil, err
	}
	if err := p.verify(st, emit); err != nil {
		return nil, err
	}
	p.remember(ctx, st)
	p.cache(ctx, st)
	return final(st, st.Done), nil
}
