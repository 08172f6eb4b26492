// Package awssched keeps connectors' sync schedules on AWS (issue #23): one EventBridge Scheduler
// schedule per connector, in the stack's schedule group, whose target is the connector sync state
// machine (infra/statemachines/connector-sync.asl.json) started with {"connector": NAME} under a role
// allowed only that. It implements connector.Scheduler.
package awssched

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/smithy-go"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/rag"
)

// Client is the part of the EventBridge Scheduler API used (*scheduler.Client).
type Client interface {
	CreateSchedule(ctx context.Context, in *scheduler.CreateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.CreateScheduleOutput, error)
	UpdateSchedule(ctx context.Context, in *scheduler.UpdateScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.UpdateScheduleOutput, error)
	DeleteSchedule(ctx context.Context, in *scheduler.DeleteScheduleInput, opts ...func(*scheduler.Options)) (*scheduler.DeleteScheduleOutput, error)
}

// Schedules is connector.Scheduler on EventBridge Scheduler.
type Schedules struct {
	Client Client
	// Group is the stack's schedule group (ConnectorScheduleGroup output): deleting the stack deletes
	// its schedules with it.
	Group string
	// StateMachineARN is the sync state machine (ConnectorSyncStateMachineArn output).
	StateMachineARN string
	// RoleARN is the role the scheduler assumes to start it (ConnectorSchedulerRoleArn output).
	RoleARN string
	// DeadLetterARN is the queue a start the scheduler gave up on goes to (ConnectorScheduleDeadLetterQueueArn
	// output; its alarm pages); empty: none.
	DeadLetterARN string
}

var _ connector.Scheduler = Schedules{}

// ScheduleName is a connector's schedule: its name (a connector name, 1-64 of [A-Za-z0-9_-], is a
// valid schedule name), unique within the stack's group, which serves one tenant.
func ScheduleName(name string) string { return name }

// Rate is the schedule expression for every: rate(N minutes|hours|days), whole minutes of at least
// one. Invalid otherwise.
func Rate(every time.Duration) (string, error) {
	if every < time.Minute || every%time.Minute != 0 {
		return "", rag.Errorf("awssched.Rate", rag.KindInvalid, "a sync interval on AWS is whole minutes, at least 1 (got %s)", every)
	}
	n, unit := int64(every/time.Minute), "minute"
	switch {
	case every%(24*time.Hour) == 0:
		n, unit = int64(every/(24*time.Hour)), "day"
	case every%time.Hour == 0:
		n, unit = int64(every/time.Hour), "hour"
	}
	if n != 1 {
		unit += "s"
	}
	return fmt.Sprintf("rate(%d %s)", n, unit), nil
}

// Upsert creates c's schedule, or updates it when it exists (UpdateSchedule replaces every field).
func (s Schedules) Upsert(ctx context.Context, c rag.Connector, every time.Duration) error {
	const op = "awssched.Upsert"
	if err := rag.ValidateConnectorName(c.Name); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	expr, err := Rate(every)
	if err != nil {
		return err
	}
	input, _ := json.Marshal(map[string]string{"connector": c.Name})
	target := &types.Target{Arn: aws.String(s.StateMachineARN), RoleArn: aws.String(s.RoleARN), Input: aws.String(string(input)),
		// a start the scheduler could not make is retried a few times within the hour; a missed run is
		// caught up by the next, which lists everything since the cursor
		RetryPolicy: &types.RetryPolicy{MaximumRetryAttempts: aws.Int32(3), MaximumEventAgeInSeconds: aws.Int32(3600)}}
	if s.DeadLetterARN != "" {
		target.DeadLetterConfig = &types.DeadLetterConfig{Arn: aws.String(s.DeadLetterARN)}
	}
	desc := aws.String(fmt.Sprintf("docmind: sync connector %s (%s) into knowledge base %s", c.Name, c.Type, c.KBID))
	window := &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff}
	_, err = s.Client.CreateSchedule(ctx, &scheduler.CreateScheduleInput{Name: aws.String(ScheduleName(c.Name)), GroupName: aws.String(s.Group),
		ScheduleExpression: aws.String(expr), FlexibleTimeWindow: window, Target: target, State: types.ScheduleStateEnabled, Description: desc})
	var conflict *types.ConflictException
	if errors.As(err, &conflict) {
		_, err = s.Client.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{Name: aws.String(ScheduleName(c.Name)), GroupName: aws.String(s.Group),
			ScheduleExpression: aws.String(expr), FlexibleTimeWindow: window, Target: target, State: types.ScheduleStateEnabled, Description: desc})
	}
	return classify(op, err)
}

// Delete removes the connector's schedule; one already gone is not an error.
func (s Schedules) Delete(ctx context.Context, tenant, name string) error {
	const op = "awssched.Delete"
	if err := rag.ValidateConnectorName(name); err != nil {
		return rag.E(op, rag.KindInvalid, err)
	}
	_, err := s.Client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: aws.String(ScheduleName(name)), GroupName: aws.String(s.Group)})
	var gone *types.ResourceNotFoundException
	if errors.As(err, &gone) {
		return nil
	}
	return classify(op, err)
}

func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "ValidationException":
			return rag.E(op, rag.KindInvalid, err)
		case "AccessDeniedException":
			return rag.E(op, rag.KindPermission, err)
		case "ResourceNotFoundException":
			return rag.E(op, rag.KindNotFound, err) // the group or the state machine is missing
		}
	}
	return rag.E(op, rag.KindUnavailable, err)
}
