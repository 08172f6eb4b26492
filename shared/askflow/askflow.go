// Package askflow is the non-streaming answer as a Step Functions Express workflow
// (infra/statemachines/answer.asl.json): Understand -> Retrieve -> Rerank -> Grade -> Generate over one
// JSON state. Understand, Retrieve and Generate are the stages here, served by functions/askstep; Rerank
// and Grade are the rerank and grade functions (shared/rankfn), so each Task can be sized and scaled on
// its own. The streamed chat does not run through the workflow: a state machine cannot stream, and the
// chat pipeline (shared/answer) does the same steps in process with its events.
//
// The workflow answers from the same exported pieces the pipeline uses (answer.Understander,
// retrieve.Retriever, answer.BuildPrompt, answer.Assess, the extractive reader), without the
// conversation, memory, cache, web and agent paths, which need a stream or a conversation.
package askflow

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
	"github.com/docmind/docmind/shared/retrieve"
)

// State is the execution's state: the authorised question (the API function sets tenant, user and
// knowledge bases after its checks; the state machine is not reachable by users) and what each stage
// adds. It stays small: evidence is at most FusedK passages.
type State struct {
	Tenant      string   `json:"tenant"`
	User        string   `json:"user,omitempty"`
	KBIDs       []string `json:"kb_ids,omitempty"`
	DocumentIDs []string `json:"document_ids,omitempty"`
	Question    string   `json:"question"`

	// Understand
	Query string `json:"query,omitempty"` // the standalone search query
	Scope string `json:"scope,omitempty"`
	// Retrieve
	Candidates []rank.Evidence `json:"candidates,omitempty"`
	Degraded   []string        `json:"degraded,omitempty"`
	RerankK    int             `json:"rerank_k,omitempty"`
	// Rerank and Grade (their Tasks' ResultPath)
	Rerank *rankfn.RerankOut `json:"rerank,omitempty"`
	Graded *rankfn.GradeOut  `json:"graded,omitempty"`

	StageMS map[string]int64 `json:"stage_ms,omitempty"`
}

// Stages holds what Understand, Retrieve and Generate use.
type Stages struct {
	Understander *answer.Understander // nil: the rules only
	// Retriever has no Reranker: Retrieve returns every fused candidate for the Rerank Task.
	Retriever *retrieve.Retriever
	// LLM writes the answer; nil uses the extractive reader.
	LLM               llm.Streamer
	Model             string
	MaxTokens         int
	PriceIn, PriceOut float64
	RerankK           int // kept after rerank (default 8)
	Now               func() time.Time
}

func (s *Stages) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (st *State) took(stage string, since time.Time, now time.Time) {
	if st.StageMS == nil {
		st.StageMS = map[string]int64{}
	}
	st.StageMS[stage] += now.Sub(since).Milliseconds()
}

// Understand checks the question and rewrites it as a standalone query. Errors: Invalid.
func (s *Stages) Understand(ctx context.Context, st State) (State, error) {
	start := s.now()
	if err := (&answer.Pipeline{}).Check(answer.Request{Tenant: st.Tenant, KBIDs: st.KBIDs, DocumentIDs: st.DocumentIDs, Question: st.Question}); err != nil {
		return st, err
	}
	u := s.Understander.Understand(ctx, strings.TrimSpace(st.Question), nil)
	st.Query, st.Scope = u.Rewrite, u.Scope
	if st.Query == "" {
		st.Query = strings.TrimSpace(st.Question)
	}
	st.took("understanding", start, s.now())
	return st, nil
}

// Retrieve runs both legs, fusion, deduplication and parent expansion, and keeps every candidate for
// the Rerank Task. Errors: Unavailable when both legs fail.
func (s *Stages) Retrieve(ctx context.Context, st State) (State, error) {
	start := s.now()
	r := *s.Retriever
	r.Reranker = nil
	r.Options.RerankK = r.Options.FusedK // nothing is cut before the real rerank
	q := st.Query
	if q == "" {
		q = st.Question
	}
	res, err := r.Retrieve(ctx, retrieve.Query{Text: q, Filter: rag.Filter{Tenant: st.Tenant, KBIDs: st.KBIDs, DocumentIDs: st.DocumentIDs}})
	if err != nil {
		return st, err
	}
	st.Candidates, st.Degraded = res.Expanded, res.Degraded
	if st.Candidates == nil {
		st.Candidates = []rank.Evidence{}
	}
	st.RerankK = s.RerankK
	if st.RerankK <= 0 {
		st.RerankK = 8
	}
	st.took("retrieval", start, s.now())
	return st, nil
}

// Generate writes the answer from the graded evidence and returns the done object, shaped as the chat
// stream's. A failed model call falls back to the extractive reader (is_fallback, "llm" in degraded),
// as the chat does.
func (s *Stages) Generate(ctx context.Context, st State) (answer.Done, error) {
	start := s.now()
	var ev []rank.Evidence
	var g rank.Grade
	if st.Graded != nil {
		ev, g = st.Graded.Evidence, st.Graded.Grade
	}
	rerankKnown := st.Rerank != nil && !st.Rerank.Degraded && st.Rerank.Model != "lexical"
	done := answer.Done{Path: answer.PathStandard, Degraded: append([]string{}, st.Degraded...), Claims: []answer.Claim{}, Recommendations: []answer.Recommendation{}}
	if len(st.DocumentIDs) > 0 {
		done.Path = answer.PathSelectedDoc
	}
	if st.Rerank != nil && st.Rerank.Degraded {
		done.Degraded = append(done.Degraded, "rerank")
	}
	q := st.Query
	if q == "" {
		q = st.Question
	}
	if s.LLM != nil {
		var err error
		if ev, err = s.write(ctx, st.Question, ev, g, &done); err != nil {
			return done, err
		}
	} else {
		done.Answerer, done.Answer = "extractive", answer.Extractive{}.Compose(q, ev)
	}
	done.Sources = answer.Sources(ev)
	used, _ := answer.Citations(done.Answer, len(done.Sources))
	for _, n := range used {
		done.Sources[n-1].Cited = true
	}
	done.Confidence, done.Claims = answer.Assess(q, done.Answer, done.Answerer, ev, g, rerankKnown, answer.ShippedCalibrations())
	if done.Claims == nil {
		done.Claims = []answer.Claim{}
	}
	if rec := answer.Recommend(done.Sources, ev, 3); rec != nil {
		done.Recommendations = rec
	}
	done.StageMS = st.StageMS
	if done.StageMS == nil {
		done.StageMS = map[string]int64{}
	}
	done.StageMS["generation"] = s.now().Sub(start).Milliseconds()
	return done, nil
}

// write asks the model under the prompt's token ceiling and returns the evidence the model saw.
func (s *Stages) write(ctx context.Context, question string, ev []rank.Evidence, g rank.Grade, done *answer.Done) ([]rank.Evidence, error) {
	mode := answer.ModeStandard
	switch {
	case len(ev) == 0:
		mode = answer.ModeFallback
	case g.Tier != rank.TierHigh:
		mode = answer.ModeLow
	}
	prompt, err := answer.BuildPrompt(answer.PromptInput{Question: question, Evidence: ev, Mode: mode})
	if err != nil {
		return ev, rag.E("askflow.Generate", rag.KindInternal, err)
	}
	ev = ev[:prompt.Used]
	done.Flagged = prompt.Flagged
	var b strings.Builder
	u, err := s.LLM.Stream(ctx, llm.Request{Model: s.Model, Messages: prompt.Messages, MaxTokens: s.MaxTokens}, func(d string) error {
		b.WriteString(d)
		return nil
	})
	done.Usage = u
	done.CostUSD = (float64(u.PromptTokens)*s.PriceIn + float64(u.CompletionTokens)*s.PriceOut) / 1e6
	if err != nil || strings.TrimSpace(b.String()) == "" {
		reason := "empty reply"
		if err != nil {
			reason = rag.KindOf(err).String()
		}
		done.Answerer, done.Answer, done.IsFallback, done.FallbackReason = "extractive", answer.Extractive{}.Compose(question, ev), true, "model: "+reason
		done.Degraded = append(done.Degraded, "llm")
		return ev, nil
	}
	done.Answerer, done.Answer = "llm", b.String()
	return ev, nil
}

// Envelope is a Task's payload: the stage to run and its input (the ASL's Parameters).
type Envelope struct {
	Stage string          `json:"stage"`
	Input json.RawMessage `json:"input"`
}

// Dispatch runs the named stage. Errors: Invalid for an unknown stage or input that does not decode.
func (s *Stages) Dispatch(ctx context.Context, env Envelope) (json.RawMessage, error) {
	const op = "askflow.Dispatch"
	var st State
	if err := json.Unmarshal(env.Input, &st); err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	var out any
	var err error
	switch env.Stage {
	case "Understand":
		out, err = s.Understand(ctx, st)
	case "Retrieve":
		out, err = s.Retrieve(ctx, st)
	case "Generate":
		out, err = s.Generate(ctx, st)
	default:
		return nil, rag.Errorf(op, rag.KindInvalid, "no stage %q", env.Stage)
	}
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, rag.E(op, rag.KindInternal, err)
	}
	return b, nil
}

// StageNames are the stages Dispatch serves (the ASL test checks every Task has a handler).
var StageNames = []string{"Understand", "Retrieve", "Generate"}
