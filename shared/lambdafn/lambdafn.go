// Package lambdafn calls docmind's rerank and grade functions through the Lambda Invoke API, so that a
// cross-encoder can have the memory it needs without the chat function paying for it. A Reranker here
// is a rank.Reranker: a failed invoke (throttled, timed out, a function error) returns an error, and the
// retrieval chain degrades exactly as it does when its in-process reranker fails (lexical scores,
// "rerank" in degraded).
package lambdafn

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

// Invoker is the one Lambda API call used (*lambda.Client).
type Invoker interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Function invokes one function synchronously with JSON in and out.
type Function struct {
	Client  Invoker
	Name    string        // function name or ARN (an alias or version qualifier may be part of it)
	Timeout time.Duration // bounds one call (default 10 s)
}

// Call invokes the function with in and decodes its reply into out. Errors: Unavailable for a failed
// or throttled invoke, the function's own errorType kind for a function error (Invalid, Unavailable,
// ...), Internal for a reply that does not decode.
func (f *Function) Call(ctx context.Context, in, out any) error {
	op := "lambdafn." + f.Name
	payload, err := json.Marshal(in)
	if err != nil {
		return rag.E(op, rag.KindInternal, err)
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := f.Client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(f.Name), Payload: payload,
		InvocationType: types.InvocationTypeRequestResponse})
	if err != nil {
		return rag.E(op, rag.KindUnavailable, err)
	}
	if res.FunctionError != nil {
		var fe struct {
			Type    string `json:"errorType"`
			Message string `json:"errorMessage"`
		}
		_ = json.Unmarshal(res.Payload, &fe)
		return rag.Errorf(op, kindOf(fe.Type), "%s: %s: %s", aws.ToString(res.FunctionError), fe.Type, fe.Message)
	}
	if err := json.Unmarshal(res.Payload, out); err != nil {
		return rag.E(op, rag.KindInternal, fmt.Errorf("decode reply: %w", err))
	}
	return nil
}

// kindOf maps a function's errorType (shared/awsrt reports the error kind) back to a kind; anything
// else, a runtime timeout included, is Unavailable.
func kindOf(errorType string) rag.Kind {
	for _, k := range []rag.Kind{rag.KindInvalid, rag.KindNotFound, rag.KindPermission, rag.KindTerminal} {
		if k.String() == errorType {
			return k
		}
	}
	return rag.KindUnavailable
}

// Reranker is a rank.Reranker served by the rerank function.
type Reranker struct{ Function }

var _ rank.Reranker = (*Reranker)(nil)

// Rerank implements rank.Reranker: one score per document, in input order.
func (r *Reranker) Rerank(ctx context.Context, query string, docs []string) ([]float64, error) {
	var out rankfn.RerankOut
	if err := r.Call(ctx, rankfn.RerankIn{Query: query, Documents: docs}, &out); err != nil {
		return nil, err
	}
	if len(out.Scores) != len(docs) {
		return nil, rag.Errorf("lambdafn.Rerank", rag.KindUnavailable, "%d scores for %d documents", len(out.Scores), len(docs))
	}
	return out.Scores, nil
}

// Grader grades evidence through the grade function.
type Grader struct{ Function }

// Grade returns the function's verdict.
func (g *Grader) Grade(ctx context.Context, in rankfn.GradeIn) (rankfn.GradeOut, error) {
	var out rankfn.GradeOut
	err := g.Call(ctx, in, &out)
	return out, err
}
