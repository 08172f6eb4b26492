// Package awsops runs the HTTP API's connector operations on AWS (issue #23), behind the same routes
// and checks as `docmind serve` (shared/httpapi's Connectors; who may do what is the routes' business):
//
//	List, Get             the connectors table (Aurora)
//	AddMember, Check,     as manage.Manager does them, in the function serving the API: a connector
//	Sync (dry run)        added from the page names no secret (manage.AddMember), so asking its source
//	                      needs none; an add also makes the connector's EventBridge Scheduler schedule,
//	                      and one whose schedule cannot be made records nothing
//	SetInterval           the table, then the schedule updated (deleted for "off")
//	Start                 an execution of the connector sync state machine (Step Functions), as the
//	                      schedule starts it; Conflict while a sync holds the connector's lease
//	Remove                the schedule deleted, then an execution of the sync state machine with
//	                      {"connector": NAME, "remove": true}: its Remove step, on the connector
//	                      function, deletes the documents everywhere and then the connector
//
// so the API's role needs states:StartExecution on one state machine, the schedule calls on the
// stack's schedule group and iam:PassRole on the scheduler's role, and no connector secret or
// document deletion of its own; it calls no function synchronously (a removal may take longer than
// a request).
package awsops

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/manage"
	"github.com/docmind/docmind/shared/rag"
)

// Store is the connectors table as the operations use it (sqldb.DB).
type Store interface {
	GetConnector(ctx context.Context, tenant, name string) (rag.Connector, error)
	ListConnectors(ctx context.Context, tenant string) ([]rag.Connector, error)
	SetConnectorInterval(ctx context.Context, tenant, name string, seconds int64) error
	SaveSyncState(ctx context.Context, tenant, name string, st rag.SyncState) error
	DeleteConnector(ctx context.Context, tenant, name string) error
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// Starter starts executions (*sfn.Client).
type Starter interface {
	StartExecution(ctx context.Context, in *sfn.StartExecutionInput, opts ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error)
}

// Ops is httpapi.Connectors on AWS.
type Ops struct {
	Store Store
	// Members records the connectors editors add (manage.Manager.AddMember: settings validated and
	// credentials confined as locally), checks them and runs dry runs.
	Members *manage.Manager
	// Schedules is the connectors' EventBridge Scheduler schedules (awssched.Schedules).
	Schedules connector.Scheduler
	// Default is DOCMIND_CONNECTOR_SYNC_INTERVAL: the schedule of a connector without its own interval.
	Default time.Duration
	// Executions starts the sync state machine, StateMachineARN.
	Executions      Starter
	StateMachineARN string
	Now             func() time.Time
}

// List returns the tenant's connectors by name.
func (o *Ops) List(ctx context.Context, tenant string) ([]rag.Connector, error) {
	return o.Store.ListConnectors(ctx, tenant)
}

// Get returns one connector; NotFound when the tenant has none of that name.
func (o *Ops) Get(ctx context.Context, tenant, name string) (rag.Connector, error) {
	return o.Store.GetConnector(ctx, tenant, name)
}

// AddMember records an editor's connector (asking its source once, with check) and makes its
// schedule. A schedule that cannot be made removes the record again, so a failed add leaves nothing
// behind.
func (o *Ops) AddMember(ctx context.Context, c *rag.Connector, check bool) error {
	if err := o.Members.AddMember(ctx, c, check); err != nil {
		return err
	}
	if err := o.schedule(ctx, *c); err != nil {
		if derr := o.Store.DeleteConnector(context.WithoutCancel(ctx), c.Tenant, c.Name); derr != nil && !rag.Is(derr, rag.KindNotFound) {
			return errors.Join(err, fmt.Errorf("and the connector record could not be removed again: %w", derr))
		}
		return err
	}
	return nil
}

// schedule makes c's schedule as its interval says: its own, else Default; none when that is 0.
func (o *Ops) schedule(ctx context.Context, c rag.Connector) error {
	every := manage.Every(c, o.Default)
	if every <= 0 {
		return o.Schedules.Delete(ctx, c.Tenant, c.Name)
	}
	return o.Schedules.Upsert(ctx, c, every)
}

// SetInterval changes how often the schedule syncs the connector and updates its schedule. When the
// schedule cannot be changed the old interval is put back (Invalid for an interval EventBridge
// Scheduler cannot keep, such as one that is not whole minutes).
func (o *Ops) SetInterval(ctx context.Context, tenant, name string, seconds int64) error {
	old, err := o.Store.GetConnector(ctx, tenant, name)
	if err != nil {
		return err
	}
	if err := o.Store.SetConnectorInterval(ctx, tenant, name, seconds); err != nil {
		return err
	}
	c := old
	c.IntervalSeconds = seconds
	if err := o.schedule(ctx, c); err != nil {
		if rerr := o.Store.SetConnectorInterval(context.WithoutCancel(ctx), tenant, name, old.IntervalSeconds); rerr != nil {
			return errors.Join(err, fmt.Errorf("and the old interval could not be put back: %w", rerr))
		}
		return err
	}
	return nil
}

// Check asks the connector's source one cheap question with its credentials (manage.Manager.Check).
// A connector added by an operator with a credentials_secret cannot be checked here: this function
// reads no connector secret (the sync state machine's steps do).
func (o *Ops) Check(ctx context.Context, tenant, name string) error {
	return o.Members.Check(ctx, tenant, name)
}

// Sync runs a dry run (what a sync would do, nothing written; manage.Manager.Sync). A sync that
// writes is started with Start: it runs in the sync state machine, not in a request.
func (o *Ops) Sync(ctx context.Context, tenant, name string, dry bool) (connector.Result, error) {
	if !dry {
		return connector.Result{Connector: name}, rag.Errorf("awsops.Sync", rag.KindInvalid, "on AWS a sync runs in the sync state machine: start it")
	}
	return o.Members.Sync(ctx, tenant, name, true)
}

// Start marks the connector running (so the page sees it at once; the execution's Begin writes the
// same) and starts an execution of the sync state machine for it, as its schedule does; a start that
// is refused puts the connector's state back.
// Conflict while another sync holds the connector's lease.
func (o *Ops) Start(ctx context.Context, tenant, name string) error {
	const op = "awsops.Start"
	c, err := o.Store.GetConnector(ctx, tenant, name)
	if err != nil {
		return err
	}
	// a probe of the lease: held by a running execution (named after it), or free. The execution's
	// own Begin takes it; a start racing this one finds it taken there and ends (AnotherSyncRunning)
	lease := connector.LeaseName(tenant, name)
	probe := "api-probe-" + token()
	free, err := o.Store.AcquireLease(ctx, lease, probe, time.Second)
	if err != nil {
		return err
	}
	if !free {
		return rag.Errorf(op, rag.KindConflict, "a sync of %q is running already; its status shows its progress", name)
	}
	if err := o.Store.ReleaseLease(ctx, lease, probe); err != nil {
		return err
	}
	// running before the start, not after: a short execution may end before StartExecution returns,
	// and its outcome must not be overwritten
	st := c.SyncState
	st.Status, st.StartedAt, st.FinishedAt, st.LastError, st.Progress = rag.SyncRunning, o.now(), time.Time{}, "", `{"listed":0}`
	if err := o.Store.SaveSyncState(ctx, tenant, name, st); err != nil {
		return err
	}
	if err := o.start(ctx, op, name, map[string]any{"connector": name}); err != nil {
		if rerr := o.Store.SaveSyncState(context.WithoutCancel(ctx), tenant, name, c.SyncState); rerr != nil {
			return errors.Join(err, rerr)
		}
		return err
	}
	return nil
}

// Remove deletes the connector's schedule, then starts the removal in the sync state machine (its
// Remove step deletes every document the connector indexed, then the connector), and returns at once:
// the count it returns is 0, the documents go while the execution runs and the connector leaves the
// list when it ends. The schedule goes first, so no sync starts on a connector being removed.
func (o *Ops) Remove(ctx context.Context, tenant, name string) (int, error) {
	const op = "awsops.Remove"
	if _, err := o.Store.GetConnector(ctx, tenant, name); err != nil {
		return 0, err
	}
	if err := o.Schedules.Delete(ctx, tenant, name); err != nil {
		return 0, err
	}
	return 0, o.start(ctx, op, name, map[string]any{"connector": name, "remove": true})
}

// start starts an execution of the sync state machine with input.
func (o *Ops) start(ctx context.Context, op, name string, input map[string]any) error {
	b, _ := json.Marshal(input)
	if _, err := o.Executions.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: aws.String(o.StateMachineARN),
		Name: aws.String(ExecutionName(name, o.now())), Input: aws.String(string(b))}); err != nil {
		return classify(op, err)
	}
	return nil
}

// ExecutionName names a sync started from the API: "api-", the connector, the start time and a random
// suffix (at most 80 of Step Functions' allowed characters: a connector name is at most 64).
func ExecutionName(connectorName string, at time.Time) string {
	n := fmt.Sprintf("api-%s-%s", connectorName, at.UTC().Format("20060102T150405"))
	if len(n) > 71 {
		n = n[:71]
	}
	return n + "-" + token()[:8]
}

func token() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (o *Ops) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// classify maps Step Functions' refusals to kinds: a missing state machine or a bad input is the
// deployment's error (Invalid), throttling and the service's own faults are Unavailable.
func classify(op string, err error) error {
	var missing *sfntypes.StateMachineDoesNotExist
	var invalid *sfntypes.InvalidArn
	var exists *sfntypes.ExecutionAlreadyExists
	switch {
	case errors.As(err, &exists):
		return rag.Errorf(op, rag.KindConflict, "a sync was started at the same moment: %v", err)
	case errors.As(err, &missing), errors.As(err, &invalid):
		return rag.E(op, rag.KindInvalid, fmt.Errorf("the connector sync state machine: %w", err))
	}
	return rag.E(op, rag.KindUnavailable, err)
}
