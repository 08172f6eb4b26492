package answer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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

// Request is one question.
type Request struct {
	Tenant string   `json:"-"`
	KBIDs  []string `json:"kb_ids,omitempty"` // empty: every knowledge base of the tenant
	// DocumentIDs limits retrieval to selected documents (the SELECTED_DOC path).
	DocumentIDs []string `json:"document_ids,omitempty"`
	Question    string   `json:"question"`
	// History is the conversation's earlier turns, oldest first (the prompt keeps the newest that fit).
	History []llm.Message `json:"-"`
	// HistoryAt, when given, is each History message's time; with it, Summary (covering the messages up
	// to SummaryUpto) is reused, and only turns newer than it are summarised again.
	HistoryAt   []time.Time `json:"-"`
	Summary     string      `json:"-"`
	SummaryUpto time.Time   `json:"-"`
	// User is the asker (long-term memory is per user; empty: no memory).
	User string `json:"-"`
}

// Pipeline answers on the standard path with the extractive answerer.
type Pipeline struct {
	Retriever Retriever
	Answerer  Extractive
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
	Answer     string           `json:"answer"`
	Sources    []Source         `json:"sources"`
	Confidence Confidence       `json:"confidence"`
	Path       string           `json:"path"`
	FromCache  bool             `json:"from_cache"`
	IsFallback bool             `json:"is_fallback"`
	Degraded   []string         `json:"degraded"`
	StageMS    map[string]int64 `json:"stage_ms"`
	Truncated  bool             `json:"truncated,omitempty"`
	// Partial says the model stopped mid-answer (an error event came first): the answer is what arrived.
	Partial  bool   `json:"partial,omitempty"`
	Answerer string `json:"answerer"` // "llm" or "extractive"
	// FallbackReason is the error kind that made the extractive answerer stand in for the model.
	FallbackReason string    `json:"fallback_reason,omitempty"`
	Usage          llm.Usage `json:"usage"`
	CostUSD        float64   `json:"cost_usd"`                  // from usage and the configured prices (0 offline or unpriced)
	Flagged        int       `json:"injection_flags,omitempty"` // instruction-like spans removed from passages
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
	return rag.Filter{Tenant: req.Tenant, KBIDs: req.KBIDs, DocumentIDs: req.DocumentIDs}.Validate()
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

// Run answers req, emitting understanding, routing, retrieval, grader, rerank, start, token* and
// confidence_warning?, and returns the final answer without storing or sending it: the edge (HTTP
// handler, CLI, Lambda) stores the message, then sends the returned Done as the done event, so that the
// stored trace and the stream end the same way. An error is returned for the caller to send as an error
// event; the caller owns the meta event.
func (p *Pipeline) Run(ctx context.Context, req Request, emit Emit) (*Done, error) {
	const op = "answer.Run"
	if err := p.Check(req); err != nil {
		return nil, err
	}
	maxTok := p.MaxTokens
	if maxTok <= 0 {
		maxTok = 1024
	}
	q := strings.TrimSpace(req.Question)
	f := rag.Filter{Tenant: req.Tenant, KBIDs: req.KBIDs, DocumentIDs: req.DocumentIDs}
	if reason, answer, err := p.shortCircuit(ctx, req, q); err != nil {
		return nil, err
	} else if reason != "" {
		return p.replay(ctx, req, &Done{Path: reason, ShortCircuit: reason, Answer: answer, Sources: []Source{}, Answerer: "rules"}, maxTok, emit)
	}
	done := &Done{Path: PathStandard, StageMS: map[string]int64{}}
	var cacheKey string
	var qvec []float32
	// A question with earlier turns may lean on them ("and for part-time staff?"): it is neither looked up
	// nor stored, since the cache knows only the question and the documents.
	if p.Cache != nil && len(req.History) == 0 {
		t := time.Now()
		gen := "extractive|" + promptVersion
		if p.LLM != nil {
			gen = "llm:" + p.Model + "|" + promptVersion
		}
		hit, vec, key, err := p.Cache.Lookup(ctx, req, q, gen)
		switch {
		case err != nil:
			done.Degraded = append(done.Degraded, "cache")
		case hit != nil:
			replayed := *hit
			replayed.FromCache, replayed.StageMS = true, map[string]int64{"cache": time.Since(t).Milliseconds()}
			return p.replay(ctx, req, &replayed, maxTok, emit)
		default:
			cacheKey, qvec = key, vec
		}
		done.StageMS["cache"] = time.Since(t).Milliseconds()
	}
	step := func(name string, start time.Time) { done.StageMS[name] = time.Since(start).Milliseconds() }

	t := time.Now()
	u := p.Understander.Understand(ctx, q, req.History)
	step("understanding", t)
	if u.Scope == ScopeOutOfScope {
		return p.replay(ctx, req, &Done{Path: ScopeOutOfScope, ShortCircuit: ScopeOutOfScope, Answer: outOfScopeAnswer(q),
			Sources: []Source{}, Answerer: "rules", StageMS: done.StageMS}, maxTok, emit)
	}
	if err := emit(EventUnderstanding, UnderstandingEvent{Query: q, Rewritten: u.Rewrite != q, Understanding: u}); err != nil {
		return nil, err
	}
	selected := len(req.DocumentIDs) > 0
	decomposed := u.Decompose && len(u.SubQueries) >= 2 && !selected
	route := RoutingEvent{Path: PathStandard, Reason: "RULES_DEFAULT", Detail: "one question, no selected document"}
	switch {
	case selected:
		done.Path = PathSelectedDoc
		route = RoutingEvent{Path: PathSelectedDoc, Reason: "SELECTED_DOC", Documents: req.DocumentIDs,
			Detail: "retrieval is limited to the documents the user selected"}
	case decomposed:
		done.Path = PathDecomposed
		route = RoutingEvent{Path: PathDecomposed, Reason: "DECOMPOSED", SubQueries: u.SubQueries,
			Detail: "each sub-question is retrieved on its own and the evidence merged"}
	case u.Complexity == "complex" && p.Agent != nil && p.Agent.LLM != nil:
		done.Path = PathAgentic
		route = RoutingEvent{Path: PathAgentic, Reason: "COMPLEX",
			Detail: "a complex question: the model searches with read-only tools until nothing new is found"}
	case u.Decompose:
		route.Reason, route.Detail = "DECOMPOSITION_WITHOUT_SUBQUERIES", "the question asks about several things but no sub-questions were produced (the rules cannot split a question), so it is answered on the standard path"
	}
	var hyde string
	agentic := done.Path == PathAgentic
	if !decomposed && !agentic && u.Specificity == "fuzzy" && p.Understander != nil && p.Understander.LLM != nil {
		th := time.Now()
		h, err := p.Understander.HyDE(ctx, u.Rewrite)
		if err != nil {
			done.Degraded = append(done.Degraded, "hyde")
		}
		hyde = h
		tried := hyde != ""
		route.HyDE = &tried
		step("hyde", th)
	}
	if err := emit(EventRouting, route); err != nil {
		return nil, err
	}

	t = time.Now()
	var res *retrieve.Result
	var served map[string][]string
	var err error
	var agentUsage llm.Usage
	if agentic {
		ar, err := p.Agent.run(ctx, p, u.Rewrite, f, emit)
		if err != nil {
			return nil, err
		}
		res, agentUsage, done.AgentRounds, done.AgentStop = ar.res, ar.usage, ar.rounds, ar.stop
		if ar.stop == "MODEL_FAILED" {
			done.Degraded = append(done.Degraded, "agent")
		}
	}
	switch {
	case decomposed:
		res, served, err = retrieveDecomposed(ctx, p.Retriever, u.SubQueries, f, decomposedK)
	case !agentic || len(res.Evidence) == 0:
		// The standard retrieval; also under an agent that found nothing (or never searched), so that
		// the answer is not written from nothing because the model did not look.
		rq := retrieve.Query{Text: u.Rewrite, HyDE: hyde, Filter: f}
		if u.Rewrite == q {
			rq.Vector = qvec // the cache already embedded the question
		}
		res, err = p.Retriever.Retrieve(ctx, rq)
	}
	if err != nil {
		return nil, err
	}
	if res == nil {
		return nil, rag.Errorf(op, rag.KindInternal, "the retriever returned no result")
	}
	step("retrieval", t)
	for k, v := range res.StageMS {
		done.StageMS["retrieval."+k] = v
	}
	done.Degraded = append(done.Degraded, res.Degraded...)
	if p.Web != nil && res.Grade.WebCompensation && !selected && !agentic { // the agent had web_search itself
		tw := time.Now()
		web, err := p.Web.Search(ctx, u.Rewrite)
		step("web", tw)
		if err != nil {
			done.Degraded = append(done.Degraded, "web")
		} else if len(web) > 0 {
			res.Evidence = append(slices.Clone(res.Evidence), web...) // KB evidence keeps the first numbers
			done.WebSources = len(web)
		}
	}
	var prompt Prompt
	promptQuestion := q
	if decomposed {
		promptQuestion = decomposedQuestion(q, u.SubQueries)
	}
	if p.LLM != nil {
		memories, summary, recent := p.context(ctx, req, u.Rewrite, done)
		mode := ModeStandard
		switch {
		case len(res.Evidence) == 0:
			mode = ModeFallback
		case res.Grade.Tier != rank.TierHigh:
			mode = ModeLow
		}
		if prompt, err = BuildPrompt(PromptInput{Question: promptQuestion, Evidence: res.Evidence, Mode: mode,
			Ceiling: p.ContextTokens, Memory: memories, Summary: summary, History: recent, Served: served}); err != nil {
			return nil, rag.E(op, rag.KindInternal, err)
		}
		res.Evidence = res.Evidence[:prompt.Used] // sources are what the model saw
		done.Flagged = prompt.Flagged
	}
	if err := emit(EventRetrieval, RetrievalEvent{Keyword: len(res.Keyword), Vector: len(res.Vector),
		Fused: len(res.Fused), Evidence: len(res.Evidence), StageMS: res.StageMS,
		Degraded: res.Degraded, Profile: res.Profile}); err != nil {
		return nil, err
	}
	if err := emit(EventGrader, res.Grade); err != nil {
		return nil, err
	}
	done.Sources = Sources(res.Evidence)
	for i := range done.Sources {
		done.Sources[i].Served = served[done.Sources[i].ChunkID]
	}
	top := make([]RerankTop, 0, len(done.Sources))
	for _, s := range done.Sources {
		top = append(top, RerankTop{N: s.N, FileName: s.FileName, Chapter: s.Chapter, Score: s.Score})
	}
	if err := emit(EventRerank, RerankEvent{RerankerScored: p.RerankKnown, Top: top}); err != nil {
		return nil, err
	}
	if err := emit(EventStart, StartEvent{Sources: done.Sources, Path: done.Path}); err != nil {
		return nil, err
	}

	t = time.Now()
	done.IsFallback = len(res.Evidence) == 0
	ts := &tokenStream{ctx: ctx, emit: emit, max: maxTok, done: done}
	send := ts.send
	generated := false
	if p.LLM != nil {
		usage, err := p.LLM.Stream(ctx, llm.Request{Model: p.Model, Messages: prompt.Messages, Temperature: 0.3, MaxTokens: maxTok}, send)
		if usage.PromptTokens == 0 && usage.CompletionTokens == 0 { // the provider did not report: estimate
			usage = llm.Usage{PromptTokens: prompt.Tokens, CompletionTokens: ts.n, Estimated: true}
		}
		usage.PromptTokens += agentUsage.PromptTokens // the agent's rounds run on the main model too
		usage.CompletionTokens += agentUsage.CompletionTokens
		done.Usage = usage
		done.CostUSD = (float64(usage.PromptTokens)*p.PriceIn + float64(usage.CompletionTokens)*p.PriceOut) / 1e6
		switch {
		case err == nil, errors.Is(err, errTokenCap):
			generated = true
		case ctx.Err() != nil:
			return nil, err
		case ts.n > 0:
			// Half an answer is not repaired with another one: the client is told the stream broke, then
			// gets done with what it was sent, marked partial (and the answer is not cached).
			generated, done.Partial, cacheKey = true, true, ""
			done.Degraded = append(done.Degraded, "llm")
			if err := emit(EventError, ErrorEvent{Code: rag.KindOf(err).String(), Partial: true,
				Message: "the model stopped in the middle of the answer; what was received is kept"}); err != nil {
				return nil, err
			}
		default:
			done.Degraded = append(done.Degraded, "llm")
			done.FallbackReason = rag.KindOf(err).String()
		}
	} else {
		done.Degraded = append([]string{"llm"}, done.Degraded...)
	}
	if generated {
		done.Answerer = "llm"
	} else {
		done.Answerer = "extractive"
		if err := ts.sendAll(p.Answerer.Compose(q, res.Evidence)); err != nil {
			return nil, err
		}
	}
	step("generation", t)
	done.Answer = ts.text.String()
	used, _ := Citations(done.Answer, len(done.Sources))
	for _, n := range used {
		done.Sources[n-1].Cited = true
	}
	cal := p.Calibration
	if cal == nil {
		cal = shippedCalibrations()
	}
	done.Confidence, done.Claims = Assess(q, done.Answer, done.Answerer, res.Evidence, res.Grade, p.RerankKnown, cal)
	done.Recommendations = Recommend(done.Sources, res.Reranked, 3)
	if done.Confidence.Band != BandHigh {
		msg := "The answer is only partly supported by the documents: check the cited sources."
		if done.Confidence.Band == BandLow {
			msg = "Low confidence: the documents may not answer this question. Check the sources before relying on it."
		}
		if done.Confidence.Calibrated {
			// the score is an estimate of being right: say it as one
			msg = fmt.Sprintf("About %.0f%% of answers like this one are right: check the cited sources before relying on it.", 100*done.Confidence.Score)
		}
		if err := emit(EventConfidenceWarning, ConfidenceWarningEvent{Score: done.Confidence.Score,
			Band: done.Confidence.Band, Message: msg, Reason: done.Confidence.Reason}); err != nil {
			return nil, err
		}
	}
	if p.Memory != nil && req.User != "" && len(u.MemoryHints) > 0 {
		n, err := p.Memory.Remember(ctx, req.Tenant, req.User, u.MemoryHints)
		done.MemoriesWritten = n
		if err != nil {
			done.Degraded = append(done.Degraded, "memory")
		}
	}
	if cacheKey != "" {
		if err := p.Cache.Record(ctx, cacheKey, q, qvec, done); err != nil {
			done.Degraded = append(done.Degraded, "cache")
		}
	}
	return final(done), nil
}

// summaryBatch is how many messages must have left the verbatim window since the last summary before
// they are summarised (three turns).
const summaryBatch = 6

// context gathers what a model's prompt holds besides the passages: the user's recalled memories, a
// summary of turns older than the newest RecentTurns (made in batches of summaryBatch messages), and the
// turns kept verbatim. A failure of the summary or the memory is flagged in degraded and costs only that
// part.
func (p *Pipeline) context(ctx context.Context, req Request, q string, done *Done) (memories []string, summary string, recent []llm.Message) {
	n := p.RecentTurns
	if n <= 0 {
		n = 6
	}
	recent = req.History
	if len(req.History) > n {
		cut := len(req.History) - n
		older := req.History[:cut]
		recent = req.History[cut:]
		// With message times, only turns newer than the stored summary need summarising.
		fresh, timed := older, len(req.HistoryAt) == len(req.History)
		if timed {
			fresh = nil
			for i, m := range older {
				if req.HistoryAt[i].After(req.SummaryUpto) {
					fresh = append(fresh, m)
				}
			}
		}
		if len(fresh) < summaryBatch {
			// Few turns left the window since the stored summary (or at all): they stay verbatim, so the
			// small model is asked once per few turns, not on every question.
			summary = req.Summary
			recent = append(slices.Clone(fresh), recent...)
		} else {
			t := time.Now()
			var err error
			summary, err = p.Understander.Summarize(ctx, req.Summary, fresh)
			switch {
			case err != nil:
				done.Degraded = append(done.Degraded, "summary")
			case timed && p.Understander != nil && p.Understander.LLM != nil:
				done.NewSummary, done.NewSummaryUpto = summary, req.HistoryAt[cut-1]
			}
			done.StageMS["summary"] = time.Since(t).Milliseconds()
		}
	}
	if p.Memory != nil && req.User != "" {
		t := time.Now()
		ms, err := p.Memory.Recall(ctx, req.Tenant, req.User, q)
		if err != nil {
			done.Degraded = append(done.Degraded, "memory")
		}
		for _, m := range ms {
			memories = append(memories, m.Kind+": "+m.Content)
		}
		done.MemoriesUsed = len(memories)
		done.StageMS["memory"] = time.Since(t).Milliseconds()
	}
	return memories, summary, recent
}

// shippedCalibrations parses the embedded calibration once.
var shippedCalibrations = sync.OnceValue(ShippedCalibrations)

// final fills the done event's lists that clients index, so that they are [] rather than null.
func final(done *Done) *Done {
	if done.Claims == nil {
		done.Claims = []Claim{}
	}
	return done
}

// shortCircuit applies the safety guard and the Tier-0 rules.
func (p *Pipeline) shortCircuit(ctx context.Context, req Request, q string) (string, string, error) {
	if p.Guard.Match(q) {
		return ShortEmergency, p.Guard.Answer, nil
	}
	switch Tier0(q) {
	case ShortMetaConversation:
		return ShortMetaConversation, historyAnswer(q, req.History), nil
	case ShortChitchat:
		return ShortChitchat, chitchatAnswer(q), nil
	case ShortKBMeta:
		if p.Catalog == nil {
			return "", "", nil
		}
		a, err := kbMetaAnswer(ctx, p.Catalog, req)
		return ShortKBMeta, a, err
	}
	return "", "", nil
}

// replay streams a prepared answer (a short circuit's or a cached one) as start, token*, done (the
// sequence DESIGN.md section 7 gives both), flagged with why.
func (p *Pipeline) replay(ctx context.Context, req Request, done *Done, maxTok int, emit Emit) (*Done, error) {
	if done.StageMS == nil {
		done.StageMS = map[string]int64{}
	}
	if done.Degraded == nil {
		done.Degraded = []string{}
	}
	if done.Recommendations == nil {
		done.Recommendations = []Recommendation{}
	}
	if err := emit(EventStart, ReplayStartEvent{Sources: done.Sources, Path: done.Path, ShortCircuit: done.ShortCircuit,
		FromCache: done.FromCache}); err != nil {
		return nil, err
	}
	ts := &tokenStream{ctx: ctx, emit: emit, max: maxTok, done: done}
	if err := ts.sendAll(done.Answer); err != nil {
		return nil, err
	}
	done.Answer = ts.text.String()
	return final(done), nil
}

// tokenStream emits token events under the token cap and keeps what was sent: the one path for model,
// extractive, short-circuit and cached answers.
type tokenStream struct {
	ctx  context.Context
	emit Emit
	max  int
	done *Done
	n    int
	text strings.Builder
}

// send emits one token; errTokenCap (and done.Truncated) once the cap is reached.
func (t *tokenStream) send(tok string) error {
	if t.n == t.max {
		t.done.Truncated = true
		return errTokenCap
	}
	if err := t.ctx.Err(); err != nil {
		return fmt.Errorf("answer: %w", err)
	}
	if err := t.emit(EventToken, TokenEvent{Text: tok}); err != nil {
		return err
	}
	t.n++
	t.text.WriteString(tok)
	return nil
}

// sendAll streams a whole answer, stopping quietly at the cap.
func (t *tokenStream) sendAll(answer string) error {
	for _, tok := range Tokens(answer) {
		if err := t.send(tok); errors.Is(err, errTokenCap) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}
