package awssched

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
	"github.com/docmind/docmind/shared/rag"
)

func TestRate(t *testing.T) {
	for every, want := range map[time.Duration]string{
		time.Minute: "rate(1 minute)", 15 * time.Minute: "rate(15 minutes)", 90 * time.Minute: "rate(90 minutes)",
		time.Hour: "rate(1 hour)", 6 * time.Hour: "rate(6 hours)", 24 * time.Hour: "rate(1 day)", 48 * time.Hour: "rate(2 days)",
	} {
		if got, err := Rate(every); err != nil || got != want {
			t.Errorf("Rate(%s) = %q, %v; want %q", every, got, err, want)
		}
	}
	for _, bad := range []time.Duration{0, -time.Hour, 30 * time.Second, 90 * time.Second} {
		if _, err := Rate(bad); !rag.Is(err, rag.KindInvalid) {
			t.Errorf("Rate(%s) = %v; want Invalid", bad, err)
		}
	}
}

// Against moto_server's EventBridge Scheduler: a connector's schedule is created in the stack's group
// with the sync state machine as its target, {"connector": NAME} as input and the scheduler role; an
// Upsert of an existing schedule updates it in place; Delete removes it and is idempotent.
func TestSchedulesAgainstMoto(t *testing.T) {
	url := mototest.Start(t)
	ctx := context.Background()
	cl := scheduler.New(scheduler.Options{Region: "eu-west-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if _, err := cl.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String("docmind-dev-connectors")}); err != nil {
		t.Fatal(err)
	}
	s := Schedules{Client: cl, Group: "docmind-dev-connectors",
		StateMachineARN: "arn:aws:states:eu-west-1:123456789012:stateMachine:docmind-dev-connector-sync",
		RoleARN:         "arn:aws:iam::123456789012:role/docmind-dev-ConnectorSchedulerRole",
		DeadLetterARN:   "arn:aws:sqs:eu-west-1:123456789012:docmind-dev-connector-schedule-dlq"}
	c := rag.Connector{Tenant: "default", Name: "eng-wiki", Type: "confluence", KBID: "kb_1"}
	if err := s.Upsert(ctx, c, time.Hour); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	get := func() *scheduler.GetScheduleOutput {
		t.Helper()
		out, err := cl.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("eng-wiki"), GroupName: aws.String(s.Group)})
		if err != nil {
			t.Fatalf("GetSchedule: %v", err)
		}
		return out
	}
	got := get()
	var input map[string]string
	json.Unmarshal([]byte(aws.ToString(got.Target.Input)), &input)
	if aws.ToString(got.ScheduleExpression) != "rate(1 hour)" || aws.ToString(got.Target.Arn) != s.StateMachineARN ||
		aws.ToString(got.Target.RoleArn) != s.RoleARN || input["connector"] != "eng-wiki" || len(input) != 1 ||
		aws.ToString(got.GroupName) != s.Group || got.State != types.ScheduleStateEnabled ||
		got.Target.DeadLetterConfig == nil || aws.ToString(got.Target.DeadLetterConfig.Arn) != s.DeadLetterARN {
		t.Fatalf("schedule = %+v (target %+v); want rate(1 hour) starting the sync machine with {connector: eng-wiki}", got, got.Target)
	}
	if err := s.Upsert(ctx, c, 15*time.Minute); err != nil {
		t.Fatalf("second Upsert: %v", err)
	}
	if got := get(); aws.ToString(got.ScheduleExpression) != "rate(15 minutes)" {
		t.Fatalf("after Upsert every 15 min: %s", aws.ToString(got.ScheduleExpression))
	}
	if err := s.Upsert(ctx, c, 30*time.Second); !rag.Is(err, rag.KindInvalid) {
		t.Fatalf("Upsert every 30 s: %v; want Invalid", err)
	}
	if err := s.Delete(ctx, "default", "eng-wiki"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err := cl.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("eng-wiki"), GroupName: aws.String(s.Group)})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("GetSchedule after Delete: %v; want ResourceNotFound", err)
	}
	if err := s.Delete(ctx, "default", "eng-wiki"); err != nil {
		t.Fatalf("second Delete: %v; want nil", err)
	}
	// a group that does not exist: the schedule cannot be made, and the error says so
	bad := s
	bad.Group = "no-such-group"
	if err := bad.Upsert(ctx, c, time.Hour); err == nil {
		t.Fatal("Upsert into a missing group succeeded")
	}
}
