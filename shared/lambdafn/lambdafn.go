// Package lambdafn calls docmind's rerank and grade functions through the Lambda Invoke API, so that a
// cross-encoder can have the memory it needs without the chat function paying for it. A Reranker here
// is a rank.Reranker and a Grader a retrieve.Grader: a failed invoke (throttled, timed out, a function
// error, a reply that does not decode) returns an error, and the retrieval chain degrades exactly as it
// does when its in-process reranker fails (lexical scores, "rerank" in degraded; the in-process grade,
// "grade" in degraded).
package lambdafn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

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

// HTTPInvoker calls the Lambda Invoke API (POST /2015-03-31/functions/{name}/invocations) signed with
// SigV4. It replaces the SDK's Lambda client, which would add 2.3 MB to the chat binary for one call.
type HTTPInvoker struct {
	Config aws.Config // region and credentials (awsenv.AWSConfig)
	// Endpoint overrides https://lambda.<region>.amazonaws.com (a VPC endpoint's DNS name, or a test).
	Endpoint string
	HTTP     *http.Client
	Now      func() time.Time
}

// Invoke implements Invoker. function is a function name (with an optional :alias).
func (h *HTTPInvoker) Invoke(ctx context.Context, function string, payload []byte) (Reply, error) {
	const op = "lambdafn.Invoke"
	endpoint := h.Endpoint
	if endpoint == "" {
		endpoint = "https://lambda." + h.Config.Region + ".amazonaws.com"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/2015-03-31/functions/"+url.PathEscape(function)+"/invocations", bytes.NewReader(payload))
	if err != nil {
		return Reply{}, rag.E(op, rag.KindInvalid, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Amz-Invocation-Type", "RequestResponse")
	if h.Config.Credentials == nil {
		return Reply{}, rag.Errorf(op, rag.KindInvalid, "no AWS credentials")
	}
	creds, err := h.Config.Credentials.Retrieve(ctx)
	if err != nil {
		return Reply{}, rag.E(op, rag.KindUnavailable, fmt.Errorf("credentials: %w", err))
	}
	sum := sha256.Sum256(payload)
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "lambda", h.Config.Region, now()); err != nil {
		return Reply{}, rag.E(op, rag.KindInternal, err)
	}
	hc := h.HTTP
	if hc == nil {
		hc = invokeClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Reply{}, rag.E(op, rag.KindUnavailable, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 6<<20+1)) // a synchronous reply is at most 6 MB
	if err != nil {
		return Reply{}, rag.E(op, rag.KindUnavailable, err)
	}
	if resp.StatusCode != http.StatusOK {
		// 429 throttled, 5xx service errors, 4xx (permission, not found) alike: the caller degrades
		return Reply{}, rag.Errorf(op, rag.KindUnavailable, "invoke %s: HTTP %d: %.200s", function, resp.StatusCode, body)
	}
	return Reply{Payload: body, FunctionError: resp.Header.Get("X-Amz-Function-Error")}, nil
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

// invokeClient calls the Lambda Invoke API when no client is given: its own client (never the process-wide
// default), bounded a little above the 15-minute Lambda maximum; callers bound each call by ctx.
var invokeClient = &http.Client{Timeout: 16 * time.Minute}
