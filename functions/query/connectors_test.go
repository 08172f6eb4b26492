package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdaurl"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/docmind/docmind/functions/internal/httpfn"
	"github.com/docmind/docmind/functions/internal/kbtest"
	"github.com/docmind/docmind/shared/awspreflight/mototest"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/obs"
	"github.com/docmind/docmind/shared/store/memkv"
)

// Without the stack's connector variables the chat function serves no connector routes (the page
// shows no connector settings); with them, the page's connector settings run through this function's
// handler on AWS: GET /api/kbs says connectors, an add asks the (local) site and gets its EventBridge
// Scheduler schedule, a PATCH of the interval re-times it, a sync starts an execution of the sync
// state machine, and a removal deletes the schedule and starts the removal's execution (moto_server's
// Scheduler and Step Functions).
func TestConnectorRoutesOnAWS(t *testing.T) {
	ctx := context.Background()
	tr, err := obs.Setup(ctx, obs.Options{Service: "test"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Auth.Mode = "none"
	cfg.Chat.CacheEnabled, cfg.Chat.MemoryEnabled = false, false
	lib := kbtest.New(t, cfg)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/handbook/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<html><head><title>Handbook</title></head><body><p>Leave is 25 days.</p></body></html>`))
	}))
	defer site.Close()
	cfg.Connectors.AllowHosts = "127.0.0.1"
	if ops, err := connectorOps(ctx, cfg, lib.DB); err != nil || ops != nil {
		t.Fatalf("connectorOps without the stack's connector outputs = %v, %v; want none", ops, err)
	}

	url := mototest.Start(t)
	t.Setenv("AWS_ENDPOINT_URL", url)
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	creds := credentials.NewStaticCredentialsProvider("test", "test", "")
	sc := scheduler.New(scheduler.Options{Region: "eu-west-1", BaseEndpoint: aws.String(url), Credentials: creds})
	fc := sfn.New(sfn.Options{Region: "eu-west-1", BaseEndpoint: aws.String(url), Credentials: creds})
	if _, err := sc.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String("docmind-dev-connectors")}); err != nil {
		t.Fatal(err)
	}
	sm, err := fc.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("docmind-dev-connector-sync"),
		Definition: aws.String(`{"StartAt":"Done","States":{"Done":{"Type":"Succeed"}}}`),
		RoleArn:    aws.String("arn:aws:iam::123456789012:role/docmind-dev-ConnectorSyncRole")})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Connectors.ScheduleGroup, cfg.Connectors.SyncStateMachineARN = "docmind-dev-connectors", aws.ToString(sm.StateMachineArn)
	cfg.Connectors.SchedulerRoleARN = "arn:aws:iam::123456789012:role/docmind-dev-ConnectorSchedulerRole"
	cfg.Connectors.SyncInterval = 6 * time.Hour
	conns, err := connectorOps(ctx, cfg, lib.DB)
	if err != nil || conns == nil {
		t.Fatalf("connectorOps with the stack's outputs = %v, %v", conns, err)
	}
	h, err := newHandler(cfg, caps{URLAuth: authIAM, MaxTokens: 256, StreamMax: time.Minute, IdleGap: time.Second, Reserve: 3 * time.Second},
		httpfn.Stores{SQL: lib.DB, Keyword: lib.Keyword, Vectors: lib.Vectors, KV: memkv.New(nil, 0)}, offload{Connectors: conns}, uploads{}, tr,
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string) (int, string) {
		t.Helper()
		res, err := lambdaurl.Wrap(h)(ctx, urlEvent(method, path, body, nil))
		if err != nil {
			t.Fatal(err)
		}
		s := readPrelude(t, res)
		b, _ := io.ReadAll(s.body)
		return s.prelude.StatusCode, string(bytes.TrimSpace(b))
	}
	if code, body := call("GET", "/api/kbs", ""); code != http.StatusOK || !strings.Contains(body, `"connectors":true`) {
		t.Fatalf("GET /api/kbs = %d %s; want connectors true", code, body)
	}
	base := "/api/kbs/" + lib.KB.ID + "/connectors"
	if code, body := call("POST", base, `{"name":"handbook-site","type":"web","settings":{"url":"`+site.URL+`/handbook/"}}`); code != http.StatusCreated {
		t.Fatalf("POST %s = %d %s; want 201", base, code, body)
	}
	schedule := func() string {
		out, err := sc.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("handbook-site"), GroupName: aws.String("docmind-dev-connectors")})
		if err != nil {
			return ""
		}
		return aws.ToString(out.ScheduleExpression)
	}
	if got := schedule(); got != "rate(6 hours)" {
		t.Fatalf("after the add: schedule %q; want rate(6 hours)", got)
	}
	if code, body := call("POST", base+"/handbook-site/check", ""); code != http.StatusOK {
		t.Fatalf("POST check = %d %s; want 200", code, body)
	}
	if code, body := call("PATCH", base+"/handbook-site", `{"interval":"30m"}`); code != http.StatusOK || schedule() != "rate(30 minutes)" {
		t.Fatalf("PATCH interval 30m = %d %s, schedule %q; want rate(30 minutes)", code, body, schedule())
	}
	if code, body := call("POST", base+"/handbook-site/sync", ""); code != http.StatusAccepted || !strings.Contains(body, `"running"`) {
		t.Fatalf("POST sync = %d %s; want 202 running", code, body)
	}
	execs, err := fc.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: sm.StateMachineArn})
	if err != nil || len(execs.Executions) != 1 {
		t.Fatalf("executions after POST sync = %+v, %v; want one", execs, err)
	}
	if code, body := call("DELETE", base+"/handbook-site", ""); code != http.StatusOK || schedule() != "" {
		t.Fatalf("DELETE = %d %s, schedule %q; want 200 and no schedule", code, body, schedule())
	}
	execs, err = fc.ListExecutions(ctx, &sfn.ListExecutionsInput{StateMachineArn: sm.StateMachineArn})
	if err != nil || len(execs.Executions) != 2 {
		t.Fatalf("executions after DELETE = %+v, %v; want the sync and the removal", execs, err)
	}
}
