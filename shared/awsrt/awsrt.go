// Package awsrt is the runtime plumbing every docmind Lambda shares: secrets from Secrets Manager read
// once at init, error kinds reported as the Lambda errorType (so Step Functions Retry/Catch can match
// them), S3 notifications decoded from SQS messages, SQS partial batch responses, and deterministic Step
// Functions execution names. It holds no business logic and imports no store adapter.
package awsrt
