package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/docmind/docmind/shared/awspreflight"
	"github.com/docmind/docmind/shared/awsrt"
)

// cmdAWS: docmind aws preflight --stack NAME [--region R] [--samconfig FILE] [--json]
func cmdAWS(e env, args []string) int {
	if len(args) > 0 && args[0] == "smoke" {
		return cmdAWSSmoke(e, args[1:])
	}
	if len(args) == 0 || args[0] != "preflight" {
		fmt.Fprintln(e.stderr, "usage: docmind aws preflight --stack NAME [--region R] [--samconfig FILE] [--json]\n       docmind aws smoke --stack NAME [--region R] [--key-env VAR] [--json]")
		return exitConfig
	}
	fs := flag.NewFlagSet("docmind aws preflight", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	stack := fs.String("stack", "", "the CloudFormation stack (deployed, or named by stack_name in samconfig.toml)")
	region := fs.String("region", "", "AWS region (default: the AWS CLI's configuration)")
	samconfig := fs.String("samconfig", "samconfig.toml", "where a stack not deployed yet takes its parameters from")
	asJSON := fs.Bool("json", false, "print the findings as JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return exitConfig
	}
	if *stack == "" {
		fmt.Fprintln(e.stderr, "docmind aws preflight: --stack is required")
		return exitConfig
	}
	var opts []func(*awsconfig.LoadOptions) error
	if *region != "" {
		opts = append(opts, awsconfig.WithRegion(*region))
	}
	ac, err := awsrt.LoadConfig(e.ctx, opts...)
	if err != nil {
		fmt.Fprintf(e.stderr, "docmind aws preflight: AWS configuration: %v\n", err)
		return exitConfig
	}
	if ac.Region == "" {
		fmt.Fprintln(e.stderr, "docmind aws preflight: no region: pass --region or set AWS_REGION")
		return exitConfig
	}
	planned, err := samconfigParams(*samconfig, *stack)
	if err != nil {
		fmt.Fprintf(e.stderr, "docmind aws preflight: %v\n", err)
		return exitConfig
	}
	c := awspreflight.Checker{
		Stacks:    cloudformation.NewFromConfig(ac),
		Functions: lambda.NewFromConfig(ac),
		Secrets:   secretsmanager.NewFromConfig(ac),
		Network:   ec2.NewFromConfig(ac),
		// a custom endpoint (AWS_ENDPOINT_URL, e.g. an emulator) has no bucket subdomains
		Buckets: s3.NewFromConfig(ac, func(o *s3.Options) { o.UsePathStyle = os.Getenv("AWS_ENDPOINT_URL") != "" }),
		Region:  ac.Region, Stack: *stack, Planned: planned,
		// the functions' own extra CA for tls=rds (docs/aws-runtime.md), when the stack uses one
		MySQLCAFile: e.getenv("DOCMIND_MYSQL_CA_FILE"),
	}
	findings, err := c.Run(e.ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "docmind aws preflight: %v\n", err)
		return exitFail
	}
	failed := false
	for _, f := range findings {
		failed = failed || f.Status == awspreflight.Fail
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(findings)
	} else {
		for _, f := range findings {
			fmt.Fprintf(e.stdout, "%-4s %-22s %s\n", strings.ToUpper(string(f.Status)), f.Check, f.Message)
			if f.Fix != "" {
				fmt.Fprintf(e.stdout, "     %-22s fix: %s\n", "", f.Fix)
			}
		}
	}
	if failed {
		return exitFail
	}
	return exitOK
}

// samconfigParams returns the parameter_overrides of the samconfig.toml environment whose stack_name is
// stack; none (and no error) when the file is missing or no environment deploys that stack.
func samconfigParams(path, stack string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	envOf, overrides := "", map[string]string{} // env -> its deploy overrides
	section := ""
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			section = strings.Trim(l, "[]")
			continue
		}
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		env, _, _ := strings.Cut(section, ".")
		switch {
		case k == "stack_name":
			if s, err := strconv.Unquote(v); err == nil && s == stack {
				envOf = env
			}
		case k == "parameter_overrides" && strings.HasSuffix(section, ".deploy.parameters"):
			s, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("%s [%s] parameter_overrides: %v", path, section, err)
			}
			overrides[env] = s
		}
	}
	if envOf == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`([A-Za-z0-9]+)=("(?:[^"\\]|\\.)*"|\S*)`).FindAllStringSubmatch(overrides[envOf], -1) {
		v := m[2]
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		out[m[1]] = v
	}
	return out, nil
}
