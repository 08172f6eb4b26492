package awsops

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// site is a local web site of two pages (robots.txt, a start page linking the second); refuse makes
// every answer a 403.
type site struct {
	srv    *httptest.Server
	refuse bool
}

func newSite(t *testing.T) *site {
	s := &site{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.refuse {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		switch r.URL.Path {
		case "/robots.txt", "/sitemap.xml":
			http.NotFound(w, r)
		case "/handbook/":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<html><head><title>Handbook</title></head><body><p>Welcome to the handbook.</p><a href="leave.html">Leave</a></body></html>`))
		case "/handbook/leave.html":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(`<html><head><title>Leave</title></head><body><p>Annual leave is 25 days.</p></body></html>`))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.srv.Close)
	return s
}

type fixture struct {
	ops   *Ops
	db    *sqldb.DB
	site  *site
	flow  *syncflow.Flow
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
	cfg := config.Default()
	cfg.Connectors.AllowHosts = "127.0.0.1"
	mgr := &manage.Manager{Store: db, Indexer: svc, Config: cfg, Getenv: func(string) string { return "" }}
	flow := &syncflow.Flow{Tenant: tenant, Store: db, Docs: svc, Blobs: blobs, Engine: eng}
	ops := &Ops{Store: db, Members: mgr,
		Schedules: awssched.Schedules{Client: sc, Group: group, StateMachineARN: aws.ToString(sm.StateMachineArn),
			RoleARN: "arn:aws:iam::123456789012:role/docmind-dev-ConnectorSchedulerRole"},
		Default: time.Hour, Executions: fc, StateMachineARN: aws.ToString(sm.StateMachineArn)}
	return &fixture{ops: ops, db: db, site: newSite(t), flow: flow, sched: sc, sfn: fc, group: group, kb: kb, eng: eng}
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
	return &rag.Connector{Tenant: tenant, Name: name, KBID: f.kb.ID, Type: "web", Config: `{"url":"` + f.site.srv.URL + `/handbook/"}`}
}

// executions lists the sync state machine's executions' inputs by name.
func (f *fixture) executions(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	list, err := f.sfn.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: aws.String(f.ops.StateMachineARN)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range list.Executions {
		d, err := f.sfn.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: e.ExecutionArn})
		if err != nil {
			t.Fatal(err)
		}
		out[aws.ToString(e.Name)] = aws.ToString(d.Input)
	}
	return out
}

// The HTTP API's connector operations on AWS, against moto_server's EventBridge Scheduler and Step
// Functions, over SQLite and in-memory stores and a local web site: an add asks the site and is
// scheduled (and leaves nothing when the site refuses);
// an interval set from the API re-times the schedule, "off" deletes it, one EventBridge cannot keep
// is refused and the old interval kept; a sync starts an execution of the sync state machine with
// the connector as input, and a second start while a sync holds the lease is a Conflict; a dry run
// runs in the function; a removal deletes the schedule, then the documents and the connector.
func TestOpsAgainstMoto(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	f.site.refuse = true
	if err := f.ops.AddMember(ctx, f.web("refused"), true); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("add with a refused check = %v; want the source's 403", err)
	}
	if _, err := f.db.GetConnector(ctx, tenant, "refused"); !rag.Is(err, rag.KindNotFound) || f.schedule(t, "refused") != "" {
		t.Fatalf("a refused add left its record (%v) or schedule %q", err, f.schedule(t, "refused"))
	}
	f.site.refuse = false
	if err := f.ops.AddMember(ctx, f.web("handbook"), true); err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	if got := f.schedule(t, "handbook"); got != "rate(1 hour)" {
		t.Fatalf("schedule after add = %q; want the default rate(1 hour)", got)
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
	execs := f.executions(t)
	for name, input := range execs {
		if len(execs) != 1 || !strings.HasPrefix(name, "api-handbook-") || input != `{"connector":"handbook"}` {
			t.Fatalf("executions after Start = %v; want one named api-handbook-... with {\"connector\":\"handbook\"}", execs)
		}
	}
	if len(execs) != 1 {
		t.Fatalf("executions after Start = %v; want one", execs)
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
	if err != nil || len(res.Items) != 2 || res.Items[0].Action != connector.ActAdd || res.Added != 2 {
		t.Fatalf("dry run = %+v, %v; want both pages to be added", res, err)
	}
	if _, err := f.ops.Sync(ctx, tenant, "handbook", false); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("an in-request sync = %v; want Invalid (syncs run in the state machine)", err)
	}
	if _, err := f.ops.Get(ctx, "t2", "handbook"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("another tenant's Get = %v; want NotFound", err)
	}
	if err := f.ops.Check(ctx, tenant, "handbook"); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := f.ops.Check(ctx, "t2", "handbook"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("another tenant's Check = %v; want NotFound", err)
	}

	// index the two pages (a sync), then remove: the schedule goes at once, the removal is an execution
	// of the sync state machine, whose Remove step (run here as the connector function runs it) deletes
	// the documents and the connector
	f.db.SaveSyncState(ctx, tenant, "handbook", rag.SyncState{Status: rag.SyncIdle})
	if r, err := f.ops.Members.Sync(ctx, tenant, "handbook", false); err != nil || r.Added != 2 {
		t.Fatalf("sync before the removal = %+v, %v", r, err)
	}
	if _, err := f.ops.Remove(ctx, tenant, "handbook"); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if f.schedule(t, "handbook") != "" {
		t.Fatal("the schedule is still there after Remove")
	}
	var removal string
	for name, input := range f.executions(t) {
		if input == `{"connector":"handbook","remove":true}` {
			removal = name
		}
	}
	if removal == "" {
		t.Fatalf("no removal execution among %v", f.executions(t))
	}
	out, err := f.flow.Dispatch(ctx, syncflow.Envelope{Step: "Remove", Input: json.RawMessage(`{"connector":"handbook"}`)})
	if err != nil || out.(syncflow.OpOut).Deleted != 2 {
		t.Fatalf("the Remove step = %+v, %v; want 2 documents deleted", out, err)
	}
	if _, err := f.db.GetConnector(ctx, tenant, "handbook"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("after the Remove step: connector %v; want it gone", err)
	}
	if _, err := f.ops.Remove(ctx, tenant, "handbook"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("a second Remove = %v; want NotFound", err)
	}
}
