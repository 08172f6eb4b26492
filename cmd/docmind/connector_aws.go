package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/awssched"
	"github.com/docmind/docmind/shared/connector/manage"
	"github.com/docmind/docmind/shared/rag"
)

// connectorAWS is what `connector add` and `remove` use on an AWS deployment (the
// DOCMIND_CONNECTOR_SCHEDULE_GROUP variables set, docs/connectors.md "On AWS"): the EventBridge
// Scheduler schedules and Secrets Manager (a connector's credentials_secret is checked when it is
// added). Locally both are nil: serve's schedule reads the connectors at each tick, and credentials
// come from files or variables.
func connectorAWS(ctx context.Context, cfg config.Config) (connector.Scheduler, connector.SecretReader, error) {
	cn := cfg.Connectors
	if !cn.OnAWS() {
		return nil, nil, nil
	}
	ac, err := awsrt.LoadConfig(ctx)
	if err != nil {
		return nil, nil, rag.Errorf("docmind", rag.KindInvalid, "AWS configuration: %v", err)
	}
	if ac.Region == "" {
		return nil, nil, rag.Errorf("docmind", rag.KindInvalid, "no AWS region: set AWS_REGION to the stack's")
	}
	return awssched.Schedules{Client: scheduler.NewFromConfig(ac), Group: cn.ScheduleGroup, StateMachineARN: cn.SyncStateMachineARN,
			RoleARN: cn.SchedulerRoleARN, DeadLetterARN: cn.ScheduleDLQARN},
		awsrt.SecretsManager{Client: secretsmanager.NewFromConfig(ac)}, nil
}

// scheduleConnector creates or replaces c's schedule (every manage.Every: its own interval, else
// SyncInterval; none when that is 0) and says so.
func scheduleConnector(e env, cfg config.Config, sched connector.Scheduler, c rag.Connector) error {
	every := manage.Every(c, cfg.Connectors.SyncInterval)
	if every <= 0 {
		if err := sched.Delete(e.ctx, c.Tenant, c.Name); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "no schedule (DOCMIND_CONNECTOR_SYNC_INTERVAL=0): start the sync state machine with {\"connector\":%q} to sync\n", c.Name)
		return nil
	}
	if err := sched.Upsert(e.ctx, c, every); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "scheduled: every %s (EventBridge Scheduler schedule %s in group %s)\n", every, awssched.ScheduleName(c.Name), cfg.Connectors.ScheduleGroup)
	return nil
}
