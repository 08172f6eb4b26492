package awsrt

import (
	"context"
	"errors"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/docmind/docmind/shared/rag"
)

// ErrorTyper is implemented by errors that name their own errorType (for example ingest's incomplete
// strong count, which Step Functions routes differently from a plain Unavailable).
type ErrorTyper interface{ ErrorType() string }

// ErrorType is the Lambda errorType of err: the name an ErrorTyper in the chain gives, else the rag error
// kind ("Unavailable", "Terminal", "Invalid", ...; "Unknown" for an unclassified error). The ASL's Retry
// lists the transient names and Catch routes the rest.
func ErrorType(err error) string {
	var et ErrorTyper
	if errors.As(err, &et) {
		if t := et.ErrorType(); t != "" {
			return t
		}
	}
	return rag.KindOf(err).String()
}

// LambdaError converts err for aws-lambda-go. v1.55 reports the Go type name of a returned error
// ("Error" for every rag.Error) unless the error is a messages.InvokeResponse_Error value: it type-asserts
// the value directly (lambda/errors.go lambdaErrorResponse), with no errors.As and no hook interface, so
// the value must be returned unwrapped. nil stays nil.
func LambdaError(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if len(msg) > 4000 { // Step Functions keeps at most 32,768 characters of Cause; leave room for the JSON
		msg = msg[:4000]
	}
	return messages.InvokeResponse_Error{Type: ErrorType(err), Message: msg}
}

// Handler wraps a stage-shaped function for lambda.Start so its errors carry their kind as errorType.
func Handler[In, Out any](fn func(context.Context, In) (Out, error)) func(context.Context, In) (Out, error) {
	return func(ctx context.Context, in In) (Out, error) {
		out, err := fn(ctx, in)
		return out, LambdaError(err)
	}
}
