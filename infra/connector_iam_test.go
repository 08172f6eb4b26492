package infra

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// The connector roles as CloudFormation receives them (aws-sam-translator's output): every action and
// resource each may use is exactly the list below, so a grant added by hand or by a SAM policy template
// fails here until it is named. The schedules' role may only start the sync machine (and dead-letter);
// the sync machine may only invoke its function, start and follow ingestions and its own Distributed
// Map children, and read its manifests; the function reads only its connectors' secrets and the run's
// staging, and deletes what a deletion at the source deletes.
func TestConnectorRolesLeastPrivilege(t *testing.T) {
	samTranslator(t)
	envs := deployEnvs(t)
	p := maps.Clone(envs[0].params)
	p["AWS::StackName"], p["AWS::Region"], p["AWS::AccountId"], p["AWS::Partition"] = stackA, region, account, "aws"
	out := samTransform(t, []map[string]string{p})
	s := newStack(t, out[0], stackA, region, account, maps.Clone(envs[0].params))
	arn := func(f string, a ...any) string {
		return strings.NewReplacer("REGION", region, "ACCOUNT", account, "STACK", stackA).Replace(fmt.Sprintf(f, a...))
	}
	bucket := arn("arn:aws:s3:::STACK-ACCOUNT-REGION")
	tenant := "default"
	want := map[string][]string{
		"ConnectorSchedulerRole": {
			"states:StartExecution " + arn("arn:aws:states:REGION:ACCOUNT:stateMachine:STACK-connector-sync"),
			"sqs:SendMessage " + arn("arn:aws:sqs:REGION:ACCOUNT:STACK-connector-schedule-dlq"),
		},
		"ConnectorSyncStateMachineRole": {
			"lambda:InvokeFunction " + arn("arn:aws:lambda:REGION:ACCOUNT:function:STACK-connector*"),
			"states:StartExecution " + arn("arn:aws:states:REGION:ACCOUNT:stateMachine:STACK-ingest"),
			"states:DescribeExecution " + arn("arn:aws:states:REGION:ACCOUNT:execution:STACK-ingest:*"),
			"states:StopExecution " + arn("arn:aws:states:REGION:ACCOUNT:execution:STACK-ingest:*"),
			"events:PutTargets " + arn("arn:aws:events:REGION:ACCOUNT:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"),
			"events:PutRule " + arn("arn:aws:events:REGION:ACCOUNT:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"),
			"events:DescribeRule " + arn("arn:aws:events:REGION:ACCOUNT:rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"),
			"states:StartExecution " + arn("arn:aws:states:REGION:ACCOUNT:stateMachine:STACK-connector-sync"),
			"states:DescribeExecution " + arn("arn:aws:states:REGION:ACCOUNT:execution:STACK-connector-sync/*"),
			"states:StopExecution " + arn("arn:aws:states:REGION:ACCOUNT:execution:STACK-connector-sync/*"),
			"s3:GetObject " + bucket + "/staging/" + tenant + "/connector/*",
		},
		"ConnectorFunctionRole": {
			"secretsmanager:GetSecretValue " + p["MySQLSecretArn"],
			"secretsmanager:GetSecretValue " + p["MilvusSecretArn"],
			"secretsmanager:GetSecretValue " + arn("arn:aws:secretsmanager:REGION:ACCOUNT:secret:STACK/connectors/*"),
			"s3:GetObject " + bucket + "/staging/" + tenant + "/connector/*",
			"s3:PutObject " + bucket + "/staging/" + tenant + "/connector/*",
			"s3:GetObject " + bucket + "/sources/" + tenant + "/*",
			"s3:DeleteObject " + bucket + "/sources/" + tenant + "/*",
			"s3:DeleteObject " + bucket + "/staging/" + tenant + "/*",
			"s3:ListBucket " + bucket + " (prefix sources/" + tenant + "/*,staging/" + tenant + "/*)",
		},
	}
	for role, allowed := range want {
		if s.props(role) == nil {
			t.Errorf("%s: not in the transformed template", role)
			continue
		}
		var got []string
		for _, st := range s.roleStatements(role) {
			res := strs(st["Resource"])
			for _, a := range strs(st["Action"]) {
				for _, r := range res {
					if r == "*" && strings.HasPrefix(a, "logs:") {
						continue // log delivery, allowed on * by TestTransformedTemplate's list
					}
					g := a + " " + r
					if pre := asMap(asMap(st["Condition"])["StringLike"])["s3:prefix"]; pre != nil {
						g += " (prefix " + strings.Join(strs(pre), ",") + ")"
					}
					got = append(got, g)
				}
			}
		}
		slices.Sort(got)
		exp := slices.Sorted(slices.Values(allowed))
		for _, g := range got {
			if !slices.Contains(exp, g) {
				t.Errorf("%s grants %s, which the connector sync does not need", role, g)
			}
		}
		for _, e := range exp {
			if !slices.Contains(got, e) {
				t.Errorf("%s lacks %s, which the connector sync needs", role, e)
			}
		}
		for _, m := range strs(s.props(role)["ManagedPolicyArns"]) {
			if _, ok := starAllowed[m]; !ok {
				t.Errorf("%s: managed policy %s is not in the reviewed list", role, m)
			}
		}
	}
	// the schedules' role is assumed by EventBridge Scheduler for this account's schedules in this
	// stack's group only
	trust := fmt.Sprint(s.props("ConnectorSchedulerRole")["AssumeRolePolicyDocument"])
	for _, w := range []string{"scheduler.amazonaws.com", "aws:SourceAccount:" + account, arn("schedule/STACK-connectors/*")} {
		if !strings.Contains(trust, w) {
			t.Errorf("ConnectorSchedulerRole trust policy %s lacks %s", trust, w)
		}
	}
}

// The function serving the page (QueryFunction) runs its connector settings on AWS (awsops): it may
// start the sync state machine (syncs and removals), create, update and delete schedules in the
// stack's connector group and pass the scheduler's role to EventBridge Scheduler only; it is granted
// no other Step Functions, Scheduler or IAM action, does not invoke the connector function, and reads
// no connector secret.
func TestQueryConnectorGrantsLeastPrivilege(t *testing.T) {
	samTranslator(t)
	envs := deployEnvs(t)
	p := maps.Clone(envs[0].params)
	p["AWS::StackName"], p["AWS::Region"], p["AWS::AccountId"], p["AWS::Partition"] = stackA, region, account, "aws"
	out := samTransform(t, []map[string]string{p})
	s := newStack(t, out[0], stackA, region, account, maps.Clone(envs[0].params))
	arn := func(f string) string {
		return strings.NewReplacer("REGION", region, "ACCOUNT", account, "STACK", stackA).Replace(f)
	}
	want := []string{
		"states:StartExecution " + arn("arn:aws:states:REGION:ACCOUNT:stateMachine:STACK-connector-sync"),
		"scheduler:CreateSchedule " + arn("arn:aws:scheduler:REGION:ACCOUNT:schedule/STACK-connectors/*"),
		"scheduler:UpdateSchedule " + arn("arn:aws:scheduler:REGION:ACCOUNT:schedule/STACK-connectors/*"),
		"scheduler:DeleteSchedule " + arn("arn:aws:scheduler:REGION:ACCOUNT:schedule/STACK-connectors/*"),
		"iam:PassRole " + fmt.Sprint(s.getAtt("ConnectorSchedulerRole", "Arn")) + " (to scheduler.amazonaws.com)",
	}
	var got []string
	for _, st := range s.roleStatements("QueryFunctionRole") {
		for _, a := range strs(st["Action"]) {
			svc, _, _ := strings.Cut(a, ":")
			if svc != "states" && svc != "scheduler" && svc != "iam" && !(svc == "lambda" && slices.ContainsFunc(strs(st["Resource"]),
				func(r string) bool { return strings.Contains(r, "-connector") })) {
				if a == "secretsmanager:GetSecretValue" && slices.ContainsFunc(strs(st["Resource"]), func(r string) bool { return strings.Contains(r, "/connectors/") }) {
					t.Errorf("QueryFunctionRole reads connector secrets: %v", st)
				}
				continue
			}
			for _, r := range strs(st["Resource"]) {
				g := a + " " + r
				if svc == "iam" {
					g += " (to " + fmt.Sprint(asMap(asMap(st["Condition"])["StringEquals"])["iam:PassedToService"]) + ")"
				}
				got = append(got, g)
			}
		}
	}
	slices.Sort(got)
	exp := slices.Sorted(slices.Values(want))
	if !slices.Equal(got, exp) {
		t.Errorf("QueryFunctionRole's connector grants:\n got  %q\n want %q", got, exp)
	}
}
