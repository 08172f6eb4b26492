package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/connector/awsops"
	"github.com/docmind/docmind/shared/connector/awssched"
	"github.com/docmind/docmind/shared/connector/manage"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// connectorOps serves the page's connector settings (GET/POST /api/kbs/{kb}/connectors, check, sync,
// PATCH, DELETE) with the same routes and checks as `docmind serve`, over the stack's sync state
// machine and EventBridge Scheduler schedules (shared/connector/awsops). Nil, and the page shows no
// connector settings, unless the stack's connector outputs (DOCMIND_CONNECTOR_SCHEDULE_GROUP and the
// rest) are set. A check or a dry run asks the source from here (through netx, with
// DOCMIND_CONNECTOR_ALLOW_HOSTS); no connector credential is read here: the variables are not
// looked at and no secret reader is given.
func connectorOps(ctx context.Context, cfg config.Config, db *sqldb.DB) (httpapi.Connectors, error) {
	cn := cfg.Connectors
	if !cn.OnAWS() || db == nil {
		return nil, nil
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	noVariables := func(string) string { return "" }
	return &awsops.Ops{Store: db, Members: &manage.Manager{Store: db, Config: cfg, Getenv: noVariables},
		Schedules: awssched.Schedules{Client: scheduler.NewFromConfig(ac), Group: cn.ScheduleGroup, StateMachineARN: cn.SyncStateMachineARN,
			RoleARN: cn.SchedulerRoleARN, DeadLetterARN: cn.ScheduleDLQARN},
		Default: cn.SyncInterval, Executions: sfn.NewFromConfig(ac), StateMachineARN: cn.SyncStateMachineARN}, nil
}
