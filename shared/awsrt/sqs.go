package awsrt

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
)

// Batch runs fn on every message of an SQS batch and returns the partial batch response: the ids of the
// messages that failed, which SQS makes visible again (and moves to the dead-letter queue after the
// queue's maxReceiveCount) while the others are deleted. It needs ReportBatchItemFailures on the event
// source mapping; without it one failure would redeliver the whole batch. Messages run in order, one at a
// time: a batch is at most ten S3 events, and ordering within a key is settled by sequencers anyway.
// A message is not started once ctx is done; it is reported failed so it comes back.
func Batch(ctx context.Context, log *slog.Logger, ev events.SQSEvent, fn func(context.Context, events.SQSMessage) error) events.SQSEventResponse {
	var resp events.SQSEventResponse
	for _, m := range ev.Records {
		var err error
		if err = ctx.Err(); err == nil {
			err = fn(ctx, m)
		}
		if err != nil {
			if log != nil {
				log.Warn("sqs message failed", "message_id", m.MessageId, "error_type", ErrorType(err), "err", err)
			}
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp
}
