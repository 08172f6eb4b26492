// Package awspreflight checks, before and after a deploy, what most often stops a docmind stack on AWS:
// the account's Lambda concurrency, the secrets the functions read, the VPC's way out to AWS services and
// the model APIs, and the documents bucket's notification to the ingest queue. It reads with the caller's
// credentials through the SDK's clients and changes nothing; every finding names its fix.
//
// For a deployed stack it also connects to the stores as the functions do (stores.go): the Milvus
// collection must exist with the stack's dimension and be loaded, and Aurora must accept tls=rds. Both
// usually answer only inside the VPC, so from elsewhere they are warnings that say where to run from.
package awspreflight

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"

	"github.com/docmind/docmind/shared/awsrt"
)

// The ports: the SDK clients' methods the checks call (each *Client satisfies its interface).
type (
	Stacks interface {
		DescribeStacks(context.Context, *cloudformation.DescribeStacksInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	}
	Functions interface {
		GetAccountSettings(context.Context, *lambda.GetAccountSettingsInput, ...func(*lambda.Options)) (*lambda.GetAccountSettingsOutput, error)
	}
	Secrets interface {
		GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	}
	Network interface {
		DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
		DescribeRouteTables(context.Context, *ec2.DescribeRouteTablesInput, ...func(*ec2.Options)) (*ec2.DescribeRouteTablesOutput, error)
		DescribeVpcEndpoints(context.Context, *ec2.DescribeVpcEndpointsInput, ...func(*ec2.Options)) (*ec2.DescribeVpcEndpointsOutput, error)
	}
	Buckets interface {
		GetBucketNotificationConfiguration(context.Context, *s3.GetBucketNotificationConfigurationInput, ...func(*s3.Options)) (*s3.GetBucketNotificationConfigurationOutput, error)
	}
)

// Status of a finding.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Finding is one check's result; Fix says what to do when it is not OK.
type Finding struct {
	Check   string `json:"check"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// Checker runs the checks for one stack.
type Checker struct {
	Stacks    Stacks
	Functions Functions
	Secrets   Secrets
	Network   Network
	Buckets   Buckets
	Region    string
	Stack     string
	// Planned are the parameters of a stack not deployed yet (samconfig.toml's section for it); a
	// deployed stack's own parameters win.
	Planned map[string]string
	// MySQLCAFile is a PEM file tls=rds trusts beside the embedded RDS bundle (DOCMIND_MYSQL_CA_FILE,
	// as the functions read it).
	MySQLCAFile string
}

// Required are the parameters without a default (template.yaml; infra TestTransformedTemplate holds the
// list equal to the template's).
var Required = []string{"SubnetIds", "SecurityGroupIds", "MySQLSecretArn", "MilvusAddr", "MilvusSecretArn", "RedisAddr"}

// prodReservations are the template's defaults for DeployProfile=prod, by parameter (stage and extract
// both reserve StageReservedConcurrency; consistency and migrate reserve 1 each, as "fixed").
var prodReservations = []struct {
	param string
	def   int
	times int
}{
	{"ChatReservedConcurrency", 20, 1}, {"ApiReservedConcurrency", 5, 1}, {"AskStepReservedConcurrency", 5, 1},
	{"IngestReservedConcurrency", 5, 1}, {"StageReservedConcurrency", 20, 2}, {"ConnectorReservedConcurrency", 4, 1}, {"", 1, 2},
}

// unreservedFloor is what Lambda keeps unreserved in every account.
const unreservedFloor = 100

// stack is what the checks know of the stack: its parameters, outputs, and whether it exists.
type stack struct {
	deployed bool
	params   map[string]string
	outputs  map[string]string
}

// Run runs every check; an error is returned only when the stack itself cannot be read.
func (c *Checker) Run(ctx context.Context) ([]Finding, error) {
	st, f, err := c.loadStack(ctx)
	if err != nil {
		return nil, err
	}
	out := []Finding{f}
	if f.Status == Fail {
		return out, nil
	}
	out = append(out, c.concurrency(ctx, st))
	sf, values := c.secrets(ctx, st)
	out = append(out, sf...)
	out = append(out, c.network(ctx, st)...)
	out = append(out, c.notification(ctx, st))
	out = append(out, c.stores(ctx, st, values)...)
	return out, nil
}

func (c *Checker) loadStack(ctx context.Context) (stack, Finding, error) {
	st := stack{params: map[string]string{}, outputs: map[string]string{}}
	res, err := c.Stacks.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(c.Stack)})
	switch {
	case err == nil && len(res.Stacks) == 1:
		s := res.Stacks[0]
		st.deployed = true
		for _, p := range s.Parameters {
			st.params[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
		}
		for _, o := range s.Outputs {
			st.outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
		}
		f := Finding{Check: "stack", Status: OK, Message: fmt.Sprintf("stack %s is %s", c.Stack, s.StackStatus)}
		if bad := s.StackStatus; strings.HasSuffix(string(bad), "_FAILED") || bad == cfntypes.StackStatusRollbackComplete {
			f.Status, f.Fix = Warn, "read the stack's events (aws cloudformation describe-stack-events --stack-name "+c.Stack+"); a ROLLBACK_COMPLETE stack must be deleted before deploying again"
		}
		return st, f, nil
	case err != nil && !notFound(err):
		return st, Finding{}, fmt.Errorf("describe stack %s: %w", c.Stack, err)
	}
	// not deployed yet: what samconfig.toml would deploy, under a name every physical name can be built from
	if !stackName.MatchString(c.Stack) {
		return st, Finding{Check: "stack", Status: Fail,
			Message: fmt.Sprintf("stack name %q: the template builds every physical name from it, and the bucket <stack>-<account>-<region> must be lowercase and at most 63 characters", c.Stack),
			Fix:     "choose a stack name of lowercase letters, digits and hyphens, at most 35 characters, starting with a letter"}, nil
	}
	for k, v := range c.Planned {
		st.params[k] = v
	}
	var missing []string
	for _, k := range Required {
		if st.params[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return st, Finding{Check: "stack", Status: Fail,
			Message: fmt.Sprintf("stack %s is not deployed and samconfig.toml does not set %s", c.Stack, strings.Join(missing, ", ")),
			Fix:     "run make deploy-guided ENV=<env> (it asks for them), then this check again"}, nil
	}
	return st, Finding{Check: "stack", Status: OK, Message: fmt.Sprintf("stack %s is not deployed yet: checking samconfig.toml's parameters", c.Stack)}, nil
}

// stackName: what template.yaml's physical names allow (infra TestTransformedTemplate builds them from a
// 35-character name in the longest region name)
var stackName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,34}$`)

// notFound: CloudFormation answers a missing stack with ValidationError "... does not exist".
func notFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationError" && strings.Contains(ae.ErrorMessage(), "does not exist")
}

// Reservations is what a DeployProfile=prod stack reserves with these parameters (template defaults for
// the ones not given); infra TestTransformedTemplate holds it equal to the transformed template's sum.
func Reservations(p map[string]string) int {
	total := 0
	for _, r := range prodReservations {
		n := r.def
		if v, err := strconv.Atoi(p[r.param]); r.param != "" && err == nil {
			n = v
		}
		total += n * r.times
	}
	return total
}

func (c *Checker) concurrency(ctx context.Context, st stack) Finding {
	f := Finding{Check: "lambda-concurrency"}
	res, err := c.Functions.GetAccountSettings(ctx, &lambda.GetAccountSettingsInput{})
	if err != nil || res.AccountLimit == nil {
		f.Status, f.Message, f.Fix = Fail, fmt.Sprintf("lambda GetAccountSettings: %v", err), "allow lambda:GetAccountSettings to the caller"
		return f
	}
	limit, unreserved := int(res.AccountLimit.ConcurrentExecutions), int(aws.ToInt32(res.AccountLimit.UnreservedConcurrentExecutions))
	prod := st.params["DeployProfile"] == "prod"
	need := 0
	if prod {
		need = Reservations(st.params)
	}
	f.Message = fmt.Sprintf("account concurrency %d, unreserved %d; this stack reserves %d", limit, unreserved, need)
	switch {
	case prod && !st.deployed && unreserved-need < unreservedFloor:
		f.Status = Fail
		f.Fix = fmt.Sprintf("request the Lambda quota 'Concurrent executions' of at least %d in %s (Service Quotas; %d reserved + %d Lambda keeps unreserved + what other stacks reserve), or lower the *ReservedConcurrency parameters",
			limit-unreserved+need+unreservedFloor, c.Region, need, unreservedFloor)
	case !prod && limit < 50:
		f.Status = Warn
		f.Fix = fmt.Sprintf("a quota of %d runs a dev stack, but a chat, an ingestion and the consistency check compete for it; request 1000 (Service Quotas, Lambda 'Concurrent executions')", limit)
	case prod && limit < 1000:
		f.Status = Warn
		f.Fix = fmt.Sprintf("the reservations fit, but the unreserved functions (rerank, grade, canary) share %d; request 1000 (Service Quotas, Lambda 'Concurrent executions')", unreserved)
	default:
		f.Status = OK
	}
	return f
}

// secretParams maps the stack's secret parameters to the binding that decodes them in the functions.
var secretParams = []struct{ param, arnVar string }{
	{"MySQLSecretArn", "DOCMIND_SQL_SECRET_ARN"}, {"MilvusSecretArn", "DOCMIND_MILVUS_SECRET_ARN"},
	{"RedisSecretArn", "DOCMIND_REDIS_SECRET_ARN"}, {"ChatSecretArn", "DOCMIND_CHAT_API_KEY_SECRET_ARN"},
	{"EmbedSecretArn", "DOCMIND_EMBED_API_KEY_SECRET_ARN"}, {"RerankSecretArn", "DOCMIND_RERANK_API_KEY_SECRET_ARN"},
}

// secrets reads each secret the stack names and decodes it as the functions will at cold start; the
// values that decoded come back by the variable the functions set from them (never printed).
func (c *Checker) secrets(ctx context.Context, st stack) ([]Finding, map[string]string) {
	var out []Finding
	values := map[string]string{}
	for _, sp := range secretParams {
		arn := st.params[sp.param]
		if arn == "" {
			continue
		}
		f := Finding{Check: "secret " + sp.param}
		res, err := c.Secrets.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
		var nf *smtypes.ResourceNotFoundException
		switch {
		case errors.As(err, &nf):
			f.Status, f.Message = Fail, fmt.Sprintf("%s does not exist", arn)
			f.Fix = "create it (aws secretsmanager create-secret; DEPLOY.md sections 3-6 give its shape) and set " + sp.param + " to its ARN"
		case err != nil:
			f.Status, f.Message = Fail, fmt.Sprintf("%s: %v", arn, err)
			f.Fix = "allow secretsmanager:GetSecretValue (and kms:Decrypt for a customer key) on it to the caller, and check the region"
		case res.SecretString == nil:
			f.Status, f.Message, f.Fix = Fail, arn+" holds binary data", "store the value as a string (SecretString)"
		default:
			if v, derr := decode(sp.arnVar, *res.SecretString); derr != nil {
				f.Status, f.Message = Fail, fmt.Sprintf("%s does not parse: %v", arn, derr)
				f.Fix = "put the shape the functions read: DEPLOY.md sections 3-6"
			} else {
				f.Status, f.Message = OK, arn+" exists and parses"
				values[v.name] = v.value
			}
		}
		out = append(out, f)
	}
	return out, values
}

// decoded is one secret's value under the variable the functions set from it.
type decoded struct{ name, value string }

// decode parses a secret with the functions' own binding (shared/awsrt), never printing the value.
func decode(arnVar, secret string) (decoded, error) {
	for _, b := range awsrt.Bindings() {
		if b.ARNVar != arnVar {
			continue
		}
		env, err := awsrt.Env(context.Background(), func(k string) string {
			if k == arnVar {
				return "preflight"
			}
			return ""
		}, staticSecret(secret), []awsrt.Binding{b})
		if err != nil {
			return decoded{}, err
		}
		return decoded{b.Var, env(b.Var)}, nil
	}
	return decoded{}, fmt.Errorf("no binding for %s", arnVar)
}

type staticSecret string

func (s staticSecret) SecretString(context.Context, string) (string, error) { return string(s), nil }

// interface endpoints the functions need without a NAT (DEPLOY.md section 2); S3 is a gateway endpoint
var neededEndpoints = []string{"secretsmanager", "states", "sync-states", "lambda", "logs"}

// network: the functions' subnets need a NAT route, or the VPC endpoints; the model APIs need the NAT.
func (c *Checker) network(ctx context.Context, st stack) []Finding {
	subnets := splitList(st.params["SubnetIds"])
	sres, err := c.Network.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: subnets})
	if err != nil {
		return []Finding{{Check: "subnets", Status: Fail, Message: fmt.Sprintf("SubnetIds %v: %v", subnets, err), Fix: "set SubnetIds to existing private subnets of the stack's region"}}
	}
	var out []Finding
	vpc, azs := "", map[string]bool{}
	for _, s := range sres.Subnets {
		vpc = aws.ToString(s.VpcId)
		azs[aws.ToString(s.AvailabilityZone)] = true
	}
	if len(azs) < 2 {
		out = append(out, Finding{Check: "subnets", Status: Warn, Message: fmt.Sprintf("the functions' subnets are in %d availability zone", len(azs)),
			Fix: "add a private subnet in a second AZ to SubnetIds, so an AZ outage does not stop the functions"})
	}
	rts, err := c.Network.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}})
	if err != nil {
		return append(out, Finding{Check: "routes", Status: Fail, Message: err.Error(), Fix: "allow ec2:DescribeRouteTables to the caller"})
	}
	var noNAT, viaIGW []string
	tables := map[string]bool{}
	for _, sn := range subnets {
		rt := routeTableOf(rts.RouteTables, sn)
		if rt == nil {
			noNAT = append(noNAT, sn)
			continue
		}
		tables[aws.ToString(rt.RouteTableId)] = true
		switch defaultRoute(rt) {
		case "nat":
		case "igw":
			viaIGW = append(viaIGW, sn)
		default:
			noNAT = append(noNAT, sn)
		}
	}
	if len(viaIGW) > 0 {
		out = append(out, Finding{Check: "routes", Status: Fail, Message: fmt.Sprintf("subnets %v route 0.0.0.0/0 to an internet gateway: a Lambda function there gets no public address and reaches nothing outside the VPC", viaIGW),
			Fix: "use private subnets whose 0.0.0.0/0 goes to a NAT gateway (DEPLOY.md section 2)"})
	}
	if len(noNAT) == 0 && len(viaIGW) == 0 {
		return append(out, Finding{Check: "routes", Status: OK, Message: "every subnet of the functions routes 0.0.0.0/0 through a NAT gateway"})
	}
	if len(noNAT) == 0 {
		return out
	}
	// no NAT: AWS services only through endpoints, and nothing outside AWS at all
	eps, err := c.Network.DescribeVpcEndpoints(ctx, &ec2.DescribeVpcEndpointsInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}})
	if err != nil {
		return append(out, Finding{Check: "vpc-endpoints", Status: Fail, Message: err.Error(), Fix: "allow ec2:DescribeVpcEndpoints to the caller"})
	}
	have := map[string]ec2types.VpcEndpoint{}
	for _, e := range eps.VpcEndpoints {
		name := aws.ToString(e.ServiceName)
		have[name[strings.LastIndex(name, ".")+1:]] = e
	}
	prefix := "com.amazonaws." + c.Region + "."
	var missing []string
	for _, svc := range neededEndpoints {
		if e, ok := have[svc]; !ok || e.VpcEndpointType != ec2types.VpcEndpointTypeInterface {
			missing = append(missing, prefix+svc)
		}
	}
	if e, ok := have["s3"]; !ok || !slices.ContainsFunc(e.RouteTableIds, func(id string) bool { return tables[id] }) {
		missing = append(missing, prefix+"s3 (gateway, on the subnets' route tables)")
	}
	if len(missing) > 0 {
		out = append(out, Finding{Check: "vpc-endpoints", Status: Fail,
			Message: fmt.Sprintf("subnets %v have no NAT route and the VPC lacks endpoints %s", noNAT, strings.Join(missing, ", ")),
			Fix:     "add a NAT gateway route (simplest), or create those endpoints (interface endpoints with private DNS, in the functions' subnets; DEPLOY.md section 2 lists their hourly cost)"})
	} else {
		out = append(out, Finding{Check: "vpc-endpoints", Status: OK, Message: "no NAT, but every AWS service the functions call has an endpoint"})
	}
	if ext := externalAPIs(st.params); len(ext) > 0 {
		out = append(out, Finding{Check: "model-route", Status: Fail,
			Message: fmt.Sprintf("subnets %v have no NAT route, so %s cannot be reached", noNAT, strings.Join(ext, ", ")),
			Fix:     "add a NAT gateway route to the subnets (or a private link to each provider)"})
	}
	return out
}

// externalAPIs lists what the stack calls outside AWS, which only a NAT (or a private link) reaches.
func externalAPIs(p map[string]string) []string {
	var out []string
	if p["ChatModel"] != "" {
		out = append(out, "the chat model API "+orDefault(p["ChatBaseUrl"], "(OpenAI)"))
	}
	if p["EmbedProvider"] == "openai" {
		out = append(out, "the embeddings API "+orDefault(p["EmbedBaseURL"], "(OpenAI)"))
	}
	if p["RerankUrl"] != "" {
		out = append(out, "the rerank API "+p["RerankUrl"])
	}
	if strings.Contains(p["MilvusAddr"], "zilliz.com") && !strings.Contains(p["MilvusAddr"], "privatelink") {
		out = append(out, "Zilliz Cloud's public endpoint "+p["MilvusAddr"])
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// routeTableOf is the subnet's explicitly associated table, else the VPC's main table.
func routeTableOf(rts []ec2types.RouteTable, subnet string) *ec2types.RouteTable {
	var main *ec2types.RouteTable
	for i, rt := range rts {
		for _, a := range rt.Associations {
			if aws.ToString(a.SubnetId) == subnet {
				return &rts[i]
			}
			if aws.ToBool(a.Main) {
				main = &rts[i]
			}
		}
	}
	return main
}

// defaultRoute says where 0.0.0.0/0 goes: "nat", "igw", or "" for nowhere (or elsewhere).
func defaultRoute(rt *ec2types.RouteTable) string {
	for _, r := range rt.Routes {
		if aws.ToString(r.DestinationCidrBlock) != "0.0.0.0/0" {
			continue
		}
		switch {
		case aws.ToString(r.NatGatewayId) != "":
			return "nat"
		case strings.HasPrefix(aws.ToString(r.GatewayId), "igw-"):
			return "igw"
		case aws.ToString(r.TransitGatewayId) != "" || aws.ToString(r.NetworkInterfaceId) != "":
			return "nat" // a central egress VPC or a NAT instance
		}
	}
	return ""
}

// notification: S3 must send the drop folder's creates and removals to the ingest queue. Another tool's
// put-bucket-notification-configuration replaces the whole configuration and silently stops ingestion.
func (c *Checker) notification(ctx context.Context, st stack) Finding {
	f := Finding{Check: "bucket-notification"}
	bucket := st.outputs["DocumentsBucketName"]
	if !st.deployed || bucket == "" {
		f.Status, f.Message = OK, "not deployed yet: the stack configures it"
		return f
	}
	res, err := c.Buckets.GetBucketNotificationConfiguration(ctx, &s3.GetBucketNotificationConfigurationInput{Bucket: aws.String(bucket)})
	if err != nil {
		f.Status, f.Message, f.Fix = Fail, fmt.Sprintf("bucket %s: %v", bucket, err), "allow s3:GetBucketNotification on the documents bucket to the caller"
		return f
	}
	created, removed := false, false
	for _, q := range res.QueueConfigurations {
		if !strings.HasSuffix(aws.ToString(q.QueueArn), ":"+c.Stack+"-ingest") || !inboxOnly(q.Filter) {
			continue
		}
		for _, e := range q.Events {
			created = created || strings.HasPrefix(string(e), "s3:ObjectCreated:")
			removed = removed || strings.HasPrefix(string(e), "s3:ObjectRemoved:")
		}
	}
	if created && removed {
		f.Status, f.Message = OK, fmt.Sprintf("bucket %s sends inbox/ creates and removals to %s-ingest", bucket, c.Stack)
		return f
	}
	f.Status = Fail
	f.Message = fmt.Sprintf("bucket %s does not send inbox/ ObjectCreated and ObjectRemoved events to the queue %s-ingest (creates %v, removals %v): drop-folder files are not ingested or not deleted", bucket, c.Stack, created, removed)
	f.Fix = "deploy the stack again (make deploy) to restore the notification; a put-bucket-notification-configuration by another tool replaces the whole configuration, so add its targets to template.yaml instead"
	return f
}

func inboxOnly(f *s3types.NotificationConfigurationFilter) bool {
	if f == nil || f.Key == nil {
		return false
	}
	for _, r := range f.Key.FilterRules {
		if strings.EqualFold(string(r.Name), "prefix") && aws.ToString(r.Value) == "inbox/" {
			return true
		}
	}
	return false
}
