package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
)

// TestAWSPreflightCommand drives `docmind aws preflight` as a user would, through the SDK's default
// configuration: moto_server for CloudFormation, Secrets Manager and EC2 (AWS_ENDPOINT_URL) and a fake
// Lambda account-settings endpoint (AWS_ENDPOINT_URL_LAMBDA, moto does not serve it). The stack is not
// deployed, so the parameters come from samconfig.toml's environment whose stack_name matches.
func TestAWSPreflightCommand(t *testing.T) {
	moto := mototest.Start(t)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"AccountLimit":{"ConcurrentExecutions":1000,"UnreservedConcurrentExecutions":1000},"AccountUsage":{"FunctionCount":0}}`)
	}))
	defer fake.Close()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": moto, "AWS_ENDPOINT_URL_LAMBDA": fake.URL, "AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"), "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	run1 := func(samconfig string) (int, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"aws", "preflight", "--stack", "docmind-dev", "--region", "us-east-1", "--samconfig", samconfig}, &out, &errb, os.Getenv)
		return code, out.String() + errb.String()
	}
	cfg := filepath.Join(dir, "samconfig.toml")
	write := func(overrides string) {
		body := "version = 0.1\n[dev.global.parameters]\nstack_name = \"docmind-dev\"\n[dev.deploy.parameters]\nparameter_overrides = \"" + strings.ReplaceAll(overrides, `"`, `\"`) + "\"\n"
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write(`Stage=dev DeployProfile=dev`)
	code, out := run1(cfg)
	if code != exitFail || !strings.Contains(out, "FAIL stack") || !strings.Contains(out, "make deploy-guided") || !strings.Contains(out, "SubnetIds") {
		t.Fatalf("samconfig without the guided answers: exit %d\n%s", code, out)
	}

	write(`Stage=dev SubnetIds="subnet-0a,subnet-0b" SecurityGroupIds=sg-1 MySQLSecretArn=arn:aws:secretsmanager:us-east-1:123456789012:secret:none-AbCdEf MilvusSecretArn=arn:aws:secretsmanager:us-east-1:123456789012:secret:none2-AbCdEf MilvusAddr=m:19530 RedisAddr=r:6379`)
	code, out = run1(cfg)
	for _, want := range []string{"OK   stack", "OK   lambda-concurrency", "FAIL secret MySQLSecretArn", "FAIL secret MilvusSecretArn", "FAIL subnets", "fix: create it"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if code != exitFail {
		t.Errorf("exit %d with failures, want %d", code, exitFail)
	}
	var errb bytes.Buffer
	if code := run(context.Background(), []string{"aws", "preflight"}, new(bytes.Buffer), &errb, os.Getenv); code != exitConfig || !strings.Contains(errb.String(), "--stack is required") {
		t.Errorf("no --stack: exit %d %s", code, errb.String())
	}
}
