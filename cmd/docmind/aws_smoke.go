package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/awssmoke"
)

// cmdAWSSmoke: docmind aws smoke --stack NAME [--region R] [--key-env VAR] [--kb NAME] [--question Q]
// [--timeout D] [--json]. The API key comes from an environment variable, never a flag (flags end up in
// shell history and process lists).
func cmdAWSSmoke(e env, args []string) int {
	fs := flag.NewFlagSet("docmind aws smoke", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	stack := fs.String("stack", "", "the deployed CloudFormation stack")
	region := fs.String("region", "", "AWS region (default: the AWS CLI's configuration)")
	keyEnv := fs.String("key-env", "DOCMIND_SMOKE_KEY", "the environment variable holding an API key of an editor (or admin) of the stack's tenant")
	kb := fs.String("kb", "smoke", "the knowledge base the smoke document is uploaded to (created when missing)")
	question := fs.String("question", "", "the question asked about the smoke document (default: a summary, long enough to stream)")
	timeout := fs.Duration("timeout", 10*time.Minute, "the whole run's limit")
	ready := fs.Duration("ready", 5*time.Minute, "how long the upload may take to be ingested")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	if err := fs.Parse(args); err != nil {
		return exitConfig
	}
	key := e.getenv(*keyEnv)
	switch {
	case *stack == "":
		fmt.Fprintln(e.stderr, "docmind aws smoke: --stack is required")
		return exitConfig
	case key == "":
		fmt.Fprintf(e.stderr, "docmind aws smoke: set %s to an API key of the stack's tenant (docs/aws.md, Smoke test)\n", *keyEnv)
		return exitConfig
	}
	ctx, cancel := context.WithTimeout(e.ctx, *timeout)
	defer cancel()
	var opts []func(*awsconfig.LoadOptions) error
	if *region != "" {
		opts = append(opts, awsconfig.WithRegion(*region))
	}
	ac, err := awsrt.LoadConfig(ctx, opts...)
	if err != nil {
		fmt.Fprintf(e.stderr, "docmind aws smoke: AWS configuration: %v\n", err)
		return exitConfig
	}
	if ac.Region == "" {
		fmt.Fprintln(e.stderr, "docmind aws smoke: no region: pass --region or set AWS_REGION")
		return exitConfig
	}
	out, err := awssmoke.ReadOutputs(ctx, cloudformation.NewFromConfig(ac), *stack)
	if err != nil {
		fmt.Fprintf(e.stderr, "docmind aws smoke: %v\n", err)
		return exitFail
	}
	s := awssmoke.Smoke{Out: out, Stack: *stack, Key: key, Lambda: lambda.NewFromConfig(ac), KB: *kb, Question: *question, Ready: *ready}
	results := s.Run(ctx)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(results)
	} else {
		for _, r := range results {
			fmt.Fprintf(e.stdout, "%-4s %-14s %s\n", strings.ToUpper(string(r.Status)), r.Check, r.Message)
			if r.Look != "" && r.Status != awssmoke.Pass {
				fmt.Fprintf(e.stdout, "     %-14s look at: %s\n", "", r.Look)
			}
		}
	}
	if awssmoke.Failed(results) {
		return exitFail
	}
	return exitOK
}
