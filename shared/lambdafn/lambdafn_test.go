package lambdafn

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.opentelemetry.io/otel/propagation"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/obs"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

// fakeLambda answers Invoke with a canned reply and records the payload.
type fakeLambda struct {
	out  Reply
	err  error
	got  rankfn.RerankIn
	name string
}

func (f *fakeLambda) Invoke(_ context.Context, name string, payload []byte) (Reply, error) {
	f.name = name
	json.Unmarshal(payload, &f.got)
	return f.out, f.err
}

func TestRerank(t *testing.T) {
	f := &fakeLambda{out: Reply{Payload: []byte(`{"scores":[0.1,0.8],"model":"bge"}`)}}
	r := &Reranker{Function{Client: f, Name: "docmind-rerank"}}
	got, err := r.Rerank(context.Background(), "q", []string{"a", "b"})
	if err != nil || len(got) != 2 || got[1] != 0.8 {
		t.Fatalf("got %v %v", got, err)
	}
	if f.name != "docmind-rerank" || f.got.Query != "q" || len(f.got.Documents) != 2 {
		t.Errorf("sent %q %+v", f.name, f.got)
	}
}

// TestFailuresDegrade: every failed invoke is an error, and the retrieval chain's rerank step then
// falls back to lexical scores and reports itself degraded, as with a failed in-process reranker.
func TestFailuresDegrade(t *testing.T) {
	for _, c := range []struct {
		name string
		f    *fakeLambda
		kind rag.Kind
	}{
		{"throttled", &fakeLambda{err: rag.Errorf("t", rag.KindUnavailable, "HTTP 429 TooManyRequestsException")}, rag.KindUnavailable},
		{"function error", &fakeLambda{out: Reply{FunctionError: "Unhandled", Payload: []byte(`{"errorType":"Invalid","errorMessage":"query is empty"}`)}}, rag.KindInvalid},
		{"timeout", &fakeLambda{out: Reply{FunctionError: "Unhandled", Payload: []byte(`{"errorType":"Sandbox.Timedout","errorMessage":"Task timed out"}`)}}, rag.KindUnavailable},
		{"short reply", &fakeLambda{out: Reply{Payload: []byte(`{"scores":[0.5]}`)}}, rag.KindUnavailable},
		{"garbage", &fakeLambda{out: Reply{Payload: []byte(`not json`)}}, rag.KindInternal},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Reranker{Function{Client: c.f, Name: "fn"}}
			if _, err := r.Rerank(context.Background(), "refund", []string{"x", "y"}); !rag.Is(err, c.kind) {
				t.Errorf("err %v, want kind %v", err, c.kind)
			}
			ev := []rank.Evidence{{ChunkID: "a", ChildText: "nothing here", Score: 1}, {ChunkID: "b", ChildText: "refund policy", Score: 0.5}}
			out, degraded, _ := rank.RerankEvidence(context.Background(), r, "refund", ev)
			if !degraded || out[0].ChunkID != "a" || out[1].Score != 0.5 {
				t.Errorf("degraded %v, order %s,%s; want degraded, the fused order kept with relative scores (a first)", degraded, out[0].ChunkID, out[1].ChunkID)
			}
		})
	}
}

// lambdaAPI is an httptest server answering the Invoke API as Lambda does; it records the last request.
type lambdaAPI struct {
	got            *http.Request
	body           []byte
	status         int
	fnErr, errType string
	reply          []byte
	calls          int
}

func (l *lambdaAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.calls++
	l.got = r
	l.body, _ = io.ReadAll(r.Body)
	if l.fnErr != "" {
		w.Header().Set("X-Amz-Function-Error", l.fnErr)
	}
	if l.errType != "" {
		w.Header().Set("X-Amzn-ErrorType", l.errType)
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(l.status)
	w.Write(l.reply)
}

func sdkInvoker(t *testing.T, l *lambdaAPI, prop propagation.TextMapPropagator) *SDKInvoker {
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	ac := aws.Config{APIOptions: awsrt.APIOptions(), Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", ""), RetryMaxAttempts: 1}
	return NewInvoker(ac, srv.URL, prop)
}

// TestSDKInvoker: through the SDK's Lambda client the request is the Invoke API's (synchronous, signed
// with SigV4 for the lambda service in the configured region); a function error comes back in the
// reply, a throttle or a missing function as Unavailable, and payloads over 6 MB are refused.
func TestSDKInvoker(t *testing.T) {
	l := &lambdaAPI{status: http.StatusOK, reply: []byte(`{"scores":[1]}`)}
	inv := sdkInvoker(t, l, nil)
	ctx := context.Background()
	rep, err := inv.Invoke(ctx, "docmind-dev-rerank", []byte(`{"query":"q"}`))
	if err != nil || string(rep.Payload) != `{"scores":[1]}` || rep.FunctionError != "" {
		t.Fatalf("got %+v, %v; want the reply without a function error", rep, err)
	}
	auth := l.got.Header.Get("Authorization")
	if l.got.Method != "POST" || l.got.URL.Path != "/2015-03-31/functions/docmind-dev-rerank/invocations" || string(l.body) != `{"query":"q"}` ||
		!strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKID/") || !strings.Contains(auth, "/eu-west-1/lambda/aws4_request") ||
		l.got.Header.Get("X-Amz-Invocation-Type") != "RequestResponse" {
		t.Errorf("request %s %s %q invocation type %q auth %q", l.got.Method, l.got.URL.Path, l.body, l.got.Header.Get("X-Amz-Invocation-Type"), auth)
	}

	l.fnErr, l.reply = "Unhandled", []byte(`{"errorType":"Invalid","errorMessage":"query is empty"}`)
	rep, err = inv.Invoke(ctx, "f", []byte(`{}`))
	if err != nil || rep.FunctionError != "Unhandled" {
		t.Errorf("function error: got %+v, %v; want FunctionError Unhandled", rep, err)
	}
	f := Function{Client: inv, Name: "f"}
	if err := f.Call(ctx, struct{}{}, &struct{}{}); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("function error through Call: %v, want the function's kind (Invalid)", err)
	}

	for _, c := range []struct {
		status  int
		errType string
	}{
		{http.StatusTooManyRequests, "TooManyRequestsException"},
		{http.StatusNotFound, "ResourceNotFoundException"},
		{http.StatusForbidden, "AccessDeniedException"},
	} {
		l.status, l.fnErr, l.errType, l.reply = c.status, "", c.errType, []byte(`{"Type":"User","message":"no"}`)
		if _, err := inv.Invoke(ctx, "f", []byte(`{}`)); !rag.Is(err, rag.KindUnavailable) || !strings.Contains(err.Error(), c.errType) {
			t.Errorf("%s: %v, want Unavailable naming it", c.errType, err)
		}
	}

	l.status, l.errType, l.reply = http.StatusOK, "", make([]byte, MaxPayload+1)
	if _, err := inv.Invoke(ctx, "f", []byte(`{}`)); !rag.Is(err, rag.KindUnavailable) {
		t.Errorf("reply over 6 MB: %v, want Unavailable", err)
	}
	calls := l.calls
	if _, err := inv.Invoke(ctx, "f", make([]byte, MaxPayload+1)); !rag.Is(err, rag.KindInvalid) || l.calls != calls {
		t.Errorf("request over 6 MB: %v (%d calls made), want Invalid before any call", err, l.calls-calls)
	}
}

// TestSDKInvokerNoCredentials: without credentials the SDK refuses to sign, and the call fails
// without reaching the service (the SDK
// alone would send it unsigned).
func TestSDKInvokerNoCredentials(t *testing.T) {
	l := &lambdaAPI{status: http.StatusOK, reply: []byte(`{}`)}
	srv := httptest.NewServer(l)
	defer srv.Close()
	inv := NewInvoker(aws.Config{APIOptions: awsrt.APIOptions(), Region: "eu-west-1", RetryMaxAttempts: 1}, srv.URL, nil)
	if _, err := inv.Invoke(context.Background(), "f", nil); !rag.Is(err, rag.KindInvalid) || l.calls != 0 {
		t.Errorf("no credentials: %v after %d calls; want an error before any call", err, l.calls)
	}
}

// TestInvokeCarriesTrace: an Invoke made while serving a request traced by X-Ray carries that trace
// (X-Amzn-Trace-Id with the same root, and traceparent), so the rerank and grade functions' spans
// are in the question's trace.
func TestInvokeCarriesTrace(t *testing.T) {
	l := &lambdaAPI{status: http.StatusOK, reply: []byte(`{}`)}
	inv := sdkInvoker(t, l, obs.Propagator())
	const root = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	ctx := obs.Propagator().Extract(context.Background(), propagation.MapCarrier{"X-Amzn-Trace-Id": root})
	if _, err := inv.Invoke(ctx, "docmind-dev-grade", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := l.got.Header.Get("X-Amzn-Trace-Id"); !strings.HasPrefix(got, "Root=1-5759e988-bd862e3fe1be46a994272793;") {
		t.Errorf("X-Amzn-Trace-Id %q, want the caller's root", got)
	}
	if got := l.got.Header.Get("Traceparent"); !strings.Contains(got, "5759e988bd862e3fe1be46a994272793") {
		t.Errorf("traceparent %q, want the caller's trace id", got)
	}
}
