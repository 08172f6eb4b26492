// Package infra holds the deployment artefacts' checks: template.yaml parsed strictly by goformation
// (the JS cfn-lint misjudges SAM), and the wiring between the template, the functions and the Makefile.
package infra

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/goformation/v7"

	"github.com/docmind/docmind/shared/ingest"
)

func TestTemplateParsesStrictly(t *testing.T) {
	tmpl, err := goformation.Open(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatalf("template.yaml: %v", err)
	}
	fns := tmpl.GetAllServerlessFunctionResources()
	q, ok := fns["QueryFunction"]
	if !ok {
		t.Fatalf("no QueryFunction in %v", fns)
	}
	if q.FunctionUrlConfig == nil || q.FunctionUrlConfig.InvokeMode == nil || *q.FunctionUrlConfig.InvokeMode != "RESPONSE_STREAM" {
		t.Fatal("QueryFunction must stream: FunctionUrlConfig.InvokeMode RESPONSE_STREAM (lambdaurl only streams then)")
	}
	if q.FunctionUrlConfig.AuthType != "AWS_IAM" {
		t.Fatalf("Function URL auth %q: SR-02 prefers AWS_IAM behind CloudFront", q.FunctionUrlConfig.AuthType)
	}
	g := tmpl.Globals["Function"]
	if g == nil {
		t.Fatal("no Globals.Function")
	}
	// every function in the template is built (sam build, BuildMethod makefile) by a Makefile target
	// build-<LogicalId> from a main package under functions/, and every main package has a function
	built := map[string]bool{}
	for name := range fns {
		dir, err := makeTarget(name)
		if err != nil {
			t.Error(err)
			continue
		}
		built[dir] = true
		if _, err := os.Stat(filepath.Join("..", "functions", dir, "main.go")); err != nil {
			if dir == "consistency" {
				t.Logf("%s: functions/consistency is not in this tree yet (written with issue 11's reconcile work)", name)
				continue
			}
			t.Errorf("%s is built from functions/%s, which has no main.go", name, dir)
		}
	}
	entries, _ := os.ReadDir(filepath.Join("..", "functions"))
	for _, e := range entries {
		if e.IsDir() && e.Name() != "internal" && !built[e.Name()] {
			t.Errorf("functions/%s is built by no function in template.yaml", e.Name())
		}
	}
}

// makeTarget returns the functions/<dir> the Makefile's build-<name> target builds.
func makeTarget(name string) (string, error) {
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		return "", err
	}
	lines := strings.Split(string(mk), "\n")
	for i, l := range lines {
		head, _, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(l, "\t") || !slices.Contains(strings.Fields(head), "build-"+name) {
			continue
		}
		for _, r := range lines[i+1:] {
			if !strings.HasPrefix(r, "\t") {
				break
			}
			if m := regexp.MustCompile(`\./functions/([a-z]+)`).FindStringSubmatch(r); m != nil && strings.Contains(r, "$(ARTIFACTS_DIR)/bootstrap") {
				return m[1], nil
			}
		}
		return "", fmt.Errorf("Makefile target build-%s builds no ./functions/<dir> into $(ARTIFACTS_DIR)/bootstrap", name)
	}
	return "", fmt.Errorf("%s uses BuildMethod makefile but the Makefile has no build-%s target", name, name)
}

func TestTemplateGlobalsMatchLambdaBuild(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"Runtime: provided.al2023", "Architectures: [arm64]", "Handler: bootstrap", "DOCMIND_SQL_DRIVER: mysql", "DOCMIND_VECTOR_DRIVER: milvus"} {
		if !strings.Contains(s, want) {
			t.Errorf("template.yaml lacks %q", want)
		}
	}
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"GOARCH=arm64", "CGO_ENABLED=0", "lambda.norpc", "-trimpath", "build-QueryFunction"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("Makefile lacks %q", want)
		}
	}
}

// TestQueueRetriesOutlastLease: an ObjectRemoved that meets a running ingestion's lease is answered
// Conflict and redelivered after the queue's visibility timeout. If the deliveries ran out before the
// lease could expire, the removal would be dead-lettered and the deleted file would stay searchable. So:
// the state machine's timeout <= the lease TTL (an execution never outlives its lease), and visibility
// timeout x max receives (at the parameter's smallest allowed value and at its default) > the lease TTL.
func TestQueueRetriesOutlastLease(t *testing.T) {
	tmpl, err := goformation.Open(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := tmpl.GetSQSQueueWithName("IngestQueue")
	if err != nil || q.VisibilityTimeout == nil {
		t.Fatalf("IngestQueue and its VisibilityTimeout: %v", err)
	}
	// goformation resolves the Ref to the parameter's default: look at the source for the Ref itself
	if !regexp.MustCompile(`maxReceiveCount: !Ref QueueMaxReceiveCount\b`).MatchString(readTemplate(t)) {
		t.Fatal("the queue's redrive policy must take maxReceiveCount from the QueueMaxReceiveCount parameter")
	}
	p, ok := tmpl.Parameters["QueueMaxReceiveCount"]
	if !ok || p.MinValue == nil {
		t.Fatal("QueueMaxReceiveCount needs a MinValue, or a deployment can set it below the lease")
	}
	def, err := strconv.ParseFloat(fmt.Sprint(p.Default), 64)
	if err != nil {
		t.Fatalf("QueueMaxReceiveCount default %v", p.Default)
	}
	lease := ingest.DefaultLeaseTTL
	counts := []float64{*p.MinValue, def}
	// and every samconfig.toml environment that overrides it (a value below MinValue fails the deploy)
	sc, err := os.ReadFile(filepath.Join("..", "samconfig.toml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`QueueMaxReceiveCount=(\d+)`).FindAllStringSubmatch(string(sc), -1) {
		n, _ := strconv.ParseFloat(m[1], 64)
		if n < *p.MinValue {
			t.Errorf("samconfig.toml sets QueueMaxReceiveCount=%v, below the template's MinValue %v", n, *p.MinValue)
		}
		counts = append(counts, n)
	}
	for _, n := range counts {
		if span := time.Duration(n*float64(*q.VisibilityTimeout)) * time.Second; span <= lease {
			t.Errorf("%v receives x %d s visibility = %v, not more than the %v ingestion lease: a removal meeting it is dead-lettered",
				n, *q.VisibilityTimeout, span, lease)
		}
	}
	var asl struct{ TimeoutSeconds int }
	b, err := os.ReadFile(filepath.Join("statemachines", "ingest.asl.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &asl); err != nil || asl.TimeoutSeconds <= 0 {
		t.Fatalf("ingest.asl.json TimeoutSeconds: %v %d", err, asl.TimeoutSeconds)
	}
	if time.Duration(asl.TimeoutSeconds)*time.Second > lease {
		t.Errorf("the state machine runs up to %d s but its lease lasts %v: another execution could take the source meanwhile", asl.TimeoutSeconds, lease)
	}
}

// TestStageFunctionStartsFollowUps: Commit and MarkFailed start a follow-up execution of the ingestion
// state machine (ingest.Workflow.FollowUp). The stage function names it by an ARN built from the state
// machine's Name (a Ref would be a cycle: the machine invokes the function), so the Name, the variable
// and the policy's resource must agree, or every follow-up fails with AccessDenied or a missing machine.
func TestStageFunctionStartsFollowUps(t *testing.T) {
	tmpl := readTemplate(t)
	name := regexp.MustCompile(`(?m)^  IngestStateMachine:\n(?:    .*\n)*?      Name: !Sub (\S+)`).FindStringSubmatch(tmpl)
	if name == nil {
		t.Fatal("IngestStateMachine has no Name: !Sub ...")
	}
	arn := "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:" + name[1]
	stage := regexp.MustCompile(`(?ms)^  StageFunction:\n(.*?)\n  [A-Za-z]+:\n`).FindStringSubmatch(tmpl)
	if stage == nil {
		t.Fatal("no StageFunction")
	}
	if !strings.Contains(stage[1], "DOCMIND_INGEST_STATE_MACHINE_ARN: !Sub "+arn) {
		t.Errorf("StageFunction's DOCMIND_INGEST_STATE_MACHINE_ARN is not %s", arn)
	}
	if !regexp.MustCompile(`Action: states:StartExecution\s+Resource: !Sub ` + regexp.QuoteMeta(arn)).MatchString(stage[1]) {
		t.Errorf("StageFunction may not start %s", arn)
	}
}
