package connector

import (
	"context"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// Scheduler keeps a connector's sync schedule in step with the connector: called when a connector is
// added or its settings change (Upsert) and when it is removed (Delete), by `docmind connector add` and
// `remove` and by the HTTP API's connector routes. On AWS it is an EventBridge Scheduler schedule per
// connector starting the sync state machine (awssched.Schedules); in `docmind serve` it is the
// in-process Ticker.
type Scheduler interface {
	// Upsert creates or replaces c's schedule: a sync every interval. Invalid for an interval the
	// scheduler cannot keep.
	Upsert(ctx context.Context, c rag.Connector, every time.Duration) error
	// Delete removes the schedule of the tenant's connector name; a schedule that does not exist is
	// not an error.
	Delete(ctx context.Context, tenant, name string) error
}
