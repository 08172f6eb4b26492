package lambdafn

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

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

// TestHTTPInvoker: the request is the Invoke API's, signed with SigV4 for the lambda service in the
// configured region; a function error comes back in the reply, a throttle as Unavailable.
func TestHTTPInvoker(t *testing.T) {
	var got *http.Request
	var body []byte
	status, fnErr := http.StatusOK, ""
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, body = r, nil
		body, _ = io.ReadAll(r.Body)
		if fnErr != "" {
			w.Header().Set("X-Amz-Function-Error", fnErr)
		}
		w.WriteHeader(status)
		w.Write([]byte(`{"scores":[1]}`))
	}))
	defer srv.Close()
	inv := &HTTPInvoker{Endpoint: srv.URL, Config: aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}}
	rep, err := inv.Invoke(context.Background(), "docmind-dev-rerank", []byte(`{"query":"q"}`))
	if err != nil || string(rep.Payload) != `{"scores":[1]}` || rep.FunctionError != "" {
		t.Fatalf("%+v %v", rep, err)
	}
	auth := got.Header.Get("Authorization")
	if got.Method != "POST" || got.URL.Path != "/2015-03-31/functions/docmind-dev-rerank/invocations" || string(body) != `{"query":"q"}` ||
		!strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential=AKID/") || !strings.Contains(auth, "/eu-west-1/lambda/aws4_request") ||
		got.Header.Get("X-Amz-Invocation-Type") != "RequestResponse" {
		t.Errorf("request %s %s %q auth %q", got.Method, got.URL.Path, body, auth)
	}
	fnErr = "Unhandled"
	if rep, err := inv.Invoke(context.Background(), "f", nil); err != nil || rep.FunctionError != "Unhandled" {
		t.Errorf("function error: %+v %v", rep, err)
	}
	status, fnErr = http.StatusTooManyRequests, ""
	if _, err := inv.Invoke(context.Background(), "f", nil); !rag.Is(err, rag.KindUnavailable) {
		t.Errorf("throttled: %v", err)
	}
	if _, err := (&HTTPInvoker{}).Invoke(context.Background(), "f", nil); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("no credentials: %v", err)
	}
}
