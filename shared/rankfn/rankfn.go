// Package rankfn is the JSON contract of docmind's rerank and grade functions, and the handlers that
// serve it over shared/rank. The same In/Out types are what the query function sends through the Lambda
// Invoke API (shared/lambdafn) and what the answer state machine's Rerank and Grade Tasks carry.
package rankfn

import (
	"context"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
)

// RerankIn asks for one score per document. With Evidence set instead of Documents (the state
// machine), the evidence is reranked, cut to K and filtered, as the retrieval chain does in process.
type RerankIn struct {
	Query     string          `json:"query"`
	Documents []string        `json:"documents,omitempty"`
	Evidence  []rank.Evidence `json:"evidence,omitempty"`
	K         int             `json:"k,omitempty"` // evidence kept after rerank (default 8)
}

// RerankOut has Scores in the order of Documents (higher is better), or the reranked Evidence.
// Degraded is set when the reranker failed and lexical scores were used (evidence form only: the
// documents form fails instead, so that the caller degrades exactly as its own reranker would).
type RerankOut struct {
	Scores   []float64       `json:"scores,omitempty"`
	Evidence []rank.Evidence `json:"evidence"`
	Degraded bool            `json:"degraded"`
	Model    string          `json:"model"`
	// Known says the scores came from a rerank model that answered (the grader's rerank_known).
	Known bool `json:"known"`
}

// MaxDocuments bounds one request: the chat sends at most FusedK (30) candidates.
const MaxDocuments = 256

// Reranker serves the rerank contract with one reranker; Model names it in the reply.
type Reranker struct {
	Rank  rank.Reranker
	Model string
	// Filter is the QAnything filter applied to reranked evidence; its thresholds are calibrated for
	// cross-encoder scores, so the zero value (lexical scores) only removes duplicates, as the retrieval
	// chain does without a reranker.
	Filter rank.FilterOptions
}

// Rerank implements the contract. Errors: Invalid for an empty query or too many documents; the
// reranker's own error (usually Unavailable) for the documents form.
func (r *Reranker) Rerank(ctx context.Context, in RerankIn) (RerankOut, error) {
	const op = "rankfn.Rerank"
	if in.Query == "" {
		return RerankOut{}, rag.Errorf(op, rag.KindInvalid, "query is empty")
	}
	if len(in.Documents) > MaxDocuments || len(in.Evidence) > MaxDocuments {
		return RerankOut{}, rag.Errorf(op, rag.KindInvalid, "at most %d documents per request", MaxDocuments)
	}
	out := RerankOut{Model: r.Model}
	if in.Evidence == nil {
		if len(in.Documents) == 0 {
			return out, nil
		}
		scores, err := r.Rank.Rerank(ctx, in.Query, in.Documents)
		if err != nil {
			return RerankOut{}, err
		}
		if len(scores) != len(in.Documents) {
			return RerankOut{}, rag.Errorf(op, rag.KindUnavailable, "reranker returned %d scores for %d documents", len(scores), len(in.Documents))
		}
		out.Scores = scores
		return out, nil
	}
	ev, degraded, _ := rank.RerankEvidence(ctx, r.Rank, in.Query, in.Evidence)
	k := in.K
	if k <= 0 {
		k = 8
	}
	if len(ev) > k {
		ev = ev[:k]
	}
	if r.Filter == (rank.FilterOptions{}) {
		out.Evidence = rank.Dedupe(ev)
	} else {
		out.Evidence = rank.Filter(ev, r.Filter)
	}
	out.Degraded = degraded
	out.Known = !degraded && r.Model != "lexical"
	return out, nil
}

// GradeIn is the evidence to judge. RerankKnown says whether the scores came from a rerank model (the
// grader's first signal exists only then).
type GradeIn struct {
	Query       string          `json:"query"`
	Evidence    []rank.Evidence `json:"evidence"`
	RerankKnown bool            `json:"rerank_known"`
	// Diversify applies MMR (lambda MMRLambda, default 0.7) and compression before grading, as the
	// retrieval chain does after rerank (the state machine's Grade Task).
	Diversify bool    `json:"diversify,omitempty"`
	MMRLambda float64 `json:"mmr_lambda,omitempty"`
}

// GradeOut is the verdict and the evidence it judged (after MMR and compression when asked).
type GradeOut struct {
	Grade    rank.Grade      `json:"grade"`
	Evidence []rank.Evidence `json:"evidence"`
}

// Grader serves the grade contract with fixed thresholds.
type Grader struct {
	Options  rank.GradeOptions
	Compress rank.CompressOptions
}

// Grade implements the contract. Errors: Invalid for an empty query or too much evidence.
func (g *Grader) Grade(_ context.Context, in GradeIn) (GradeOut, error) {
	const op = "rankfn.Grade"
	if in.Query == "" {
		return GradeOut{}, rag.Errorf(op, rag.KindInvalid, "query is empty")
	}
	if len(in.Evidence) > MaxDocuments {
		return GradeOut{}, rag.Errorf(op, rag.KindInvalid, "at most %d evidence items per request", MaxDocuments)
	}
	ev := in.Evidence
	if in.Diversify {
		lambda := in.MMRLambda
		if lambda == 0 {
			lambda = 0.7
		}
		ev = rank.Compress(rank.MMR(ev, len(ev), lambda), g.Compress)
	}
	if ev == nil {
		ev = []rank.Evidence{}
	}
	return GradeOut{Grade: rank.GradeEvidence(in.Query, ev, g.Options, in.RerankKnown), Evidence: ev}, nil
}
