package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
)

// On an AWS deployment (the stack's outputs in DOCMIND_CONNECTOR_SCHEDULE_GROUP and friends) `connector
// add` creates the connector's EventBridge Scheduler schedule and `remove` deletes it, against
// moto_server; a schedule that cannot be made leaves no connector behind; half the variables is a
// configuration error.
func TestConnectorScheduleOnAWS(t *testing.T) {
	moto := mototest.Start(t)
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": moto, "AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "eu-west-1",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"), "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	ctx := context.Background()
	cl := scheduler.New(scheduler.Options{Region: "eu-west-1", BaseEndpoint: aws.String(moto),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	if _, err := cl.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String("docmind-dev-connectors")}); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	env := map[string]string{
		"DOCMIND_CONNECTOR_SCHEDULE_GROUP":         "docmind-dev-connectors",
		"DOCMIND_CONNECTOR_SYNC_STATE_MACHINE_ARN": "arn:aws:states:eu-west-1:123456789012:stateMachine:docmind-dev-connector-sync",
		"DOCMIND_CONNECTOR_SCHEDULER_ROLE_ARN":     "arn:aws:iam::123456789012:role/docmind-dev-ConnectorSchedulerRole",
		"DOCMIND_CONNECTOR_SYNC_INTERVAL":          "30m",
	}
	code, out, errOut := runCLI(t, env, "connector", "add", "handbook-site", "--kb", "handbook", "--type", "web", "--url", "https://docs.example.com/kb/",
		"--no-validate", "--data", data)
	if code != exitOK || !strings.Contains(out, "scheduled: every 30m0s") {
		t.Fatalf("add: exit %d %q %q", code, out, errOut)
	}
	got, err := cl.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("handbook-site"), GroupName: aws.String("docmind-dev-connectors")})
	if err != nil || aws.ToString(got.ScheduleExpression) != "rate(30 minutes)" || aws.ToString(got.Target.Input) != `{"connector":"handbook-site"}` ||
		aws.ToString(got.Target.Arn) != env["DOCMIND_CONNECTOR_SYNC_STATE_MACHINE_ARN"] {
		t.Fatalf("schedule after add: %+v, %v", got, err)
	}
	if code, out, errOut := runCLI(t, env, "connector", "remove", "handbook-site", "--data", data); code != exitOK || !strings.Contains(out, "removed") {
		t.Fatalf("remove: exit %d %q %q", code, out, errOut)
	}
	if _, err := cl.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String("handbook-site"), GroupName: aws.String("docmind-dev-connectors")}); err == nil {
		t.Fatal("the schedule outlived its connector")
	}

	// a connector whose credentials are a Secrets Manager secret: add reads it (moto's Secrets Manager)
	// and never prints it; a secret that does not exist is refused, naming the secret only
	sm := secretsmanager.New(secretsmanager.Options{Region: "eu-west-1", BaseEndpoint: aws.String(moto),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	if _, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("docmind-dev/connectors/eng-wiki"),
		SecretString: aws.String(`{"email":"bot@acme.example","token":"tok-canary-7731"}`)}); err != nil {
		t.Fatal(err)
	}
	settings := filepath.Join(dir, "wiki.json")
	os.WriteFile(settings, []byte(`{"space":"ENG","credentials_secret":"docmind-dev/connectors/eng-wiki"}`), 0o600)
	code, out, errOut = runCLI(t, env, "connector", "add", "eng-wiki", "--kb", "handbook", "--type", "confluence", "--url", "https://acme.atlassian.net/wiki",
		"--config", settings, "--no-validate", "--data", data)
	if code != exitOK || strings.Contains(out+errOut, "tok-canary") {
		t.Fatalf("add with a credentials secret: exit %d %q %q", code, out, errOut)
	}
	os.WriteFile(settings, []byte(`{"space":"ENG","credentials_secret":"docmind-dev/connectors/missing"}`), 0o600)
	code, _, errOut = runCLI(t, env, "connector", "add", "eng-wiki2", "--kb", "handbook", "--type", "confluence", "--url", "https://acme.atlassian.net/wiki",
		"--config", settings, "--no-validate", "--data", data)
	if code == exitOK || !strings.Contains(errOut, "docmind-dev/connectors/missing") {
		t.Fatalf("add with a missing secret: exit %d %q; want refused naming the secret", code, errOut)
	}

	// a group that does not exist: the add fails and records nothing
	bad := map[string]string{}
	for k, v := range env {
		bad[k] = v
	}
	bad["DOCMIND_CONNECTOR_SCHEDULE_GROUP"] = "no-such-group"
	if code, _, errOut := runCLI(t, bad, "connector", "add", "wiki2", "--kb", "handbook", "--type", "web", "--url", "https://docs.example.com/x/",
		"--no-validate", "--data", data); code == exitOK || !strings.Contains(errOut, "its schedule") {
		t.Fatalf("add into a missing group: exit %d %q; want refused", code, errOut)
	}
	if code, out, _ := runCLI(t, env, "connector", "list", "--data", data); code != exitOK || strings.Contains(out, "wiki2") {
		t.Fatalf("list after a refused add: %q; want no wiki2", out)
	}
	half := map[string]string{"DOCMIND_CONNECTOR_SCHEDULE_GROUP": "docmind-dev-connectors"}
	if code, _, errOut := runCLI(t, half, "connector", "list", "--data", data); code != exitConfig || !strings.Contains(errOut, "set all three") {
		t.Fatalf("half the AWS variables: exit %d %q; want a configuration error", code, errOut)
	}
}
