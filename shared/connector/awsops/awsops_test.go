package awsops

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/awssched"
	"github.com/docmind/docmind/shared/connector/manage"
	"github.com/docmind/docmind/shared/connector/syncflow"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

const tenant = "t1"

// pages is a source of two pages whose Validate answers refuse (nil: it answers).
type pages struct{ refuse error }

func (p *pages) Validate(context.Context) error { return p.refuse }

func (p *pages) Changes(context.Context, string, []connector.Known) (connector.Listing, error) {
	return connector.Listing{Changes: []connector.Change{{ID: "a"}, {ID: "b"}}, Cursor: "1", Complete: true, Calls: 1}, nil
}

func (p *pages) Fetch(_ context.Context, id string, _ connector.Known) (connector.Item, error) {
	return connector.Item{ID: id, Name: id + ".md", Data: []byte("# " + id + "\n\nThe page " + id + " of the handbook.\n"), Version: "1", Calls: 1}, nil
}

// function is the connector function as Lambda Invoke reaches it: the envelope through JSON into
// syncflow's Dispatch, an error returned as the function's error.
type function struct {
	flow  *syncflow.Flow
	steps []string
}

func (f *function) Call(ctx context.Context, in, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	var env syncflow.Envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return err
	}
	f.steps = append(f.steps, env.Step)
	res, err := f.flow.Dispatch(ctx, env)
	if err != nil {
		return err
	}
	b, _ = json.Marshal(res)
	return json.Unmarshal(b, out)
}

type fixture struct {
	ops   *Ops
	db    *sqldb.DB
	src   *pages
	fn    *function
	sched *scheduler.Client
	sfn   *sfn.Client
	group string
	kb    rag.KnowledgeBase
	eng   *connector.Engine
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	url := mototest.Start(t)
	ctx := context.Background()
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	sc := scheduler.New(scheduler.Options{Region: "eu-west-1", BaseEndpoint: aws.String(url), Credentials: creds})
	group := "docmind-dev-connectors"
	if _, err := sc.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	fc := sfn.New(sfn.Options{Region: "eu-west-1", BaseEndpoint: aws.String(url), Credentials: creds})
	sm, err := fc.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("docmind-dev-connector-sync"),
		Definition: aws.String(`{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}`),
		RoleArn:    aws.String("arn:aws:iam::123456789012:role/docmind-dev-ConnectorSyncRole")})
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: tenant, Name: "handbook"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	blobs := memblob.New()
	st := &ingest.Stages{Records: db, Vectors: memvec.New(32), Blobs: blobs, Staging: blobs, Embedder: embed.NewOffline(32),
		Chunking: chunk.Options{ChildChars: 120, Overlap: 20, ParentChars: 400}}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st}, InboxTenant: tenant, Leases: db}
	eng := &connector.Engine{Indexer: svc, Documents: db, State: db, Leases: db, Metadata: db}
	src := &pages{}
	flow := &syncflow.Flow{Tenant: tenant, Store: db, Docs: svc, Blobs: blobs, Engine: eng,
		Source: func(context.Context, rag.Connector) (connector.Source, error) { return src, nil }}
	fn := &function{flow: flow}
	ops := &Ops{Store: db, Members: &manage.Manager{Store: db, Config: config.Default()},
		Schedules: awssched.Schedules{Client: sc, Group: group, StateMachineARN: aws.ToString(sm.StateMachineArn),
			RoleARN: "arn:aws:iam::123456789012:role/docmind-dev-ConnectorSchedulerRole"},
		Default: time.Hour, Executions: fc, StateMachineARN: aws.ToString(sm.StateMachineArn), Function: fn}
	return &fixture{ops: ops, db: db, src: src, fn: fn, sched: sc, sfn: fc, group: group, kb: kb, eng: eng}
}

// schedule returns the connector's schedule expression, "" when it has none.
func (f *fixture) schedule(t *testing.T, name string) string {
	t.Helper()
	out, err := f.sched.GetSchedule(context.Background(), &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: aws.String(f.group)})
	if err != nil {
		if strings.Contains(err.Error(), "ResourceNotFound") {
			return ""
		}
		t.Fatalf("GetSchedule: %v", err)
	}
	return aws.ToString(out.ScheduleExpression)
}

func (f *fixture) web(name string) *rag.Connector {
	return &rag.Connector{Tenant: tenant, Name: name, KBID: f.kb.ID, Type: "web", Config: `{"url":"https://docs.example.com/handbook/"}`}
}

// The HTTP API's connector operations on AWS, against moto_server's EventBridge Scheduler and Step
// Functions, with the connector function's steps (syncflow) run over SQLite and in-memory stores:
// an add is checked by the function and scheduled (and leaves nothing when the check is refused);
// an interval set from the API re-times the schedule, "off" deletes it, one EventBridge cannot keep
// is refused and the old interval kept; a sync starts an execution of the sync state machine with
// the connector as input, and a second start while a sync holds the lease is a Conflict; a dry run
// runs in the function; a removal deletes the schedule, then the documents and the connector.
func TestOpsAgainstMoto(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	f.src.refuse = rag.Errorf("web", rag.KindPermission, "GET https://docs.example.com/handbook/: 403")
	if err := f.ops.AddMember(ctx, f.web("refused"), true); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("add with a refused check = %v; want the source's 403", err)
	}
	if _, err := f.db.GetConnector(ctx, tenant, "refused"); !rag.Is(err, rag.KindNotFound) || f.schedule(t, "refused") != "" {
		t.Fatalf("a refused add left its record (%v) or schedule %q", err, f.schedule(t, "refused"))
	}
	f.src.refuse = nil
	if err := f.ops.AddMember(ctx, f.web("handbook"), true); err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	if got := f.schedule(t, "handbook"); got != "rate(1 hour)" {
		t.Fatalf("schedule after add = %q; want the default rate(1 hour)", got)
	}
	if strings.Join(f.fn.steps, ",") != "Check,Check" {
		t.Fatalf("connector function steps = %v; want one Check per add", f.fn.steps)
	}
	if err := f.ops.AddMember(ctx, f.web("handbook"), false); !rag.Is(err, rag.KindConflict) {
		t.Fatalf("a second add of the name = %v; want Conflict", err)
	}

	if err := f.ops.SetInterval(ctx, tenant, "handbook", 900); err != nil {
		t.Fatalf("SetInterval(15 min): %v", err)
	}
	if got := f.schedule(t, "handbook"); got != "rate(15 minutes)" {
		t.Fatalf("schedule after a 15-minute interval = %q", got)
	}
	if err := f.ops.SetInterval(ctx, tenant, "handbook", 330); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("SetInterval(5.5 min) = %v; want Invalid (EventBridge rates are whole minutes)", err)
	}
	if c, _ := f.db.GetConnector(ctx, tenant, "handbook"); c.IntervalSeconds != 900 || f.schedule(t, "handbook") != "rate(15 minutes)" {
		t.Fatalf("after a refused interval: %d s, %q; want 900 s and the 15-minute schedule kept", c.IntervalSeconds, f.schedule(t, "handbook"))
	}
	if err := f.ops.SetInterval(ctx, tenant, "handbook", rag.IntervalNever); err != nil || f.schedule(t, "handbook") != "" {
		t.Fatalf("SetInterval(off) = %v, schedule %q; want no schedule", err, f.schedule(t, "handbook"))
	}
	if err := f.ops.SetInterval(ctx, tenant, "handbook", 0); err != nil || f.schedule(t, "handbook") != "rate(1 hour)" {
		t.Fatalf("SetInterval(default) = %v, schedule %q; want rate(1 hour) again", err, f.schedule(t, "handbook"))
	}

	if err := f.ops.Start(ctx, tenant, "handbook"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	execs, err := f.sfn.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(f.ops.StateMachineARN)})
	if err != nil || len(execs.Executions) != 1 || !strings.HasPrefix(aws.ToString(execs.Executions[0].Name), "api-handbook-") {
		t.Fatalf("executions after Start = %+v, %v; want one named api-handbook-...", execs, err)
	}
	d, err := f.sfn.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: execs.Executions[0].ExecutionArn})
	if err != nil || aws.ToString(d.Input) != `{"connector":"handbook"}` {
		t.Fatalf("execution input = %q, %v; want {\"connector\":\"handbook\"}", aws.ToString(d.Input), err)
	}
	if c, _ := f.db.GetConnector(ctx, tenant, "handbook"); c.Status != rag.SyncRunning {
		t.Fatalf("status after Start = %q; want running at once", c.Status)
	}
	// a sync under way holds the lease under its execution's name
	lease := connector.LeaseName(tenant, "handbook")
	if ok, _ := f.db.AcquireLease(ctx, lease, "sched-handbook-1", time.Hour); !ok {
		t.Fatal("could not take the lease")
	}
	if err := f.ops.Start(ctx, tenant, "handbook"); !rag.Is(err, rag.KindConflict) {
		t.Fatalf("Start while a sync holds the lease = %v; want Conflict", err)
	}
	f.db.ReleaseLease(ctx, lease, "sched-handbook-1")
	bad := *f.ops
	bad.StateMachineARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:gone"
	before, _ := f.db.GetConnector(ctx, tenant, "handbook")
	if err := bad.Start(ctx, tenant, "handbook"); err == nil {
		t.Fatal("Start of a missing state machine succeeded")
	}
	if after, _ := f.db.GetConnector(ctx, tenant, "handbook"); after.SyncState != before.SyncState {
		t.Fatalf("a refused start changed the state: %+v -> %+v", before.SyncState, after.SyncState)
	}

	res, err := f.ops.Sync(ctx, tenant, "handbook", true)
	if err != nil || len(res.Items) != 2 || res.Items[0].Action != connector.ActAdd {
		t.Fatalf("dry run = %+v, %v; want both pages to be added", res, err)
	}
	if _, err := f.ops.Sync(ctx, tenant, "handbook", false); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("an in-request sync = %v; want Invalid (syncs run in the state machine)", err)
	}
	if _, err := f.ops.Get(ctx, "t2", "handbook"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("another tenant's Get = %v; want NotFound", err)
	}
	if err := f.ops.Check(ctx, "t2", "handbook"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("another tenant's Check = %v; want NotFound", err)
	}

	// index the two pages (a sync), then remove: schedule first, then documents and the connector
	f.db.SaveSyncState(ctx, tenant, "handbook", rag.SyncState{Status: rag.SyncIdle})
	if r, err := f.eng.Sync(ctx, tenant, "handbook", f.src, connector.Options{}); err != nil || r.Added != 2 {
		t.Fatalf("sync before the removal = %+v, %v", r, err)
	}
	n, err := f.ops.Remove(ctx, tenant, "handbook")
	if err != nil || n != 2 {
		t.Fatalf("Remove = %d, %v; want 2 documents deleted", n, err)
	}
	if _, err := f.db.GetConnector(ctx, tenant, "handbook"); !rag.Is(err, rag.KindNotFound) || f.schedule(t, "handbook") != "" {
		t.Fatalf("after Remove: connector %v, schedule %q; want both gone", err, f.schedule(t, "handbook"))
	}
	if _, err := f.ops.Remove(ctx, tenant, "handbook"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("a second Remove = %v; want NotFound", err)
	}
}
