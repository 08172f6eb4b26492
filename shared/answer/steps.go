package answer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/answer/inject"
	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/answer/reader"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

// State is one question on its way through the steps of Run. Each step reads what the earlier ones set
// and writes its own part; Done is the answer being built. It marshals to JSON (a step can be handed its
// input from a fixture, or run elsewhere), which is why it holds values rather than closures or
// channels.
type State struct {
	Request Request `json:"request"`
	// Question is the request's question, trimmed; MaxTokens the answer's token cap.
	Question  string `json:"question"`
	MaxTokens int    `json:"max_tokens"`
	// CacheKey, when set, is where the answer is stored in the semantic cache once it is done; Vector is
	// the question's embedding, made by the cache lookup and reused by retrieval.
	CacheKey string    `json:"cache_key,omitempty"`
	Vector   []float32 `json:"vector,omitempty"`
	// Understanding is the merged understanding call's result (or the rules'); Route the path chosen,
	// as the routing event says it; HyDE the hypothetical answer searched with a fuzzy question.
	Understanding Understanding `json:"understanding"`
	// Inferred is the filter read from the question (nil: none), and InferredRestrict the documents
	// passing it within the request's restriction, searched until Inferred.Fallback.
	Inferred         *InferredFilter `json:"inferred,omitempty"`
	InferredRestrict []string        `json:"inferred_restrict,omitempty"`
	// candidates and inferKBs are what inference matched against, for the model's turn (Begin only).
	candidates []rag.MetaFacet
	inferKBs   []string
	Route      RoutingEvent `json:"route"`
	HyDE       string       `json:"hyde,omitempty"`
	// Result is what retrieval found (the agent's gathering, the merged sub-questions', or the standard
	// chain's), with web results appended; Served maps a chunk to the sub-questions it answers.
	Result *retrieve.Result    `json:"result,omitempty"`
	Served map[string][]string `json:"served,omitempty"`
	// Reading says the selected documents are read in order instead of searched (a summary question
	// on SELECTED_DOC, see read.go); Parts maps each passage read to where it lies in its document,
	// and Read is what the reading took (in the retrieval event).
	Reading bool            `json:"reading,omitempty"`
	Parts   map[string]Part `json:"parts,omitempty"`
	Read    *ReadStats      `json:"read,omitempty"`
	// AgentUsage is the AGENTIC loop's model usage, added to the answer's.
	AgentUsage llm.Usage `json:"agent_usage"`
	// Prompt is the model's prompt (empty without a model).
	Prompt Prompt `json:"prompt"`
	// NewSummary and NewSummaryUpto are a fresh summary of the conversation's older turns, for the
	// edge to store (Done carries them, but not on the wire).
	NewSummary     string    `json:"new_summary,omitempty"`
	NewSummaryUpto time.Time `json:"new_summary_upto,omitzero"`
	Done           *Done     `json:"done"`
}

// filter is the request's retrieval scope: the documents it may read, and the metadata filter they
// were resolved from, for the vector leg (rag.Filter.Meta).
func (st *State) filter() rag.Filter {
	req := st.scoped()
	return rag.Filter{Tenant: req.Tenant, KBIDs: req.KBIDs, DocumentIDs: scopeDocs(req), Meta: scopeMeta(req)}
}

// scoped is the request with an inferred filter applied as a user's filter is: its documents are the
// restriction (already within the user's) and its filter is and-ed with the user's, until the
// filtered retrieval falls back.
func (st *State) scoped() Request {
	req := st.Request
	if st.Inferred != nil && !st.Inferred.Fallback {
		req.Restrict = st.InferredRestrict
		req.Filter = andFilters(req.Filter, st.Inferred.parsed())
	}
	return req
}

func (st *State) selected() bool   { return len(st.Request.DocumentIDs) > 0 }
func (st *State) decomposed() bool { return st.Done.Path == PathDecomposed }
func (st *State) agentic() bool    { return st.Done.Path == PathAgentic }

// degrade records a component that failed and was done without.
func (st *State) degrade(components ...string) {
	st.Done.Degraded = append(st.Done.Degraded, components...)
}

// timed records a step's duration in stage_ms.
func (st *State) timed(name string, start time.Time) {
	st.Done.StageMS[name] = time.Since(start).Milliseconds()
}

// newState starts a checked request's state.
func (p *Pipeline) newState(req Request) *State {
	maxTok := p.MaxTokens
	if maxTok <= 0 {
		maxTok = 1024
	}
	return &State{Request: req, Question: strings.TrimSpace(req.Question), MaxTokens: maxTok,
		Done: &Done{Path: PathStandard, StageMS: map[string]int64{}}}
}

// lookup is the cache step: a hit is returned to be replayed. A question with earlier turns may lean on
// them ("and for part-time staff?"): it is neither looked up nor stored, since the cache knows only the
// question and the documents. A miss leaves the key to store the answer under, and the embedding.
func (p *Pipeline) lookup(ctx context.Context, st *State) *Done {
	if p.Cache == nil || len(st.Request.History) > 0 {
		return nil
	}
	t := time.Now()
	gen := "extractive|" + promptVersion
	if p.LLM != nil {
		gen = "llm:" + p.Model + "|" + promptVersion
	}
	if st.Inferred != nil { // an answer under an inferred filter serves only the same inference
		gen += "|inferred:" + string(st.Inferred.Filter)
	}
	hit, vec, key, err := p.Cache.Lookup(ctx, st.scoped(), st.Question, gen)
	switch {
	case err != nil:
		st.degrade("cache")
	case hit != nil:
		replayed := *hit
		replayed.FromCache, replayed.StageMS = true, map[string]int64{"cache": time.Since(t).Milliseconds()}
		return &replayed
	default:
		st.CacheKey, st.Vector = key, vec
	}
	st.timed("cache", t)
	return nil
}

// understand is the understanding step; an out-of-scope question gets its prepared answer, returned to
// be replayed.
func (p *Pipeline) understand(ctx context.Context, st *State) *Done {
	t := time.Now()
	st.Understanding = p.Understander.UnderstandWith(ctx, st.Question, st.Request.History, st.candidates)
	st.timed("understanding", t)
	if st.Understanding.Scope != ScopeOutOfScope {
		return nil
	}
	return &Done{Path: ScopeOutOfScope, ShortCircuit: ScopeOutOfScope, Answer: outOfScopeAnswer(st.Question),
		Sources: []Source{}, Answerer: "rules", StageMS: st.Done.StageMS}
}

// route is the routing step: selected documents, then sub-questions, then a complex question for the
// agent, else the standard path.
func (p *Pipeline) route(st *State) {
	u, done := st.Understanding, st.Done
	route := RoutingEvent{Path: PathStandard, Reason: "RULES_DEFAULT", Detail: "one question, no selected document"}
	switch {
	case p.reads(st):
		route = RoutingEvent{Path: PathSelectedDoc, Reason: "SELECTED_DOC_READ", Documents: st.Request.DocumentIDs,
			Detail: "a summary of the selected documents: their passages are read in order, sampled evenly over beginning, middle and end within the token budget"}
		st.Reading = true
	case st.selected():
		route = RoutingEvent{Path: PathSelectedDoc, Reason: "SELECTED_DOC", Documents: st.Request.DocumentIDs,
			Detail: "retrieval is limited to the documents the user selected"}
	case u.Decompose && len(u.SubQueries) >= 2:
		route = RoutingEvent{Path: PathDecomposed, Reason: "DECOMPOSED", SubQueries: u.SubQueries,
			Detail: "each sub-question is retrieved on its own and the evidence merged"}
	case u.Complexity == "complex" && p.Agent != nil && p.Agent.LLM != nil:
		route = RoutingEvent{Path: PathAgentic, Reason: "COMPLEX",
			Detail: "a complex question: the model searches with read-only tools until nothing new is found"}
	case u.Decompose:
		route.Reason, route.Detail = "DECOMPOSITION_WITHOUT_SUBQUERIES", "the question asks about several things but no sub-questions were produced (the rules cannot split a question), so it is answered on the standard path"
	}
	done.Path, st.Route = route.Path, route
}

// hyde searches a fuzzy question on the standard path with a hypothetical answer as well; the routing
// event says whether one was made.
func (p *Pipeline) hyde(ctx context.Context, st *State) {
	if st.decomposed() || st.agentic() || st.Reading || st.Understanding.Specificity != "fuzzy" || p.Understander == nil || p.Understander.LLM == nil {
		return
	}
	t := time.Now()
	h, err := p.Understander.HyDE(ctx, st.Understanding.Rewrite)
	if err != nil {
		st.degrade("hyde")
	}
	st.HyDE = h
	made := h != ""
	st.Route.HyDE = &made
	st.timed("hyde", t)
}

// retrieve is the retrieval step (retrieval, rerank and grading run in the retrieval chain): the agent's
// loop on the AGENTIC path, each sub-question on the DECOMPOSED one, the standard chain otherwise, and
// also under an agent that found nothing (or never searched), so that the answer is not written from
// nothing because the model did not look.
func (p *Pipeline) retrieve(ctx context.Context, st *State, emit Emit) error {
	const op = "answer.Run"
	t := time.Now()
	if st.agentic() {
		if err := p.gather(ctx, st, emit); err != nil {
			return err
		}
	}
	var err error
	switch {
	case st.Reading:
		st.Result, err = p.read(ctx, st)
	case st.decomposed():
		st.Result, st.Served, err = retrieveDecomposed(ctx, p.Retriever, st.Understanding.SubQueries, st.filter(), decomposedK)
	case !st.agentic() || len(st.Result.Evidence) == 0:
		rq := retrieve.Query{Text: st.Understanding.Rewrite, HyDE: st.HyDE, Filter: st.filter()}
		if st.Understanding.Rewrite == st.Question {
			rq.Vector = st.Vector // the cache already embedded the question
		}
		st.Result, err = p.Retriever.Retrieve(ctx, rq)
	}
	if err != nil {
		return err
	}
	if st.Result == nil {
		return rag.Errorf(op, rag.KindInternal, "the retriever returned no result")
	}
	if again, err := p.fallBack(ctx, st, emit); err != nil || again {
		if err != nil {
			return err
		}
		return p.retrieve(ctx, st, emit)
	}
	st.timed("retrieval", t)
	for k, v := range st.Result.StageMS {
		st.Done.StageMS["retrieval."+k] = v
	}
	st.degrade(st.Result.Degraded...)
	return nil
}

// gather runs the AGENTIC loop; a model failure keeps what was found, flagged "agent".
func (p *Pipeline) gather(ctx context.Context, st *State, emit Emit) error {
	ar, err := p.Agent.run(ctx, p, st.Understanding.Rewrite, st.filter(), emit)
	if err != nil {
		return err
	}
	st.Result, st.AgentUsage, st.Done.AgentRounds, st.Done.AgentStop = ar.res, ar.usage, ar.rounds, ar.stop
	if ar.stop == "MODEL_FAILED" {
		st.degrade("agent")
	}
	return nil
}

// compensate adds web results when the grader asks for them (not for selected documents, and not on
// the AGENTIC path, where the agent had web_search itself). Knowledge-base evidence keeps the first
// numbers.
func (p *Pipeline) compensate(ctx context.Context, st *State) {
	if p.Web == nil || !st.Result.Grade.WebCompensation || st.selected() || st.agentic() {
		return
	}
	t := time.Now()
	web, err := p.Web.Search(ctx, st.Understanding.Rewrite)
	st.timed("web", t)
	if err != nil {
		st.degrade("web")
	} else if len(web) > 0 {
		st.Result.Evidence = append(slices.Clone(st.Result.Evidence), web...)
		st.Done.WebSources = len(web)
	}
}

// promptQuestion is the question as the model reads it: a decomposed one lists its sub-questions.
func (st *State) promptQuestion() string {
	if st.decomposed() {
		return decomposedQuestion(st.Question, st.Understanding.SubQueries)
	}
	return st.Question
}

// composePrompt builds the model's prompt (nothing without a model) and keeps as sources only the
// passages that fit: sources are what the model saw.
func (p *Pipeline) composePrompt(ctx context.Context, st *State) error {
	const op = "answer.Run"
	if p.LLM == nil {
		return nil
	}
	res := st.Result
	memories, summary, recent := p.context(ctx, st)
	mode := ModeStandard
	switch {
	case len(res.Evidence) == 0:
		mode = ModeFallback
	case res.Grade.Tier != rank.TierHigh:
		mode = ModeLow
	}
	prompt, err := BuildPrompt(PromptInput{Question: st.promptQuestion(), Evidence: res.Evidence, Mode: mode,
		Ceiling: p.ContextTokens, Memory: memories, Summary: summary, History: recent, Served: st.Served, Parts: st.partsByChunk()})
	if err != nil {
		return rag.E(op, rag.KindInternal, err)
	}
	st.Prompt = prompt
	res.Evidence = res.Evidence[:prompt.Used]
	return nil
}

// sources numbers the evidence as the answer cites it.
func (st *State) sources() {
	st.Done.Sources = Sources(st.Result.Evidence)
	for i := range st.Done.Sources {
		st.Done.Sources[i].Served = st.Served[st.Done.Sources[i].ChunkID]
		if part, ok := st.Parts[st.Done.Sources[i].ChunkID]; ok {
			st.Done.Sources[i].Part = &part
		}
	}
}

// announce sends what retrieval found (retrieval, grader, rerank) and opens the answer (start).
func (p *Pipeline) announce(st *State, emit Emit) error {
	res, done := st.Result, st.Done
	top := make([]RerankTop, 0, len(done.Sources))
	for _, s := range done.Sources {
		top = append(top, RerankTop{N: s.N, FileName: s.FileName, Chapter: s.Chapter, Score: s.Score})
	}
	for _, ev := range []struct {
		name string
		v    any
	}{
		{EventRetrieval, RetrievalEvent{Keyword: len(res.Keyword), Vector: len(res.Vector), Fused: len(res.Fused),
			Evidence: len(res.Evidence), StageMS: res.StageMS, Degraded: res.Degraded, Profile: res.Profile, Read: st.Read}},
		{EventGrader, res.Grade},
		{EventRerank, RerankEvent{RerankerScored: p.RerankKnown, Top: top}},
		{EventStart, StartEvent{Sources: done.Sources, Path: done.Path}},
	} {
		if err := emit(ev.name, ev.v); err != nil {
			return err
		}
	}
	return nil
}

// generate streams the answer: the model's when there is one and it starts, the extractive reader's
// otherwise ("llm" in degraded, and the failure's kind as the fallback reason).
func (p *Pipeline) generate(ctx context.Context, st *State, emit Emit) error {
	t := time.Now()
	done := st.Done
	done.IsFallback = len(st.Result.Evidence) == 0
	ts := &tokenStream{ctx: ctx, emit: emit, max: st.MaxTokens, done: done}
	generated := false
	if p.LLM != nil {
		var err error
		if generated, err = p.stream(ctx, st, ts, emit); err != nil {
			return err
		}
	} else {
		done.Degraded = append([]string{"llm"}, done.Degraded...)
	}
	done.InjectionFlags = inject.Passages(st.Result.Evidence)
	if st.Reading && !generated {
		defer st.timed("generation", t)
		return p.summarise(st, ts)
	}
	if generated {
		done.Answerer = "llm"
		// the tokens are out; done's answer, the one stored, cached and rendered last, is the clean one
		done.Answer, done.Sanitised = inject.Sanitise(ts.text.String(), st.Result.Evidence, done.InjectionFlags)
		if !st.Reading && !done.Partial && len(st.Result.Evidence) > 0 &&
			reader.Declines(st.Question, done.Answer, st.Result.Evidence, st.Result.Grade, p.abstains()) {
			// the model says the documents do not answer (or cites nothing where the offline rule finds
			// no answer): an abstention as the offline one, citing nothing, whatever passage it named
			done.Abstained, done.Answer = true, reader.Uncited(done.Answer)
		}
	} else {
		done.Answerer = "extractive"
		// the reader quotes no instruction and cleans its own answer (reader.Extractive.Read); when the
		// documents do not answer the question it says so and cites nothing
		text, abstained := p.abstains()(st.Question, st.Result.Evidence, st.Result.Grade)
		if !abstained {
			text = p.Answerer.Compose(st.Question, st.Result.Evidence)
		}
		done.Abstained = abstained
		if err := ts.sendAll(text); err != nil {
			return err
		}
		done.Answer = ts.text.String()
	}
	if st.Reading {
		if err := p.citeParts(st, ts); err != nil {
			return err
		}
	}
	st.timed("generation", t)
	return nil
}

// stream runs the model and reports whether it wrote the answer. A model that fails before its first
// token leaves the answer to the extractive reader; one that fails in the middle keeps what arrived.
func (p *Pipeline) stream(ctx context.Context, st *State, ts *tokenStream, emit Emit) (bool, error) {
	done := st.Done
	usage, err := p.LLM.Stream(ctx, llm.Request{Model: p.Model, Messages: st.Prompt.Messages, Temperature: 0.3, MaxTokens: st.MaxTokens}, ts.send)
	if usage.PromptTokens == 0 && usage.CompletionTokens == 0 { // the provider did not report: estimate
		usage = llm.Usage{PromptTokens: st.Prompt.Tokens, CompletionTokens: ts.n, Estimated: true}
	}
	usage.PromptTokens += st.AgentUsage.PromptTokens // the agent's rounds run on the main model too
	usage.CompletionTokens += st.AgentUsage.CompletionTokens
	done.Usage = usage
	done.CostUSD = (float64(usage.PromptTokens)*p.PriceIn + float64(usage.CompletionTokens)*p.PriceOut) / 1e6
	switch {
	case err == nil, errors.Is(err, errTokenCap):
		return true, nil
	case ctx.Err() != nil:
		return false, err
	case ts.n > 0:
		// Half an answer is not repaired with another one: the client is told the stream broke, then
		// gets done with what it was sent, marked partial (and the answer is not cached).
		done.Partial, st.CacheKey = true, ""
		st.degrade("llm")
		return true, emit(EventError, ErrorEvent{Code: rag.KindOf(err).String(), Partial: true,
			Message: "the model stopped in the middle of the answer; what was received is kept"})
	default:
		st.degrade("llm")
		done.FallbackReason = rag.KindOf(err).String()
		return false, nil
	}
}

// verify marks the cited sources, scores the answer (its claims checked against the passages they
// cite, the confidence calibrated per answerer), recommends related documents, and warns below HIGH.
func (p *Pipeline) verify(st *State, emit Emit) error {
	done, res := st.Done, st.Result
	used, _ := Citations(done.Answer, len(done.Sources))
	for _, n := range used {
		done.Sources[n-1].Cited = true
	}
	cal := p.Calibration
	if cal == nil {
		cal = shippedCalibrations()
	}
	done.Confidence, done.Claims = Assess(st.Question, done.Answer, done.Answerer, res.Evidence, res.Grade, p.RerankKnown, cal)
	if st.Reading {
		done.Confidence = readingConfidence(done.Confidence, done.Claims)
	}
	done.Recommendations = Recommend(done.Sources, res.Reranked, 3)
	if done.Confidence.Band == BandHigh {
		return nil
	}
	return emit(EventConfidenceWarning, ConfidenceWarningEvent{Score: done.Confidence.Score,
		Band: done.Confidence.Band, Message: warning(done.Confidence), Reason: done.Confidence.Reason})
}

// warning is the confidence warning's text for a score below HIGH.
func warning(c Confidence) string {
	if strings.HasPrefix(c.Reason, readingReason) {
		return readingWarning
	}
	if c.Calibrated {
		// the score is an estimate of being right: say it as one
		return fmt.Sprintf("About %.0f%% of answers like this one are right: check the cited sources before relying on it.", 100*c.Score)
	}
	if c.Band == BandLow {
		return "Low confidence: the documents may not answer this question. Check the sources before relying on it."
	}
	return "The answer is only partly supported by the documents: check the cited sources."
}

// remember writes the understanding's memory hints to the asker's long-term memory.
func (p *Pipeline) remember(ctx context.Context, st *State) {
	if p.Memory == nil || st.Request.User == "" || len(st.Understanding.MemoryHints) == 0 {
		return
	}
	n, err := p.Memory.Remember(ctx, st.Request.Tenant, st.Request.User, st.Understanding.MemoryHints)
	st.Done.MemoriesWritten = n
	if err != nil {
		st.degrade("memory")
	}
}

// cache stores the answer under the key the lookup left (none for a partial answer or a question with
// history).
func (p *Pipeline) cache(ctx context.Context, st *State) {
	if st.CacheKey == "" {
		return
	}
	if err := p.Cache.Record(ctx, st.CacheKey, st.Question, st.Vector, st.Done, TurnOf(st.Request)); err != nil {
		st.degrade("cache")
	}
}

// summaryBatch is how many messages must have left the verbatim window since the last summary before
// they are summarised (three turns).
const summaryBatch = 6

// context gathers what a model's prompt holds besides the passages: the user's recalled memories, a
// summary of turns older than the newest RecentTurns, and the turns kept verbatim. A failure of the
// summary or the memory is flagged in degraded and costs only that part.
func (p *Pipeline) context(ctx context.Context, st *State) (memories []string, summary string, recent []llm.Message) {
	summary, recent = p.history(ctx, st)
	req := st.Request
	if p.Memory != nil && req.User != "" {
		t := time.Now()
		ms, err := p.Memory.Recall(ctx, req.Tenant, req.User, st.Understanding.Rewrite)
		if err != nil {
			st.degrade("memory")
		}
		for _, m := range ms {
			memories = append(memories, m.Kind+": "+m.Content)
		}
		st.Done.MemoriesUsed = len(memories)
		st.timed("memory", t)
	}
	return memories, summary, recent
}

// history splits the conversation into a summary of the older turns (made in batches of summaryBatch
// messages) and the newest RecentTurns kept verbatim.
func (p *Pipeline) history(ctx context.Context, st *State) (summary string, recent []llm.Message) {
	req := st.Request
	n := p.RecentTurns
	if n <= 0 {
		n = 6
	}
	if len(req.History) <= n {
		return "", req.History
	}
	cut := len(req.History) - n
	older, recent := req.History[:cut], req.History[cut:]
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
		return req.Summary, append(slices.Clone(fresh), recent...)
	}
	t := time.Now()
	summary, err := p.Understander.Summarize(ctx, req.Summary, fresh)
	switch {
	case err != nil:
		st.degrade("summary")
	case timed && p.Understander != nil && p.Understander.LLM != nil:
		st.NewSummary, st.NewSummaryUpto = summary, req.HistoryAt[cut-1]
	}
	st.timed("summary", t)
	return summary, recent
}

// shippedCalibrations parses the embedded calibration once.
var shippedCalibrations = sync.OnceValue(ShippedCalibrations)

// final fills the done event's lists that clients index, so that they are [] rather than null, and
// hands the new conversation summary to the edge.
func final(st *State, done *Done) *Done {
	if done.Claims == nil {
		done.Claims = []Claim{}
	}
	if done.InjectionFlags == nil {
		done.InjectionFlags = []inject.Flag{}
	}
	if done == st.Done {
		done.NewSummary, done.NewSummaryUpto = st.NewSummary, st.NewSummaryUpto
	}
	return done
}

// shortCircuit applies the safety guard and the Tier-0 rules: a prepared answer, or nil.
func (p *Pipeline) shortCircuit(ctx context.Context, st *State) (*Done, error) {
	q, req := st.Question, st.Request
	reason, answer := "", ""
	var err error
	switch tier0 := Tier0(q); {
	case p.Guard.Match(q):
		reason, answer = ShortEmergency, p.Guard.Answer
	case tier0 == ShortMetaConversation:
		reason, answer = ShortMetaConversation, historyAnswer(q, req.History)
	case tier0 == ShortChitchat:
		reason, answer = ShortChitchat, chitchatAnswer(q)
	case tier0 == ShortKBMeta && p.Catalog != nil:
		reason = ShortKBMeta
		answer, err = kbMetaAnswer(ctx, p.Catalog, req)
	}
	if err != nil || reason == "" {
		return nil, err
	}
	return &Done{Path: reason, ShortCircuit: reason, Answer: answer, Sources: []Source{}, Answerer: "rules"}, nil
}

// Replay streams a prepared answer (Begin's: a short circuit's, a cached or an out-of-scope one) as
// start and token* (the sequence DESIGN.md section 7 gives both, before the edge's done), flagged with
// why, and returns it as the final answer, cut at the token cap. Errors: emit's, the context's.
func (p *Pipeline) Replay(ctx context.Context, st *State, done *Done, emit Emit) (*Done, error) {
	if done.StageMS == nil {
		done.StageMS = map[string]int64{}
	}
	if done.Degraded == nil {
		done.Degraded = []string{}
	}
	if done.Recommendations == nil {
		done.Recommendations = []Recommendation{}
	}
	if done.FromCache && done.Cached != nil {
		// the replay's timeline: one step, from the cache, naming the turn it comes from
		if err := emit(EventCached, done.Cached); err != nil {
			return nil, err
		}
	}
	if err := emit(EventStart, ReplayStartEvent{Sources: done.Sources, Path: done.Path, ShortCircuit: done.ShortCircuit,
		FromCache: done.FromCache}); err != nil {
		return nil, err
	}
	ts := &tokenStream{ctx: ctx, emit: emit, max: st.MaxTokens, done: done}
	if err := ts.sendAll(done.Answer); err != nil {
		return nil, err
	}
	done.Answer = ts.text.String()
	if done.FromCache && done.Confidence.Band != "" && done.Confidence.Band != BandHigh {
		// the cached answer is as uncertain as when it was first given: its warning is replayed with it
		// ("from cache" alone read as a confirmation)
		if err := emit(EventConfidenceWarning, ConfidenceWarningEvent{Score: done.Confidence.Score,
			Band: done.Confidence.Band, Message: warning(done.Confidence), Reason: done.Confidence.Reason}); err != nil {
			return nil, err
		}
	}
	return final(st, done), nil
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
	for _, tok := range lang.Tokens(answer) {
		if err := t.send(tok); errors.Is(err, errTokenCap) {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// abstains is the rule deciding that the passages do not answer a question: the pipeline's
// (evaluation sets one) or reader.Abstains.
func (p *Pipeline) abstains() func(string, []rank.Evidence, rank.Grade) (string, bool) {
	if p.Abstains != nil {
		return p.Abstains
	}
	return reader.Abstains
}
