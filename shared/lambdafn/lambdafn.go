// Package lambdafn calls docmind's rerank and grade functions through the Lambda Invoke API, so that a
// cross-encoder can have the memory it needs without the chat function paying for it. A Reranker here
// is a rank.Reranker and a Grader a retrieve.Grader: a failed invoke (throttled, timed out, a function
// error, a reply that does not decode) returns an error, and the retrieval chain degrades exactly as it
// does when its in-process reranker fails (lexical scores, "rerank" in degraded; the in-process grade,
// "grade" in degraded).
package lambdafn

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/otel/propagation"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
	"github.com/docmind/docmind/shared/retrieve"
)

// Invoker invokes a function synchronously: the reply's payload, and the function error type when the
// function failed (X-Amz-Function-Error: "Unhandled"). err is for the call itself (throttled, network).
type Invoker interface {
	Invoke(ctx context.Context, function string, payload []byte) (Reply, error)
}

// Reply is an invocation's result.
type Reply struct {
	Payload       []byte
	FunctionError string
}

// MaxPayload is the largest synchronous request and reply Lambda accepts (6 MB). A larger request is
// refused here (Invalid) rather than sent to fail with RequestTooLargeException.
const MaxPayload = 6 << 20

// InvokeAPI is the one method of the SDK's Lambda client this package calls.
type InvokeAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// SDKInvoker calls the Lambda Invoke API through the AWS SDK's Lambda client (signing, retries of
// throttles and endpoint resolution are the SDK's).
type SDKInvoker struct {
	Client InvokeAPI
	// anonymous is set by NewInvoker for a configuration without credentials: the SDK would send the
	// request unsigned, which Lambda refuses; the call is refused here instead (Invalid).
	anonymous bool
}

var _ Invoker = (*SDKInvoker)(nil)

// NewInvoker builds the SDK's Lambda client from ac (region, credentials, retryer: awsenv.AWSConfig).
// endpoint overrides https://lambda.<region>.amazonaws.com (a VPC endpoint's DNS name, or a test);
// prop, when not nil, writes the caller's trace context (X-Amzn-Trace-Id and traceparent) into every
// Invoke request, so the invoked function's spans join the caller's trace.
func NewInvoker(ac aws.Config, endpoint string, prop propagation.TextMapPropagator) *SDKInvoker {
	c := lambda.NewFromConfig(ac, func(o *lambda.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		if prop != nil {
			o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
				return st.Finalize.Add(traceHeaders{prop}, middleware.Before)
			})
		}
	})
	return &SDKInvoker{Client: c, anonymous: ac.Credentials == nil}
}

// Invoke implements Invoker. function is a function name (with an optional :alias). Errors: Invalid for
// a request over MaxPayload; Unavailable for every failed call (throttled, service error, permission or
// missing function alike: the caller degrades) and for a reply over MaxPayload.
func (s *SDKInvoker) Invoke(ctx context.Context, function string, payload []byte) (Reply, error) {
	const op = "lambdafn.Invoke"
	if s.anonymous {
		return Reply{}, rag.Errorf(op, rag.KindInvalid, "invoke %s: no AWS credentials", function)
	}
	if len(payload) > MaxPayload {
		return Reply{}, rag.Errorf(op, rag.KindInvalid, "invoke %s: request of %d bytes is over Lambda's %d-byte synchronous limit", function, len(payload), MaxPayload)
	}
	out, err := s.Client.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(function), Payload: payload,
		InvocationType: lambdatypes.InvocationTypeRequestResponse})
	if err != nil {
		return Reply{}, rag.E(op, rag.KindUnavailable, fmt.Errorf("invoke %s: %w", function, err))
	}
	if len(out.Payload) > MaxPayload {
		return Reply{}, rag.Errorf(op, rag.KindUnavailable, "invoke %s: reply of %d bytes is over %d", function, len(out.Payload), MaxPayload)
	}
	return Reply{Payload: out.Payload, FunctionError: aws.ToString(out.FunctionError)}, nil
}

// traceHeaders is a Finalize step writing the trace context of the call's ctx into its HTTP request.
type traceHeaders struct{ prop propagation.TextMapPropagator }

func (traceHeaders) ID() string { return "docmind.traceHeaders" }

func (t traceHeaders) HandleFinalize(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
	if req, ok := in.Request.(*smithyhttp.Request); ok {
		t.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	return next.HandleFinalize(ctx, in)
}

// Function invokes one function synchronously with JSON in and out.
type Function struct {
	Client  Invoker
	Name    string        // function name (an alias may follow a colon)
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
	res, err := f.Client.Invoke(ctx, f.Name, payload)
	if err != nil {
		return err
	}
	if res.FunctionError != "" {
		var fe struct {
			Type    string `json:"errorType"`
			Message string `json:"errorMessage"`
		}
		_ = json.Unmarshal(res.Payload, &fe)
		return rag.Errorf(op, kindOf(fe.Type), "%s: %s: %s", res.FunctionError, fe.Type, fe.Message)
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

// Grader is a retrieve.Grader served by the grade function.
type Grader struct{ Function }

var _ retrieve.Grader = (*Grader)(nil)

// Grade implements retrieve.Grader with the function's verdict. Errors: as Call's, and Unavailable for a
// reply without a known tier (a decoded "{}" must not pass for a verdict), so the chain falls back to
// its in-process grade.
func (g *Grader) Grade(ctx context.Context, query string, ev []rank.Evidence, rerankKnown bool) (rank.Grade, error) {
	var out struct { // the reply's evidence (sent back for other callers) is not decoded
		Grade rank.Grade `json:"grade"`
	}
	if err := g.Call(ctx, rankfn.GradeIn{Query: query, Evidence: ev, RerankKnown: rerankKnown}, &out); err != nil {
		return rank.Grade{}, err
	}
	switch out.Grade.Tier {
	case rank.TierHigh, rank.TierAmbiguous, rank.TierLow:
		return out.Grade, nil
	}
	return rank.Grade{}, rag.Errorf("lambdafn.Grade", rag.KindUnavailable, "reply has no known tier (%q)", out.Grade.Tier)
}
