package askflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"go.opentelemetry.io/otel/propagation"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
)

// SyncStarter is the one Step Functions call the Asker makes (*sfn.Client).
type SyncStarter interface {
	StartSyncExecution(ctx context.Context, in *sfn.StartSyncExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartSyncExecutionOutput, error)
}

// Asker answers a question with a synchronous execution of the Express answer state machine
// (httpapi.Asker for POST /api/ask on AWS, and the canary).
type Asker struct {
	Client          SyncStarter
	StateMachineARN string
	// Propagator, when set, passes the request's trace to the execution as its X-Ray TraceHeader, so
	// the workflow's Lambda tasks are in the question's trace (obs.Propagator).
	Propagator propagation.TextMapPropagator
}

// Ask implements httpapi.Asker. Errors: the failed Task's error kind (its errorType: Invalid,
// NotFound, ...), Unavailable for a throttled start, a timeout or a Lambda service error.
func (a *Asker) Ask(ctx context.Context, req answer.Request) (*answer.Done, error) {
	const op = "askflow.Ask"
	in, err := json.Marshal(req) // the execution's input is the authorised request (Understand's input)
	if err != nil {
		return nil, rag.E(op, rag.KindInternal, err)
	}
	start := &sfn.StartSyncExecutionInput{StateMachineArn: aws.String(a.StateMachineARN), Input: aws.String(string(in))}
	if a.Propagator != nil {
		c := propagation.MapCarrier{}
		a.Propagator.Inject(ctx, c)
		if h := c.Get("X-Amzn-Trace-Id"); h != "" {
			start.TraceHeader = aws.String(h)
		}
	}
	out, err := a.Client.StartSyncExecution(ctx, start)
	if err != nil {
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	switch out.Status {
	case sfntypes.SyncExecutionStatusSucceeded:
		var done answer.Done
		if err := json.Unmarshal([]byte(aws.ToString(out.Output)), &done); err != nil {
			return nil, rag.E(op, rag.KindInternal, fmt.Errorf("decode the execution's output: %w", err))
		}
		return &done, nil
	case sfntypes.SyncExecutionStatusFailed:
		return nil, rag.Errorf(op, KindOf(aws.ToString(out.Error)), "execution failed: %s: %s", aws.ToString(out.Error), aws.ToString(out.Cause))
	}
	return nil, rag.Errorf(op, rag.KindUnavailable, "execution %s", out.Status)
}

// KindOf maps a Task's error name (our errorType) back to its kind; any other name (States.Timeout,
// Lambda.*) is Unavailable.
func KindOf(name string) rag.Kind {
	for _, k := range []rag.Kind{rag.KindInvalid, rag.KindNotFound, rag.KindPermission, rag.KindTerminal, rag.KindInternal} {
		if k.String() == name {
			return k
		}
	}
	return rag.KindUnavailable
}
