package askflow

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
)

type fakeSync struct {
	out *sfn.StartSyncExecutionOutput
	err error
	in  answer.Request
	arn string
}

func (f *fakeSync) StartSyncExecution(_ context.Context, in *sfn.StartSyncExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartSyncExecutionOutput, error) {
	f.arn = aws.ToString(in.StateMachineArn)
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
