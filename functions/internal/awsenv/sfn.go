package awsenv

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/aws/smithy-go"

	"github.com/docmind/docmind/shared/rag"
)

// Executions starts executions of one state machine (ingest.Executions).
type Executions struct {
	Client interface {
		StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
	}
	StateMachineARN string
}

// Start implements ingest.Executions: ExecutionAlreadyExists is a replay, not an error. Step Functions
// also answers a same-name, same-input start of a running execution with success; either way no second
// run happens.
func (e Executions) Start(ctx context.Context, name string, input []byte) (bool, error) {
	const op = "awsenv.StartExecution"
	in := &sfn.StartExecutionInput{StateMachineArn: aws.String(e.StateMachineARN), Name: aws.String(name), Input: aws.String(string(input))}
	if h := lambdaTraceHeader(ctx); h != "" {
		in.TraceHeader = aws.String(h) // the execution joins the trace of the invocation that started it
	}
	_, err := e.Client.StartExecution(ctx, in)
	if err == nil {
		return true, nil
	}
	var exists *sfntypes.ExecutionAlreadyExists
	if errors.As(err, &exists) {
		return false, nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ExecutionAlreadyExists":
			return false, nil
		case "ExecutionLimitExceeded", "ThrottlingException", "ServiceUnavailable", "InternalFailure":
			return false, rag.E(op, rag.KindUnavailable, err)
		case "InvalidName", "InvalidExecutionInput", "InvalidArn", "StateMachineDoesNotExist", "StateMachineDeleting":
			return false, rag.E(op, rag.KindInvalid, err)
		case "AccessDeniedException":
			return false, rag.E(op, rag.KindPermission, err)
		}
	}
	return false, rag.E(op, rag.KindUnavailable, err)
}

// lambdaTraceHeader is the X-Ray trace header of the Lambda invocation ctx belongs to, which
// aws-lambda-go puts in the context under this plain string key (shared/obs reads the same key; this
// package does not import obs, which would link the OTLP exporter into every function).
func lambdaTraceHeader(ctx context.Context) string {
	h, _ := ctx.Value("x-amzn-trace-id").(string)
	return h
}
