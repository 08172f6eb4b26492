// Package askflow is the non-streaming answer as a Step Functions Express workflow
// (infra/statemachines/answer.asl.json): Understand -> Retrieve -> Rerank -> Evidence -> Grade ->
// Generate over one JSON state, Flow, which carries the chat pipeline's own answer.State. Understand,
// Retrieve, Evidence and Generate are the stages here, served by functions/askstep; Rerank and Grade are
// the rerank and grade functions (shared/rankfn), so each Task can be sized and scaled on its own. The
// streamed chat does not run through the workflow: a state machine cannot stream.
//
// The stages run the pipeline's own phases (answer.Pipeline Begin, Gather, Replay, Finish) with their
// events discarded, so a workflow answer and an in-process answer to the same question over the same
// stores are the same answer (TestWorkflowMatchesPipeline in functions/askstep). The one split the
// pipeline does not have is the retrieval chain's: on the standard and selected-document paths,
// Retrieve stops the chain at the fused candidates, the Rerank Task scores them, and Evidence does the
// rest of the chain (order, cut, filter, MMR, parents, compression) before the Grade Task grades it,
// as retrieve.Retriever does in process. The DECOMPOSED and AGENTIC paths retrieve several times per
// question: Retrieve runs them whole in process (Flow.Ranked) and the workflow goes on to Generate.
package askflow

import (
	"context"
	"encoding/json"
	"time"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
	"github.com/docmind/docmind/shared/retrieve"
)

// Flow is the execution's state between Tasks: the pipeline's State, and only what the workflow adds
// (the Rerank and Grade Tasks' requests and results, and which way the Choice states go). The
// execution's input is an answer.Request: the API function sets tenant, user and knowledge bases after
// its checks; the state machine is not reachable by users.
//
// Its largest point is before Rerank (FusedK candidates and their texts); TestStateSize measures it
// for a big question against the 256 KiB Step Functions payload limit.
type Flow struct {
	State answer.State `json:"state"`
	// Prepared is Begin's prepared answer (a short circuit, a cached or an out-of-scope one): the
	// workflow goes straight to Generate, which replays it.
	Prepared *answer.Done `json:"prepared,omitempty"`
	// Ranked says Retrieve already ran the whole chain (the DECOMPOSED and AGENTIC paths): the
	// workflow skips Rerank, Evidence and Grade. Always present, for the Choice state.
	Ranked bool `json:"ranked"`

	// Query is what the chain reranks and grades against (the understanding's rewrite).
	Query string `json:"query"`
	// Candidates are the fused candidates in fused order, the in-process chain's rerank input; their
	// Text is dropped when it equals ChildText (as loaded) and restored by Evidence, to keep the state
	// small. Documents are their child texts, the Rerank Task's documents (always present).
	Candidates []rank.Evidence `json:"candidates,omitempty"`
	Documents  []string        `json:"documents"`
	// Rerank is the Rerank Task's reply (nil when the Task failed: its error is in RerankError).
	Rerank      *rankfn.RerankOut `json:"rerank,omitempty"`
	RerankError *TaskError        `json:"rerank_error,omitempty"`
	// RerankKnown says a rerank model's scores ordered the evidence (the grader's first signal);
	// Reranker says one was deployed, answering or not (the pipeline's RerankKnown, for confidence).
	RerankKnown bool `json:"rerank_known"`
	Reranker    bool `json:"reranker"`
	// Graded is the Grade Task's verdict on State.Result.Evidence (nil when the Task failed: its error
	// is in GradeError, and Generate grades in process, as the chain does when its grader fails).
	Graded     *Graded    `json:"graded,omitempty"`
	GradeError *TaskError `json:"grade_error,omitempty"`
}

// TaskError is a caught Task failure as Step Functions records it.
type TaskError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Graded is the Grade Task's result as the state machine keeps it (its ResultSelector drops the
// evidence, which the state already holds).
type Graded struct {
	Grade rank.Grade `json:"grade"`
}

// Stages holds what Understand, Retrieve, Evidence and Generate use.
type Stages struct {
	// Pipeline is the chat pipeline as the chat function wires it (model, prices, guard, catalog, web,
	// agent), over Chain. Its cache and memory are nil: the workflow answers one question without a
	// conversation.
	Pipeline *answer.Pipeline
	// Chain is the retrieval chain. Its reranker (nil: the fused order) serves only the DECOMPOSED
	// and AGENTIC paths; the standard path's rerank is the Rerank Task's.
	Chain *retrieve.Retriever
}

// discard is the events' sink: the workflow returns only the final answer.
func discard(string, any) error { return nil }

// Understand checks the request and runs the pipeline's Begin: short circuits, understanding, route,
// HyDE. Errors: Invalid for a bad request; the catalog's for a KB_META question.
func (s *Stages) Understand(ctx context.Context, req answer.Request) (Flow, error) {
	st, prepared, err := s.Pipeline.Begin(ctx, req, discard)
	if err != nil {
		return Flow{}, err
	}
	return Flow{State: *st, Prepared: prepared, Query: st.Understanding.Rewrite, Documents: []string{}}, nil
}

// Retrieve runs the pipeline's Gather. On the standard and selected-document paths the chain stops at
// the fused candidates, which it hands to the Rerank Task; on the others it runs whole (Ranked).
// Errors: Unavailable when both legs fail; the agent's.
func (s *Stages) Retrieve(ctx context.Context, f Flow) (Flow, error) {
	st := &f.State
	p := *s.Pipeline
	f.Ranked = st.Done.Path == answer.PathDecomposed || st.Done.Path == answer.PathAgentic
	if !f.Ranked {
		p.Retriever = fusedOnly{s.Chain}
	}
	if err := p.Gather(ctx, st, discard); err != nil {
		return f, err
	}
	if f.Ranked {
		return f, nil
	}
	f.Candidates, st.Result.Reranked = st.Result.Reranked, nil
	f.Documents = make([]string, len(f.Candidates))
	for i, c := range f.Candidates {
		// each text travels once, in Documents (the Rerank Task's input); Evidence puts it back
		f.Documents[i] = c.ChildText
		if c.Text == c.ChildText {
			f.Candidates[i].Text = ""
		}
		f.Candidates[i].ChildText = ""
	}
	return f, nil
}

// fusedOnly is the retrieval chain cut before its rerank: both legs, fusion and the loaded candidates.
type fusedOnly struct{ chain *retrieve.Retriever }

// Retrieve returns the chain's loaded fused candidates as Reranked, in the order and with the scores a
// chain without a reranker gives them (the fused order, scaled by the top score, which the Rerank
// Task's scores replace). The hit lists are dropped: only the discarded retrieval event reads them.
func (f fusedOnly) Retrieve(ctx context.Context, q retrieve.Query) (*retrieve.Result, error) {
	res, ev, err := f.chain.Candidates(ctx, q)
	if err != nil {
		return nil, err
	}
	reranked, _, _ := rank.RerankEvidence(ctx, nil, q.Text, ev)
	return &retrieve.Result{Profile: res.Profile, Reranked: reranked, Degraded: res.Degraded, LegErrors: res.LegErrors, StageMS: res.StageMS}, nil
}

// Evidence does what the in-process chain does after its reranker: order the candidates by the
// Rerank Task's scores (lexical scores, degraded, when the Task failed, as a failed reranker in
// process; the fused order when the rerank function has no model, as with no reranker in process),
// cut to RerankK, filter, diversify, expand parents and compress, into State.Result. Errors: the chunk
// store's (parents).
func (s *Stages) Evidence(ctx context.Context, f Flow) (Flow, error) {
	start := time.Now()
	st, o := &f.State, s.Chain.Options
	if len(f.Documents) != len(f.Candidates) {
		return f, rag.Errorf("askflow.Evidence", rag.KindInvalid, "%d documents for %d candidates", len(f.Documents), len(f.Candidates))
	}
	for i := range f.Candidates {
		f.Candidates[i].ChildText = f.Documents[i]
		if f.Candidates[i].Text == "" {
			f.Candidates[i].Text = f.Documents[i]
		}
	}
	ev, degraded := f.rerank(ctx)
	ev = retrieve.Cut(ev, o.RerankK)
	// the chain's own tail, into a result of its own: Filtered, Diverse and Expanded stay out of the
	// state (nothing after this stage reads them), and so do its stage times (this stage has one)
	tail := &retrieve.Result{StageMS: map[string]int64{}}
	if err := s.Chain.Narrow(ctx, st.Request.Tenant, tail, ev, f.RerankKnown); err != nil { // a failed model's stand-in scores are not filtered on its thresholds
		return f, rag.E("askflow.Evidence", rag.KindOf(err), err)
	}
	res := st.Result
	res.Reranked, res.Evidence = ev, tail.Evidence
	if degraded {
		res.Degraded = append(res.Degraded, "rerank")
		st.Done.Degraded = append(st.Done.Degraded, "rerank")
	}
	st.Done.StageMS["retrieval.compress"] = time.Since(start).Milliseconds()
	f.Candidates, f.Documents, f.Rerank = nil, []string{}, nil
	return f, nil
}

// rerank orders the candidates as rank.RerankEvidence orders the in-process reranker's scores, and
// records which reranker that was.
func (f *Flow) rerank(ctx context.Context) ([]rank.Evidence, bool) {
	var r rank.Reranker
	switch {
	case f.Rerank == nil: // the Task failed: a model that did not answer (the lexical one cannot fail)
		r = failed{}
	case f.Rerank.Model != "lexical":
		r = scored(f.Rerank.Scores)
	}
	ev, degraded, _ := rank.RerankEvidence(ctx, r, f.Query, f.Candidates)
	f.Reranker = r != nil
	f.RerankKnown = f.Reranker && !degraded
	return ev, degraded
}

// scored is a reranker that already answered: the Rerank Task's scores, in document order.
type scored []float64

func (s scored) Rerank(_ context.Context, _ string, docs []string) ([]float64, error) {
	if len(s) != len(docs) {
		return nil, rag.Errorf("askflow.Evidence", rag.KindUnavailable, "the rerank function returned %d scores for %d documents", len(s), len(docs))
	}
	return s, nil
}

// failed is a reranker whose call failed (the Rerank Task's Catch).
type failed struct{}

func (failed) Rerank(context.Context, string, []string) ([]float64, error) {
	return nil, rag.Errorf("askflow.Evidence", rag.KindUnavailable, "the rerank function failed")
}

// Generate replays a prepared answer, or runs the pipeline's Finish over the graded evidence (the
// prompt, the answer, its verification), and returns the done object, shaped as the chat stream's.
// A failed model call falls back to the extractive reader ("llm" in degraded), as in the chat.
func (s *Stages) Generate(ctx context.Context, f Flow) (answer.Done, error) {
	p := *s.Pipeline
	st := &f.State
	var done *answer.Done
	var err error
	switch {
	case f.Prepared != nil:
		done, err = p.Replay(ctx, st, f.Prepared, discard)
	case st.Result == nil:
		err = rag.Errorf("askflow.Generate", rag.KindInvalid, "the state has no retrieval result")
	default:
		if !f.Ranked {
			p.RerankKnown = f.Reranker
			s.grade(&f)
		}
		done, err = p.Finish(ctx, st, discard)
	}
	if err != nil {
		return answer.Done{}, err
	}
	return *done, nil
}

// grade puts the Grade Task's verdict in the result; when the Task failed, the in-process grade with
// the same thresholds stands in, "grade" in degraded, as the chain's failed grader does.
func (s *Stages) grade(f *Flow) {
	res, done := f.State.Result, f.State.Done
	if f.Graded != nil {
		res.Grade = f.Graded.Grade
		return
	}
	res.Grade = rank.GradeEvidence(f.Query, res.Evidence, s.Chain.Options.Grade, f.RerankKnown)
	if len(res.Evidence) > 0 { // the chain does not call its grader for nothing, so nothing failed there
		res.Degraded = append(res.Degraded, "grade")
		done.Degraded = append(done.Degraded, "grade")
	}
}

// Envelope is a Task's payload: the stage to run and its input (the ASL's Parameters).
type Envelope struct {
	Stage string          `json:"stage"`
	Input json.RawMessage `json:"input"`
}

// Dispatch runs the named stage. Errors: Invalid for an unknown stage or input that does not decode;
// the stage's.
func (s *Stages) Dispatch(ctx context.Context, env Envelope) (json.RawMessage, error) {
	switch env.Stage {
	case "Understand":
		return call(ctx, env.Input, s.Understand)
	case "Retrieve":
		return call(ctx, env.Input, s.Retrieve)
	case "Evidence":
		return call(ctx, env.Input, s.Evidence)
	case "Generate":
		return call(ctx, env.Input, s.Generate)
	}
	return nil, rag.Errorf("askflow.Dispatch", rag.KindInvalid, "no stage %q", env.Stage)
}

// call decodes a stage's input, runs it and encodes its output.
func call[In, Out any](ctx context.Context, raw json.RawMessage, stage func(context.Context, In) (Out, error)) (json.RawMessage, error) {
	const op = "askflow.Dispatch"
	var in In
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	out, err := stage(ctx, in)
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
var StageNames = []string{"Understand", "Retrieve", "Evidence", "Generate"}
