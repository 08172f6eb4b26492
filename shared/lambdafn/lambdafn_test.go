package lambdafn

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rankfn"
)

// fakeLambda answers Invoke with a canned reply and records the payload.
type fakeLambda struct {
	out  *lambda.InvokeOutput
	err  error
	got  rankfn.RerankIn
	name string
}

func (f *fakeLambda) Invoke(ctx context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	f.name = aws.ToString(in.FunctionName)
	json.Unmarshal(in.Payload, &f.got)
	return f.out, f.err
}

func TestRerank(t *testing.T) {
	f := &fakeLambda{out: &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(`{"scores":[0.1,0.8],"model":"bge"}`)}}
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
		{"throttled", &fakeLambda{err: errors.New("TooManyRequestsException")}, rag.KindUnavailable},
		{"function error", &fakeLambda{out: &lambda.InvokeOutput{FunctionError: aws.String("Unhandled"), Payload: []byte(`{"errorType":"Invalid","errorMessage":"query is empty"}`)}}, rag.KindInvalid},
		{"timeout", &fakeLambda{out: &lambda.InvokeOutput{FunctionError: aws.String("Unhandled"), Payload: []byte(`{"errorType":"Sandbox.Timedout","errorMessage":"Task timed out"}`)}}, rag.KindUnavailable},
		{"short reply", &fakeLambda{out: &lambda.InvokeOutput{Payload: []byte(`{"scores":[0.5]}`)}}, rag.KindUnavailable},
		{"garbage", &fakeLambda{out: &lambda.InvokeOutput{Payload: []byte(`not json`)}}, rag.KindInternal},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Reranker{Function{Client: c.f, Name: "fn"}}
			if _, err := r.Rerank(context.Background(), "refund", []string{"x", "y"}); !rag.Is(err, c.kind) {
				t.Errorf("err %v, want kind %v", err, c.kind)
			}
			ev := []rank.Evidence{{ChunkID: "a", ChildText: "nothing here", Score: 1}, {ChunkID: "b", ChildText: "refund policy", Score: 0.5}}
			out, degraded, _ := rank.RerankEvidence(context.Background(), r, "refund", ev)
			if !degraded || out[0].ChunkID != "b" {
				t.Errorf("degraded %v, order %s,%s; want degraded lexical order (b first)", degraded, out[0].ChunkID, out[1].ChunkID)
			}
		})
	}
}

func TestGrader(t *testing.T) {
	f := &fakeLambda{out: &lambda.InvokeOutput{Payload: []byte(`{"grade":{"tier":"HIGH","top_score":0.9},"evidence":[]}`)}}
	out, err := (&Grader{Function{Client: f, Name: "g"}}).Grade(context.Background(), rankfn.GradeIn{Query: "q"})
	if err != nil || out.Grade.Tier != "HIGH" {
		t.Errorf("got %+v %v", out, err)
	}
}
