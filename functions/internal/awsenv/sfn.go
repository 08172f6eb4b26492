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
	Client          *sfn.Client
	StateMachineARN string
}

// Start implements ingest.Executions: ExecutionAlreadyExists is a replay, not an error. Step Functions
// also answers a same-name, same-input start of a running execution with success; either way no second
// run happens.
func (e Executions) Start(ctx context.Context, name string, input []byte) (bool, error) {
	const op = "awsenv.StartExecution"
	_, err := e.Client.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(e.StateMachineARN),
		Name: aws.String(name), Input: aws.String(string(input))})
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
