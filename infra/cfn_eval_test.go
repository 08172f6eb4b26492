package infra

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The checks in transform_test.go read the template the way CloudFormation will see it: first the real
// aws-sam-translator (the library `sam build`/`sam deploy` use) expands the SAM resources, including what
// SAM adds on its own (roles, managed policies, schedules, event source mappings); then a small evaluator
// below resolves parameters, conditions and intrinsics for one stack name, region and account, giving
// every resource's properties and physical name as that stack would have them.

// samTransformScript reads {"template": path, "jobs": [{"params": {...}}]} on stdin and writes one
// transformed template per job. CodeUri and DefinitionUri are local paths that `sam build` uploads; the
// translator wants S3 locations and inline definitions, which is what SAM CLI itself hands it.
const samTransformScript = `
import json, os, sys, copy
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse
req = json.load(sys.stdin)
base = os.path.dirname(os.path.abspath(req["template"]))
with open(req["template"]) as f:
    tmpl = yaml_parse(f.read())
for r in tmpl["Resources"].values():
    p = r.get("Properties", {})
    if r["Type"] == "AWS::Serverless::Function":
        p["CodeUri"] = "s3://docmind-artifacts/function.zip"
    if r["Type"] == "AWS::Serverless::StateMachine" and isinstance(p.get("DefinitionUri"), str):
        with open(os.path.join(base, p.pop("DefinitionUri"))) as f:
            p["Definition"] = json.load(f)
class NoManagedPolicies:
    def load(self):
        return {}
out = []
for job in req["jobs"]:
    os.environ["AWS_DEFAULT_REGION"] = job["params"]["AWS::Region"]
    out.append(transform(copy.deepcopy(tmpl), job["params"], NoManagedPolicies()))
json.dump(out, sys.stdout)
`

// samTranslator skips the test when python3 or aws-sam-translator is missing.
func samTranslator(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: install it and `python3 -m pip install aws-sam-translator` (.ci/run does)")
	}
	if out, err := exec.Command("python3", "-c", "import samtranslator").CombinedOutput(); err != nil {
		t.Skipf("aws-sam-translator is not installed (`python3 -m pip install aws-sam-translator`; .ci/run does): %s", bytes.TrimSpace(out))
	}
}

// samTransform transforms template.yaml once per parameter set (each with its pseudo parameters).
func samTransform(t *testing.T, sets []map[string]string) []map[string]any {
	t.Helper()
	type job struct {
		Params map[string]any `json:"params"`
	}
	req := struct {
		Template string `json:"template"`
		Jobs     []job  `json:"jobs"`
	}{Template: filepath.Join("..", "template.yaml")}
	for _, s := range sets {
		p := map[string]any{}
		for k, v := range s {
			p[k] = v
		}
		req.Jobs = append(req.Jobs, job{p})
	}
	in, _ := json.Marshal(req)
	cmd := exec.Command("python3", "-c", samTransformScript)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("aws-sam-translator: %v\n%s", err, stderr.String())
	}
	var res []map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("aws-sam-translator output: %v", err)
	}
	return res
}

// samconfigOverrides returns the parameter_overrides of samconfig.toml's [env.deploy.parameters].
func samconfigOverrides(t *testing.T, path, env string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			in = l == "["+env+".deploy.parameters]"
			continue
		}
		if v, ok := strings.CutPrefix(l, "parameter_overrides"); in && ok {
			v = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), "="))
			s, err := strconv.Unquote(v) // a TOML basic string escapes like Go's
			if err != nil {
				t.Fatalf("%s [%s.deploy.parameters] parameter_overrides: %v", path, env, err)
			}
			return parseOverrides(s)
		}
	}
	t.Fatalf("%s has no parameter_overrides in [%s.deploy.parameters]", path, env)
	return nil
}

// parseOverrides reads `Key=value Key="value with spaces"` as sam deploy does.
func parseOverrides(s string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`([A-Za-z0-9]+)=("(?:[^"\\]|\\.)*"|\S*)`).FindAllStringSubmatch(s, -1) {
		v := m[2]
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		out[m[1]] = v
	}
	return out
}

// noValue is AWS::NoValue: the property or list element disappears.
type noValue struct{}

// cfnStack is one deployed instance of a transformed template.
type cfnStack struct {
	t                     *testing.T
	name, region, account string
	tmpl                  map[string]any
	params                map[string]any // string or []any of strings
	conds                 map[string]bool
	names                 map[string]string
}

func newStack(t *testing.T, tmpl map[string]any, name, region, account string, overrides map[string]string) *cfnStack {
	t.Helper()
	s := &cfnStack{t: t, name: name, region: region, account: account, tmpl: tmpl,
		params: map[string]any{}, conds: map[string]bool{}, names: map[string]string{}}
	for k, raw := range asMap(tmpl["Parameters"]) {
		p := asMap(raw)
		v, ok := overrides[k]
		if !ok {
			d, has := p["Default"]
			if !has {
				t.Fatalf("stack %s: parameter %s has no default and no value", name, k)
			}
			v = fmt.Sprint(d)
		}
		if typ := fmt.Sprint(p["Type"]); strings.HasPrefix(typ, "List<") || typ == "CommaDelimitedList" {
			var l []any
			for _, e := range strings.Split(v, ",") {
				l = append(l, strings.TrimSpace(e))
			}
			s.params[k] = l
		} else {
			s.params[k] = v
		}
	}
	for k := range overrides {
		if _, ok := s.params[k]; !ok {
			t.Errorf("stack %s: the value given for %s names no parameter of the template (CloudFormation refuses the deploy)", name, k)
		}
	}
	return s
}

func asMap(v any) map[string]any              { m, _ := v.(map[string]any); return m }
func asList(v any) []any                      { l, _ := v.([]any); return l }
func (s *cfnStack) resources() map[string]any { return asMap(s.tmpl["Resources"]) }

// active reports whether a resource exists in this stack (its Condition holds).
func (s *cfnStack) active(lid string) bool {
	r := asMap(s.resources()[lid])
	c, ok := r["Condition"].(string)
	return r != nil && (!ok || s.cond(c))
}

func (s *cfnStack) cond(name string) bool {
	if v, ok := s.conds[name]; ok {
		return v
	}
	def, ok := asMap(s.tmpl["Conditions"])[name]
	if !ok {
		s.t.Fatalf("no condition %s", name)
	}
	v, ok := s.eval(def).(bool)
	if !ok {
		s.t.Fatalf("condition %s is not a boolean", name)
	}
	s.conds[name] = v
	return v
}

// props returns a resource's properties with every intrinsic resolved.
func (s *cfnStack) props(lid string) map[string]any {
	return asMap(s.eval(asMap(s.resources()[lid])["Properties"]))
}

func (s *cfnStack) typeOf(lid string) string { return fmt.Sprint(asMap(s.resources()[lid])["Type"]) }

// physicalNameProps: the property holding a resource type's account-and-region-unique name.
var physicalNameProps = map[string][]string{
	"AWS::Lambda::Function":                {"FunctionName"},
	"AWS::S3::Bucket":                      {"BucketName"},
	"AWS::SQS::Queue":                      {"QueueName"},
	"AWS::StepFunctions::StateMachine":     {"StateMachineName"},
	"AWS::Logs::LogGroup":                  {"LogGroupName"},
	"AWS::Scheduler::Schedule":             {"Name"},
	"AWS::Scheduler::ScheduleGroup":        {"Name"},
	"AWS::CloudWatch::Alarm":               {"AlarmName"},
	"AWS::ApiGatewayV2::Api":               {"Name"},
	"AWS::CloudFront::OriginAccessControl": {"OriginAccessControlConfig", "Name"},
	"AWS::IAM::Role":                       {"RoleName"},
	"AWS::SNS::Topic":                      {"TopicName"},
}

// explicitName returns the name the template gives a resource, if it gives one.
func (s *cfnStack) explicitName(lid string) (string, bool) {
	path, ok := physicalNameProps[s.typeOf(lid)]
	if !ok {
		return "", false
	}
	var v any = asMap(asMap(s.resources()[lid])["Properties"])
	for _, k := range path {
		v = asMap(v)[k]
	}
	if v == nil {
		return "", false
	}
	str, ok := s.eval(v).(string)
	if !ok {
		s.t.Fatalf("%s: the name of %s does not resolve to a string", s.name, lid)
	}
	return str, true
}

// physicalName is the explicit name, or the one CloudFormation generates (stack-logical-suffix).
func (s *cfnStack) physicalName(lid string) string {
	if n, ok := s.names[lid]; ok {
		return n
	}
	n, ok := s.explicitName(lid)
	if !ok {
		n = s.name + "-" + lid + "-GENERATED"
	}
	s.names[lid] = n
	return n
}

func (s *cfnStack) ref(x string) any {
	switch x {
	case "AWS::StackName":
		return s.name
	case "AWS::Region":
		return s.region
	case "AWS::AccountId":
		return s.account
	case "AWS::Partition":
		return "aws"
	case "AWS::URLSuffix":
		return "amazonaws.com"
	case "AWS::NoValue":
		return noValue{}
	case "AWS::StackId":
		return "arn:aws:cloudformation:" + s.region + ":" + s.account + ":stack/" + s.name + "/id"
	}
	if v, ok := s.params[x]; ok {
		return v
	}
	if _, ok := s.resources()[x]; !ok {
		s.t.Fatalf("%s: Ref %s names no parameter or resource", s.name, x)
	}
	n := s.physicalName(x)
	switch s.typeOf(x) {
	case "AWS::StepFunctions::StateMachine":
		return s.arn("states", "stateMachine:"+n)
	case "AWS::SQS::Queue":
		return "https://sqs." + s.region + ".amazonaws.com/" + s.account + "/" + n
	case "AWS::SNS::Topic":
		return s.arn("sns", n)
	}
	return n
}

func (s *cfnStack) arn(service, rest string) string {
	return "arn:aws:" + service + ":" + s.region + ":" + s.account + ":" + rest
}

func (s *cfnStack) getAtt(lid, attr string) any {
	if _, ok := s.resources()[lid]; !ok {
		s.t.Fatalf("%s: GetAtt %s.%s names no resource", s.name, lid, attr)
	}
	n := s.physicalName(lid)
	switch typ := s.typeOf(lid); {
	case typ == "AWS::Lambda::Function" && attr == "Arn":
		return s.arn("lambda", "function:"+n)
	case typ == "AWS::StepFunctions::StateMachine" && attr == "Arn":
		return s.arn("states", "stateMachine:"+n)
	case typ == "AWS::SQS::Queue" && attr == "Arn":
		return s.arn("sqs", n)
	case typ == "AWS::S3::Bucket" && attr == "Arn":
		return "arn:aws:s3:::" + n
	case typ == "AWS::IAM::Role" && attr == "Arn":
		return "arn:aws:iam::" + s.account + ":role/" + n
	case typ == "AWS::Logs::LogGroup" && attr == "Arn":
		return s.arn("logs", "log-group:"+n+":*")
	case attr == "Name" || attr == "QueueName":
		return n
	}
	return n + "." + attr
}

var subVar = regexp.MustCompile(`\$\{([^}!][^}]*)\}`)

func (s *cfnStack) sub(str string, vars map[string]any) string {
	out := subVar.ReplaceAllStringFunc(str, func(m string) string {
		k := m[2 : len(m)-1]
		if v, ok := vars[k]; ok {
			return fmt.Sprint(s.eval(v))
		}
		if lid, attr, ok := strings.Cut(k, "."); ok {
			return fmt.Sprint(s.getAtt(lid, attr))
		}
		return fmt.Sprint(s.ref(k))
	})
	return strings.ReplaceAll(out, "${!", "${")
}

// eval resolves intrinsic functions; AWS::NoValue drops the element.
func (s *cfnStack) eval(v any) any {
	switch x := v.(type) {
	case []any:
		out := []any{}
		for _, e := range x {
			if r := s.eval(e); r != (noValue{}) {
				out = append(out, r)
			}
		}
		return out
	case map[string]any:
		if len(x) == 1 {
			for k, a := range x {
				if r, ok := s.intrinsic(k, a); ok {
					return r
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			if r := s.eval(e); r != (noValue{}) {
				out[k] = r
			}
		}
		return out
	}
	return v
}

func (s *cfnStack) intrinsic(fn string, a any) (any, bool) {
	args := asList(a)
	switch fn {
	case "Ref":
		return s.ref(fmt.Sprint(a)), true
	case "Condition":
		return s.cond(fmt.Sprint(a)), true
	case "Fn::If":
		if s.cond(fmt.Sprint(args[0])) {
			return s.eval(args[1]), true
		}
		return s.eval(args[2]), true
	case "Fn::Equals":
		return fmt.Sprint(s.eval(args[0])) == fmt.Sprint(s.eval(args[1])), true
	case "Fn::Not":
		return !s.eval(args[0]).(bool), true
	case "Fn::And", "Fn::Or":
		all := fn == "Fn::And"
		for _, c := range args {
			if s.eval(c).(bool) != all {
				return !all, true
			}
		}
		return all, true
	case "Fn::Sub":
		if str, ok := a.(string); ok {
			return s.sub(str, nil), true
		}
		return s.sub(fmt.Sprint(args[0]), asMap(args[1])), true
	case "Fn::Join":
		var parts []string
		for _, e := range asList(s.eval(args[1])) {
			parts = append(parts, fmt.Sprint(e))
		}
		return strings.Join(parts, fmt.Sprint(args[0])), true
	case "Fn::GetAtt":
		if str, ok := a.(string); ok {
			lid, attr, _ := strings.Cut(str, ".")
			return s.getAtt(lid, attr), true
		}
		return s.getAtt(fmt.Sprint(args[0]), fmt.Sprint(args[1])), true
	case "Fn::Split":
		var out []any
		for _, e := range strings.Split(fmt.Sprint(s.eval(args[1])), fmt.Sprint(args[0])) {
			out = append(out, e)
		}
		return out, true
	case "Fn::Select":
		i, _ := strconv.Atoi(fmt.Sprint(s.eval(args[0])))
		l := asList(s.eval(args[1]))
		if i >= len(l) {
			s.t.Fatalf("%s: Fn::Select %d of %d elements", s.name, i, len(l))
		}
		return l[i], true
	}
	if strings.HasPrefix(fn, "Fn::") {
		s.t.Fatalf("%s: the evaluator does not know %s: teach it", s.name, fn)
	}
	return nil, false
}

// number reads a resolved numeric property.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// strs reads a string or a list of strings.
func strs(v any) []string {
	if str, ok := v.(string); ok {
		return []string{str}
	}
	var out []string
	for _, e := range asList(v) {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// lidsOfType lists the active resources of a type, sorted.
func (s *cfnStack) lidsOfType(typ string) []string {
	var out []string
	for lid := range s.resources() {
		if s.typeOf(lid) == typ && s.active(lid) {
			out = append(out, lid)
		}
	}
	slices.Sort(out)
	return out
}
