package askflow

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"go.opentelemetry.io/otel/propagation"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/obs"
	"github.com/docmind/docmind/shared/rag"
)

type fakeSync struct {
	out   *sfn.StartSyncExecutionOutput
	err   error
	in    answer.Request
	arn   string
	trace string
}

func (f *fakeSync) StartSyncExecution(_ context.Context, in *sfn.StartSyncExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartSyncExecutionOutput, error) {
	f.arn, f.trace = aws.ToString(in.StateMachineArn), aws.ToString(in.TraceHeader)
	json.Unmarshal([]byte(aws.ToString(in.Input)), &f.in)
	return f.out, f.err
}

func TestAsker(t *testing.T) {
	f := &fakeSync{out: &sfn.StartSyncExecutionOutput{Status: sfntypes.SyncExecutionStatusSucceeded, Output: aws.String(`{"answer":"A [1]","path":"STANDARD"}`)}}
	a := &Asker{Client: f, StateMachineARN: "arn:answer"}
	done, err := a.Ask(context.Background(), answer.Request{Tenant: "acme", User: "u", KBIDs: []string{"kb_1"}, Question: "q"})
	if err != nil || done.Answer != "A [1]" {
		t.Fatalf("%+v %v", done, err)
	}
	if f.arn != "arn:answer" || f.in.Tenant != "acme" || f.in.KBIDs[0] != "kb_1" || f.in.Question != "q" {
		t.Errorf("input %+v to %s", f.in, f.arn)
	}
	for _, c := range []struct {
		name string
		f    *fakeSync
		kind rag.Kind
	}{
		{"invalid", &fakeSync{out: &sfn.StartSyncExecutionOutput{Status: sfntypes.SyncExecutionStatusFailed, Error: aws.String("Invalid"), Cause: aws.String("question is empty")}}, rag.KindInvalid},
		{"timeout", &fakeSync{out: &sfn.StartSyncExecutionOutput{Status: sfntypes.SyncExecutionStatusTimedOut}}, rag.KindUnavailable},
		{"task timeout", &fakeSync{out: &sfn.StartSyncExecutionOutput{Status: sfntypes.SyncExecutionStatusFailed, Error: aws.String("States.Timeout")}}, rag.KindUnavailable},
		{"throttled", &fakeSync{err: errors.New("ExecutionLimitExceeded")}, rag.KindUnavailable},
	} {
		_, err := (&Asker{Client: c.f}).Ask(context.Background(), answer.Request{Tenant: "acme", Question: "q"})
		if !rag.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
}

// TestAskerCarriesTrace: the execution is started in the caller's X-Ray trace (TraceHeader).
func TestAskerCarriesTrace(t *testing.T) {
	f := &fakeSync{out: &sfn.StartSyncExecutionOutput{Status: sfntypes.SyncExecutionStatusSucceeded, Output: aws.String(`{"answer":"A"}`)}}
	const root = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	ctx := obs.Propagator().Extract(context.Background(), propagation.MapCarrier{"X-Amzn-Trace-Id": root})
	if _, err := (&Asker{Client: f, Propagator: obs.Propagator()}).Ask(ctx, answer.Request{Tenant: "acme", Question: "q"}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.trace, "Root=1-5759e988-bd862e3fe1be46a994272793;") {
		t.Errorf("TraceHeader %q, want the caller's root", f.trace)
	}
}
