package infra

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/awspreflight"
)

// guidedAnswers stands for what `make deploy-guided` (sam deploy --guided) writes to samconfig.toml for
// the parameters that have no default: the account's VPC, secrets and store endpoints.
var guidedAnswers = map[string]string{
	"SubnetIds":        "subnet-0a1b2c3d4e5f60718,subnet-0f1e2d3c4b5a69788",
	"SecurityGroupIds": "sg-0123456789abcdef0",
	"MySQLSecretArn":   "arn:aws:secretsmanager:ap-southeast-1:111122223333:secret:docmind/aurora-AbCdEf",
	"MilvusAddr":       "https://in03-0123456789abcde.serverless.aws-ap-southeast-1.cloud.zilliz.com:443",
	"MilvusSecretArn":  "arn:aws:secretsmanager:ap-southeast-1:111122223333:secret:docmind/milvus-AbCdEf",
	"RedisAddr":        "docmind-abc123.serverless.apse1.cache.amazonaws.com:6379",
}

// the two stacks side by side in one account and region: the second name is the longest the template
// allows (35 characters: its bucket is <stack>-<account>-<region>, at most 63), in the longest region name
const (
	stackA  = "docmind-a"
	stackB  = "docmind-tenant-b-0123456789abcdefgh"
	region  = "ap-southeast-1"
	account = "111122223333"
)

// physicalNameLimits: the longest name AWS accepts per type (and S3's lowercase rule below).
var physicalNameLimits = map[string]int{
	"AWS::Lambda::Function": 64, "AWS::S3::Bucket": 63, "AWS::SQS::Queue": 80, "AWS::StepFunctions::StateMachine": 80,
	"AWS::Logs::LogGroup": 512, "AWS::Scheduler::Schedule": 64, "AWS::Scheduler::ScheduleGroup": 64, "AWS::CloudWatch::Alarm": 255, "AWS::ApiGatewayV2::Api": 128,
	"AWS::CloudFront::OriginAccessControl": 64, "AWS::IAM::Role": 64, "AWS::SNS::Topic": 256,
}

// noPhysicalName: resource types whose instances have no name unique in the account and region.
var noPhysicalName = []string{
	"AWS::ApiGatewayV2::Authorizer", "AWS::ApiGatewayV2::Integration", "AWS::ApiGatewayV2::Route", "AWS::ApiGatewayV2::Stage",
	"AWS::CloudFront::Distribution", "AWS::Lambda::EventSourceMapping", "AWS::Lambda::Permission", "AWS::Lambda::Url",
	"AWS::SQS::QueuePolicy", "AWS::SNS::Subscription", "Custom::DocmindSchema",
}

// starAllowed: IAM statements that may grant on Resource "*", each with the reason. Inline statements are
// keyed by their sorted actions; managed policies (which SAM adds on its own) by ARN.
var starAllowed = map[string]string{
	"logs:CreateLogDelivery,logs:DeleteLogDelivery,logs:DescribeLogGroups,logs:DescribeResourcePolicies,logs:GetLogDelivery,logs:ListLogDeliveries,logs:PutResourcePolicy,logs:UpdateLogDelivery": "a state machine's CloudWatch Logs delivery: these actions accept no resource narrower than * (Step Functions developer guide, logging to CloudWatch Logs)",
	"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole":     "SAM adds it to every function role: logs:CreateLogGroup/CreateLogStream/PutLogEvents; each function writes only its own log group, which the stack creates with a retention",
	"arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole": "SAM adds it with VpcConfig: the ENI actions (ec2:CreateNetworkInterface, Describe/DeleteNetworkInterface, Assign/UnassignPrivateIpAddresses) support no resource-level permissions",
	"arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess":                       "SAM adds it with Tracing Active (functions and state machines): xray:PutTraceSegments/PutTelemetryRecords/GetSampling* support no resource-level permissions",

	// issue 21: scans and images on AWS
	"textract:AnalyzeDocument,textract:GetDocumentAnalysis,textract:StartDocumentAnalysis": "the extract function's Amazon Textract calls: Textract's actions support no resource-level permissions (Service Authorization Reference), so * is the only resource; the documents it reads are bounded by the role's s3:GetObject on sources/<tenant>/*",
}

type envSet struct {
	env    string
	params map[string]string
}

// deployEnvs: samconfig.toml's dev and prod parameter_overrides, plus what the guided deploy asks once
// (prod also names its RDS Proxy, which the template's ProdUsesRdsProxy rule requires).
func deployEnvs(t *testing.T) []envSet {
	t.Helper()
	var out []envSet
	for _, env := range []string{"dev", "prod"} {
		p := samconfigOverrides(t, filepath.Join("..", "samconfig.toml"), env)
		for k, v := range guidedAnswers {
			if _, ok := p[k]; !ok {
				p[k] = v
			}
		}
		if env == "prod" && p["MySQLProxyEndpoint"] == "" {
			p["MySQLProxyEndpoint"] = "docmind-proxy.proxy-abcdefghijkl.ap-southeast-1.rds.amazonaws.com"
		}
		out = append(out, envSet{env, p})
	}
	return out
}

// TestTransformedTemplate transforms template.yaml with aws-sam-translator for two stacks x dev/prod and
// checks what would break a second stack, a new account or a paged engineer: physical-name collisions,
// grants on "*", concurrency, synchronous timeouts and alarm coverage.
func TestTransformedTemplate(t *testing.T) {
	samTranslator(t)
	envs := deployEnvs(t)
	var sets []map[string]string
	type inst struct{ stack, env string }
	var insts []inst
	for _, name := range []string{stackA, stackB} {
		for _, e := range envs {
			p := maps.Clone(e.params)
			p["AWS::StackName"], p["AWS::Region"], p["AWS::AccountId"], p["AWS::Partition"] = name, region, account, "aws"
			sets = append(sets, p)
			insts = append(insts, inst{name, e.env})
		}
	}
	out := samTransform(t, sets)
	stacks := map[inst]*cfnStack{}
	for i, in := range insts {
		over := maps.Clone(sets[i])
		for _, k := range []string{"AWS::StackName", "AWS::Region", "AWS::AccountId", "AWS::Partition"} {
			delete(over, k)
		}
		checkParameterValues(t, out[i], in.env, over)
		stacks[in] = newStack(t, out[i], in.stack, region, account, over)
	}

	t.Run("FirstDeployNeedsOnlyGuidedAnswers", func(t *testing.T) {
		var required []string
		for k, p := range asMap(out[0]["Parameters"]) {
			if _, ok := asMap(p)["Default"]; !ok {
				required = append(required, k)
			}
		}
		slices.Sort(required)
		if want := slices.Sorted(maps.Keys(guidedAnswers)); !slices.Equal(required, want) {
			t.Errorf("parameters without a default %v, want exactly the guided deploy's %v: give a new parameter a safe default", required, want)
		}
		if pre := slices.Sorted(slices.Values(awspreflight.Required)); !slices.Equal(required, pre) {
			t.Errorf("docmind aws preflight requires %v, the template %v", pre, required)
		}
	})

	t.Run("Rules", func(t *testing.T) {
		for in, s := range stacks {
			if msg := s.failedRule(); msg != "" {
				t.Errorf("%s/%s: rule fails: %s", in.stack, in.env, msg)
			}
		}
		// and the rule bites: prod without a proxy is refused before anything is created
		for _, e := range envs {
			p := maps.Clone(e.params)
			p["MySQLProxyEndpoint"] = ""
			s := newStack(t, out[0], stackA, region, account, p)
			if msg := s.failedRule(); (e.env == "prod") != (msg != "") {
				t.Errorf("%s without MySQLProxyEndpoint: rule result %q; prod must be refused, dev allowed", e.env, msg)
			}
		}
	})

	t.Run("PhysicalNames", func(t *testing.T) {
		seen := map[string]string{} // type + name -> stack/env/logical id
		for _, in := range insts {
			s := stacks[in]
			for lid := range s.resources() {
				if !s.active(lid) {
					continue
				}
				typ := s.typeOf(lid)
				if slices.Contains(noPhysicalName, typ) {
					continue
				}
				if _, ok := physicalNameProps[typ]; !ok {
					t.Errorf("%s is a %s: add its name property to physicalNameProps (or the type to noPhysicalName)", lid, typ)
					continue
				}
				n, explicit := s.explicitName(lid)
				if !explicit {
					continue // CloudFormation generates stack-logicalid-suffix
				}
				if !strings.Contains(n, s.name) {
					t.Errorf("%s/%s: %s is named %q, which does not include the stack name: a second stack collides", in.stack, in.env, lid, n)
				}
				if max := physicalNameLimits[typ]; len(n) > max {
					t.Errorf("%s/%s: %s name %q is %d characters, over the %d %s allows", in.stack, in.env, lid, n, len(n), max, typ)
				}
				if typ == "AWS::S3::Bucket" && !regexp.MustCompile(`^[a-z0-9][a-z0-9.-]+[a-z0-9]$`).MatchString(n) {
					t.Errorf("%s/%s: bucket name %q is not a valid S3 name", in.stack, in.env, n)
				}
				key := typ + " " + n
				if prev, ok := seen[key]; ok && !strings.HasPrefix(prev, in.stack+"/") {
					t.Errorf("%s %q is named the same in %s and %s/%s/%s", typ, n, prev, in.stack, in.env, lid)
				}
				seen[key] = in.stack + "/" + in.env + "/" + lid
			}
		}
	})

	t.Run("NoGrantOnStarOutsideTheAllowList", func(t *testing.T) {
		found := map[string]bool{}
		for _, s := range stacks {
			for _, lid := range s.lidsOfType("AWS::IAM::Role") {
				p := s.props(lid)
				for _, arn := range strs(p["ManagedPolicyArns"]) {
					found[arn] = true
					if _, ok := starAllowed[arn]; !ok {
						t.Errorf("role %s has managed policy %s, which grants on *: scope it inline, or add it to starAllowed with the reason", lid, arn)
					}
				}
				for _, st := range s.roleStatements(lid) {
					if _, has := st["NotResource"]; has {
						t.Errorf("role %s: a statement with NotResource (%v)", lid, st["Action"])
					}
					if !slices.ContainsFunc(strs(st["Resource"]), func(r string) bool { return strings.Contains(r, "*") && !strings.Contains(r, ":") }) {
						continue
					}
					acts := strs(st["Action"])
					slices.Sort(acts)
					key := strings.Join(acts, ",")
					found[key] = true
					if _, ok := starAllowed[key]; !ok {
						t.Errorf("role %s grants %s on Resource *: name the resources, or add it to starAllowed with the reason", lid, key)
					}
				}
			}
		}
		for k := range starAllowed {
			if !found[k] {
				t.Errorf("starAllowed lists %s, which the transformed template no longer has: remove it", k)
			}
		}
	})

	t.Run("Concurrency", func(t *testing.T) {
		for in, s := range stacks {
			reserved := map[string]float64{}
			total := 0.0
			for _, lid := range s.lidsOfType("AWS::Lambda::Function") {
				if r, ok := number(s.props(lid)["ReservedConcurrentExecutions"]); ok {
					reserved[lid] = r
					total += r
				}
			}
			if in.env == "dev" && len(reserved) > 0 {
				t.Errorf("%s/dev reserves concurrency %v: a new account (quota 10, 100 kept unreserved) cannot", in.stack, reserved)
			}
			if in.env == "prod" {
				for _, lid := range s.lidsOfType("AWS::Lambda::Function") {
					if s.opensSQL(lid) && reserved[lid] < 1 {
						t.Errorf("%s/prod: %s opens Aurora connections but has no reserved concurrency (unbounded connections)", in.stack, lid)
					}
				}
				over := maps.Clone(envs[1].params)
				if pre := awspreflight.Reservations(over); float64(pre) != total {
					t.Errorf("%s/prod reserves %v, but docmind aws preflight computes %d for its parameters: update awspreflight's defaults", in.stack, total, pre)
				}
				delete(over, "ChatReservedConcurrency") // and with a default in play
				if s2 := newStack(t, s.tmpl, in.stack, region, account, over); float64(awspreflight.Reservations(over)) != s2.reservedTotal() {
					t.Errorf("with ChatReservedConcurrency at its default, preflight computes %d, the template reserves %v", awspreflight.Reservations(over), s2.reservedTotal())
				}
				if in.stack == stackA {
					t.Logf("prod reserves %v functions' concurrency, %v in all: the account needs a quota of at least %v (100 stay unreserved)", len(reserved), total, total+100)
				}
			}
			for _, lid := range s.lidsOfType("AWS::Lambda::EventSourceMapping") {
				p := s.props(lid)
				fn := s.functionByName(fmt.Sprint(p["FunctionName"]))
				max, hasMax := number(asMap(p["ScalingConfig"])["MaximumConcurrency"])
				if !hasMax {
					t.Errorf("%s/%s: event source %s has no ScalingConfig.MaximumConcurrency: the poller scales to the account's limit", in.stack, in.env, lid)
					continue
				}
				if max < 2 {
					t.Errorf("%s/%s: event source %s MaximumConcurrency %v, below SQS's minimum of 2", in.stack, in.env, lid, max)
				}
				if r, ok := reserved[fn]; ok && max > r {
					t.Errorf("%s/%s: event source %s may run %v concurrent batches but %s is reserved %v: throttled receives count towards the DLQ", in.stack, in.env, lid, max, fn, r)
				}
			}
		}
	})

	t.Run("SynchronousChainsShrinkInward", func(t *testing.T) {
		for in, s0 := range stacks {
			// with every optional synchronous call on: the canary, rerank and grade through their functions
			p := maps.Clone(envs[slices.IndexFunc(envs, func(e envSet) bool { return e.env == in.env })].params)
			p["CanaryQuestions"] = `{"questions":[{"question":"q","document":"d.md","phrase":"p"}]}`
			p["RerankViaFunction"], p["GradeViaFunction"] = "true", "true"
			s := newStack(t, s0.tmpl, in.stack, region, account, p)
			edges := s.syncEdges()
			if len(edges) == 0 {
				t.Fatal("found no synchronous call at all: the chain discovery is broken")
			}
			for _, e := range edges {
				if e.innerS >= e.callerS {
					t.Errorf("%s/%s: %s (%v s) calls %s synchronously, whose timeout is %v s: not shorter, so the caller gives up while it runs on",
						in.stack, in.env, e.caller, e.callerS, e.inner, e.innerS)
				} else if in == (inst{stackA, "prod"}) {
					t.Logf("%s %v s > %s %v s", e.caller, e.callerS, e.inner, e.innerS)
				}
			}
		}
	})

	t.Run("RedisSecret", func(t *testing.T) {
		const secret = "arn:aws:secretsmanager:ap-southeast-1:111122223333:secret:docmind/redis-AbCdEf"
		users := redisUsers(t, stacks[inst{stackA, "dev"}])
		if len(users) == 0 {
			t.Fatal("no function opens Redis: the discovery is broken (it looks for httpfn.RedisOptions)")
		}
		for in, s0 := range stacks {
			p := maps.Clone(envs[slices.IndexFunc(envs, func(e envSet) bool { return e.env == in.env })].params)
			for _, arn := range []string{"", secret} {
				p["RedisSecretArn"] = arn
				s := newStack(t, s0.tmpl, in.stack, region, account, p)
				for _, fn := range s.lidsOfType("AWS::Lambda::Function") {
					got := fmt.Sprint(asMap(asMap(s.props(fn)["Environment"])["Variables"])["DOCMIND_REDIS_SECRET_ARN"])
					grants := s.grantsSecret(fn, arn)
					want := users[fn] && arn != ""
					switch {
					case want && got != arn:
						t.Errorf("%s/%s: %s opens Redis but DOCMIND_REDIS_SECRET_ARN is %q, want the RedisSecretArn %q", in.stack, in.env, fn, got, arn)
					case want && !grants:
						t.Errorf("%s/%s: %s reads the Redis secret but its role may not GetSecretValue on exactly %s", in.stack, in.env, fn, arn)
					case !want && grants:
						t.Errorf("%s/%s (RedisSecretArn %q): %s may read the Redis secret but does not need it", in.stack, in.env, arn, fn)
					case !users[fn] && got != "<nil>" && got != "":
						t.Errorf("%s/%s: %s does not open Redis but is given DOCMIND_REDIS_SECRET_ARN %q", in.stack, in.env, fn, got)
					}
				}
			}
		}
	})

	t.Run("StateMachinesTraced", func(t *testing.T) {
		for in, s := range stacks {
			for _, sm := range s.lidsOfType("AWS::StepFunctions::StateMachine") {
				if tc := asMap(s.props(sm)["TracingConfiguration"]); tc["Enabled"] != true {
					t.Errorf("%s/%s: state machine %s has TracingConfiguration %v: its executions drop out of the question's X-Ray trace", in.stack, in.env, sm, tc)
				}
			}
		}
	})

	t.Run("AlarmCoverage", func(t *testing.T) {
		for in, s := range stacks {
			s.checkAlarms(t, in.stack+"/"+in.env)
			// with the optional parts on: the canary's function is covered, the e-mail is subscribed
			p := maps.Clone(envs[slices.IndexFunc(envs, func(e envSet) bool { return e.env == in.env })].params)
			p["CanaryQuestions"] = `{"questions":[{"question":"q","document":"d.md","phrase":"p"}]}`
			p["AlarmEmail"] = "oncall@example.com"
			full := newStack(t, s.tmpl, in.stack, region, account, p)
			if !full.active("CanaryFunction") {
				t.Fatal("CanaryQuestions set but no CanaryFunction")
			}
			full.checkAlarms(t, in.stack+"/"+in.env+"+canary")
			subs := 0
			for _, lid := range full.lidsOfType("AWS::SNS::Subscription") {
				if sp := full.props(lid); sp["Protocol"] == "email" && sp["Endpoint"] == "oncall@example.com" {
					subs++
				}
			}
			if subs != 1 || len(s.lidsOfType("AWS::SNS::Subscription")) != 0 {
				t.Errorf("%s/%s: AlarmEmail should add exactly one e-mail subscription (got %d) and none without it", in.stack, in.env, subs)
			}
		}
	})
}

// reservedTotal sums the reserved concurrency of the active functions.
func (s *cfnStack) reservedTotal() float64 {
	total := 0.0
	for _, lid := range s.lidsOfType("AWS::Lambda::Function") {
		if r, ok := number(s.props(lid)["ReservedConcurrentExecutions"]); ok {
			total += r
		}
	}
	return total
}

// checkParameterValues: a value outside AllowedValues, AllowedPattern or MinValue fails the deploy.
func checkParameterValues(t *testing.T, tmpl map[string]any, env string, vals map[string]string) {
	t.Helper()
	for k, v := range vals {
		p := asMap(asMap(tmpl["Parameters"])[k])
		if p == nil {
			continue // newStack reports it
		}
		if av := strs(p["AllowedValues"]); len(av) > 0 && !slices.Contains(av, v) {
			t.Errorf("%s: %s=%q is not one of %v", env, k, v, av)
		}
		if pat, ok := p["AllowedPattern"].(string); ok && !regexp.MustCompile("^(?:"+pat+")$").MatchString(v) {
			t.Errorf("%s: %s=%q does not match %s", env, k, v, pat)
		}
		if min, ok := number(p["MinValue"]); ok {
			if n, ok := number(v); !ok || n < min {
				t.Errorf("%s: %s=%q is below its MinValue %v", env, k, v, min)
			}
		}
	}
}

// failedRule evaluates the template's Rules; it returns the first failing assertion's description.
func (s *cfnStack) failedRule() string {
	for name, raw := range asMap(s.tmpl["Rules"]) {
		r := asMap(raw)
		if c, ok := r["RuleCondition"]; ok && !s.eval(c).(bool) {
			continue
		}
		for _, a := range asList(r["Assertions"]) {
			if !s.eval(asMap(a)["Assert"]).(bool) {
				return name + ": " + fmt.Sprint(asMap(a)["AssertDescription"])
			}
		}
	}
	return ""
}

// roleStatements returns a role's inline Allow statements, resolved.
func (s *cfnStack) roleStatements(role string) []map[string]any {
	var out []map[string]any
	for _, pol := range asList(s.props(role)["Policies"]) {
		st := asMap(asMap(pol)["PolicyDocument"])["Statement"]
		if m, ok := st.(map[string]any); ok {
			st = []any{m}
		}
		for _, e := range asList(st) {
			if m := asMap(e); m["Effect"] == "Allow" {
				out = append(out, m)
			}
		}
	}
	return out
}

// functionStatements returns the statements of a function's execution role.
func (s *cfnStack) functionStatements(fn string) []map[string]any {
	raw := asList(asMap(asMap(asMap(s.resources()[fn])["Properties"])["Role"])["Fn::GetAtt"])
	if len(raw) == 0 {
		return nil
	}
	return s.roleStatements(fmt.Sprint(raw[0]))
}

// opensSQL: the function may read the Aurora secret, so it opens SQL connections.
func (s *cfnStack) opensSQL(fn string) bool {
	secret := fmt.Sprint(s.params["MySQLSecretArn"])
	for _, st := range s.functionStatements(fn) {
		if slices.Contains(strs(st["Action"]), "secretsmanager:GetSecretValue") && slices.Contains(strs(st["Resource"]), secret) {
			return true
		}
	}
	return false
}

// grantsSecret: some statement of the function's role allows GetSecretValue on exactly arn (any arn
// when it is empty: then no grant should name a secret this check knows).
func (s *cfnStack) grantsSecret(fn, arn string) bool {
	for _, st := range s.functionStatements(fn) {
		if !slices.Contains(strs(st["Action"]), "secretsmanager:GetSecretValue") {
			continue
		}
		res := strs(st["Resource"])
		if arn != "" && slices.Contains(res, arn) {
			return true
		}
		if arn == "" && slices.ContainsFunc(res, func(r string) bool { return r == "" || strings.Contains(r, "redis") }) {
			return true
		}
	}
	return false
}

// redisUsers: the functions whose main package opens Redis (calls httpfn.RedisOptions or imports the
// Redis store), read from their sources under functions/ through the Makefile's build targets.
func redisUsers(t *testing.T, s *cfnStack) map[string]bool {
	t.Helper()
	users := map[string]bool{}
	for _, lid := range s.lidsOfType("AWS::Lambda::Function") {
		dir, err := makeTarget(lid)
		if err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join("..", "functions", dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), "httpfn.RedisOptions(") || strings.Contains(string(b), `"github.com/docmind/docmind/shared/store/redis"`) {
				users[lid] = true
			}
		}
	}
	return users
}

var functionArn = regexp.MustCompile(`:function:([^:]+)`)

// functionByName maps a function name, ARN or ARN pattern to the logical id of an active function.
func (s *cfnStack) functionByName(ref string) string {
	name := ref
	if m := functionArn.FindStringSubmatch(ref); m != nil {
		name = m[1]
	}
	pat := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(name), `\*`, ".*") + "$")
	for _, lid := range s.lidsOfType("AWS::Lambda::Function") {
		if pat.MatchString(s.physicalName(lid)) {
			return lid
		}
	}
	return ""
}

type syncEdge struct {
	caller, inner   string
	callerS, innerS float64
}

// syncEdges finds every synchronous call and both timeouts: the HTTP API's integrations, functions
// that StartSyncExecution a state machine or invoke another function, and state machines' Tasks.
func (s *cfnStack) syncEdges() []syncEdge {
	timeout := func(fn string) float64 {
		v, ok := number(s.props(fn)["Timeout"])
		if !ok {
			v = 3 // Lambda's default
		}
		return v
	}
	var edges []syncEdge
	for _, lid := range s.lidsOfType("AWS::ApiGatewayV2::Integration") {
		p := s.props(lid)
		ms, ok := number(p["TimeoutInMillis"])
		if !ok {
			ms = 30000
		}
		if fn := s.functionByName(fmt.Sprint(p["IntegrationUri"])); fn != "" {
			edges = append(edges, syncEdge{"HTTP API " + lid, fn, ms / 1000, timeout(fn)})
		}
	}
	machines := map[string]map[string]any{} // ARN -> definition
	for _, sm := range s.lidsOfType("AWS::StepFunctions::StateMachine") {
		p := s.props(sm)
		def := fmt.Sprint(p["DefinitionString"])
		for k, v := range asMap(p["DefinitionSubstitutions"]) {
			def = strings.ReplaceAll(def, "${"+k+"}", fmt.Sprint(v))
		}
		var asl map[string]any
		if err := json.Unmarshal([]byte(def), &asl); err != nil {
			s.t.Fatalf("%s definition: %v", sm, err)
		}
		smTimeout, hasTimeout := number(asl["TimeoutSeconds"])
		if !hasTimeout && p["StateMachineType"] == "EXPRESS" {
			smTimeout, hasTimeout = 300, true // an Express workflow's limit
		}
		machines[fmt.Sprint(s.getAtt(sm, "Arn"))] = map[string]any{"lid": sm, "timeout": smTimeout}
		walkTasks(asMap(asl["States"]), func(name string, task map[string]any) {
			res := fmt.Sprint(task["Resource"])
			if strings.HasPrefix(res, "arn:aws:states:::lambda:invoke") {
				res = fmt.Sprint(asMap(task["Parameters"])["FunctionName"])
			}
			fn := s.functionByName(res)
			if fn == "" {
				return
			}
			if hasTimeout {
				edges = append(edges, syncEdge{sm, fn + " (Task " + name + ")", smTimeout, timeout(fn)})
			}
			if ts, ok := number(task["TimeoutSeconds"]); ok {
				edges = append(edges, syncEdge{sm + " Task " + name, fn, ts, timeout(fn)})
			}
		})
	}
	for _, fn := range s.lidsOfType("AWS::Lambda::Function") {
		for _, st := range s.functionStatements(fn) {
			acts := strs(st["Action"])
			for _, r := range strs(st["Resource"]) {
				if slices.Contains(acts, "states:StartSyncExecution") {
					if m, ok := machines[r]; ok {
						edges = append(edges, syncEdge{fn, fmt.Sprint(m["lid"]), timeout(fn), m["timeout"].(float64)})
					}
				}
				if slices.Contains(acts, "lambda:InvokeFunction") {
					if callee := s.functionByName(r); callee != "" && callee != fn {
						edges = append(edges, syncEdge{fn, callee, timeout(fn), timeout(callee)})
					}
				}
			}
		}
	}
	return edges
}

func walkTasks(states map[string]any, f func(string, map[string]any)) {
	for name, raw := range states {
		st := asMap(raw)
		if st["Type"] == "Task" {
			f(name, st)
		}
		for _, k := range []string{"Iterator", "ItemProcessor"} {
			walkTasks(asMap(asMap(st[k])["States"]), f)
		}
		for _, b := range asList(st["Branches"]) {
			walkTasks(asMap(asMap(b)["States"]), f)
		}
	}
}

type alarm struct {
	lid, namespace, metric, stat, missing string
	dims                                  map[string]string
	actions                               []string
}

// checkAlarms: every function has an Errors and a Throttles alarm; every state machine its failed,
// timed-out and throttled executions; every queue with a dead-letter queue its age, every dead-letter
// queue its depth; drift breaches on missing data; query and api have p99 duration; every alarm
// notifies the stack's own topic.
func (s *cfnStack) checkAlarms(t *testing.T, where string) {
	t.Helper()
	topics := map[string]bool{}
	for _, lid := range s.lidsOfType("AWS::SNS::Topic") {
		topics[fmt.Sprint(s.ref(lid))] = true
	}
	if len(topics) == 0 {
		t.Errorf("%s: the stack creates no alarm topic", where)
	}
	var alarms []alarm
	for _, lid := range s.lidsOfType("AWS::CloudWatch::Alarm") {
		p := s.props(lid)
		a := alarm{lid: lid, namespace: fmt.Sprint(p["Namespace"]), metric: fmt.Sprint(p["MetricName"]),
			missing: fmt.Sprint(p["TreatMissingData"]), dims: map[string]string{}, actions: strs(p["AlarmActions"])}
		a.stat = fmt.Sprint(p["Statistic"])
		if e, ok := p["ExtendedStatistic"]; ok {
			a.stat = fmt.Sprint(e)
		}
		for _, d := range asList(p["Dimensions"]) {
			a.dims[fmt.Sprint(asMap(d)["Name"])] = fmt.Sprint(asMap(d)["Value"])
		}
		if !slices.ContainsFunc(a.actions, func(x string) bool { return topics[x] }) {
			t.Errorf("%s: alarm %s notifies %v, not the stack's alarm topic", where, lid, a.actions)
		}
		alarms = append(alarms, a)
	}
	has := func(ns, metric, dim, val, stat string) bool {
		return slices.ContainsFunc(alarms, func(a alarm) bool {
			return a.namespace == ns && a.metric == metric && (dim == "" || a.dims[dim] == val) && (stat == "" || a.stat == stat)
		})
	}
	for _, fn := range s.lidsOfType("AWS::Lambda::Function") {
		name := s.physicalName(fn)
		for _, m := range []string{"Errors", "Throttles"} {
			if !has("AWS/Lambda", m, "FunctionName", name, "") {
				t.Errorf("%s: function %s has no %s alarm", where, fn, m)
			}
		}
	}
	for _, fn := range []string{"QueryFunction", "ApiFunction"} {
		if !has("AWS/Lambda", "Duration", "FunctionName", s.physicalName(fn), "p99") {
			t.Errorf("%s: %s has no p99 Duration alarm", where, fn)
		}
	}
	for _, sm := range s.lidsOfType("AWS::StepFunctions::StateMachine") {
		arn := fmt.Sprint(s.ref(sm))
		for _, m := range []string{"ExecutionsFailed", "ExecutionsTimedOut", "ExecutionThrottled"} {
			if !has("AWS/States", m, "StateMachineArn", arn, "") {
				t.Errorf("%s: state machine %s has no %s alarm", where, sm, m)
			}
		}
	}
	for _, q := range s.lidsOfType("AWS::SQS::Queue") {
		dlq := fmt.Sprint(asMap(s.props(q)["RedrivePolicy"])["deadLetterTargetArn"])
		if dlq == "<nil>" {
			continue
		}
		if !has("AWS/SQS", "ApproximateAgeOfOldestMessage", "QueueName", s.physicalName(q), "") {
			t.Errorf("%s: queue %s has no ApproximateAgeOfOldestMessage alarm", where, q)
		}
		name := dlq[strings.LastIndex(dlq, ":")+1:]
		if !has("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", name, "") {
			t.Errorf("%s: dead-letter queue %s has no depth alarm", where, name)
		}
	}
	drift := slices.IndexFunc(alarms, func(a alarm) bool { return a.namespace == "Docmind/Consistency" && a.metric == "RemainingTotal" })
	if drift < 0 {
		t.Errorf("%s: no consistency drift alarm", where)
	} else if alarms[drift].missing != "breaching" {
		t.Errorf("%s: the drift alarm treats missing data as %s: a check that stops running must page", where, alarms[drift].missing)
	}
}

// TestDeployRefusesMissingParameters: `make deploy` runs infra/deploy-params.sh first, which names the
// parameters without a default that samconfig.toml's section lacks and points at `make deploy-guided`.
func TestDeployRefusesMissingParameters(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("needs bash")
	}
	run := func(cfg, env string) (string, error) {
		cmd := exec.Command("bash", "deploy-params.sh", env, cfg)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	out, err := run(filepath.Join("..", "samconfig.toml"), "dev")
	if err == nil {
		t.Fatalf("the shipped samconfig.toml has no VPC or secrets, yet the check passed: %s", out)
	}
	for k := range guidedAnswers {
		if !strings.Contains(out, k) {
			t.Errorf("the refusal does not name %s:\n%s", k, out)
		}
	}
	if !strings.Contains(out, "make deploy-guided ENV=dev") {
		t.Errorf("the refusal does not say what to run:\n%s", out)
	}
	// what sam deploy --guided writes: the section's parameter_overrides with every answer
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(guidedAnswers)) {
		fmt.Fprintf(&b, ` %s=\"%s\"`, k, guidedAnswers[k])
	}
	cfg := filepath.Join(t.TempDir(), "samconfig.toml")
	body := "version = 0.1\n[dev.deploy.parameters]\nstack_name = \"docmind-dev\"\nparameter_overrides = \"Stage=\\\"dev\\\"" + b.String() + "\"\n" +
		"[prod.deploy.parameters]\nparameter_overrides = \"Stage=prod\"\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(cfg, "dev"); err != nil {
		t.Errorf("a guided samconfig.toml is refused: %v\n%s", err, out)
	}
	if out, err := run(cfg, "prod"); err == nil {
		t.Errorf("the prod section lacks the answers, yet passed:\n%s", out)
	}
}
