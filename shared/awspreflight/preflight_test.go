package awspreflight

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
)

const testRegion = "us-east-1"

// lambdaSettings serves GET /2016-08-19/account-settings in Lambda's JSON shape (moto does not).
func lambdaSettings(t *testing.T, limit, unreserved int) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/2016-08-19/account-settings" {
			http.Error(w, `{"Type":"User","message":"not found"}`, http.StatusNotFound)
			return
		}
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ") {
			http.Error(w, `{"message":"unsigned"}`, http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"AccountLimit":{"TotalCodeSize":80530636800,"CodeSizeUnzipped":262144000,"CodeSizeZipped":52428800,"ConcurrentExecutions":%d,"UnreservedConcurrentExecutions":%d},"AccountUsage":{"TotalCodeSize":0,"FunctionCount":11}}`, limit, unreserved)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type fixture struct {
	t      *testing.T
	ctx    context.Context
	cfg    aws.Config
	moto   string
	cfn    *cloudformation.Client
	ec2    *ec2.Client
	s3     *s3.Client
	sm     *secretsmanager.Client
	seq    int
	lambda string
}

func newFixture(t *testing.T) *fixture {
	moto := mototest.Start(t)
	cfg := aws.Config{Region: testRegion, Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), BaseEndpoint: aws.String(moto)}
	return &fixture{t: t, ctx: context.Background(), cfg: cfg, moto: moto,
		cfn: cloudformation.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg), sm: secretsmanager.NewFromConfig(cfg),
		s3:     s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		lambda: lambdaSettings(t, 1000, 1000)}
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) secret(name, value string) string {
	out, err := f.sm.CreateSecret(f.ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
	f.must(err)
	return aws.ToString(out.ARN)
}

// network is a VPC with two subnets in two AZs sharing one route table; route picks its default route.
type network struct {
	vpc, table string
	subnets    []string
}

func (f *fixture) network(route string) network {
	f.seq++
	vpc, err := f.ec2.CreateVpc(f.ctx, &ec2.CreateVpcInput{CidrBlock: aws.String(fmt.Sprintf("10.%d.0.0/16", f.seq))})
	f.must(err)
	n := network{vpc: aws.ToString(vpc.Vpc.VpcId)}
	for i, az := range []string{"us-east-1a", "us-east-1b"} {
		sn, err := f.ec2.CreateSubnet(f.ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, AvailabilityZone: aws.String(az), CidrBlock: aws.String(fmt.Sprintf("10.%d.%d.0/24", f.seq, i))})
		f.must(err)
		n.subnets = append(n.subnets, aws.ToString(sn.Subnet.SubnetId))
	}
	rt, err := f.ec2.CreateRouteTable(f.ctx, &ec2.CreateRouteTableInput{VpcId: vpc.Vpc.VpcId})
	f.must(err)
	n.table = aws.ToString(rt.RouteTable.RouteTableId)
	for _, sn := range n.subnets {
		_, err := f.ec2.AssociateRouteTable(f.ctx, &ec2.AssociateRouteTableInput{RouteTableId: rt.RouteTable.RouteTableId, SubnetId: aws.String(sn)})
		f.must(err)
	}
	in := &ec2.CreateRouteInput{RouteTableId: rt.RouteTable.RouteTableId, DestinationCidrBlock: aws.String("0.0.0.0/0")}
	switch route {
	case "nat":
		eip, err := f.ec2.AllocateAddress(f.ctx, &ec2.AllocateAddressInput{Domain: ec2types.DomainTypeVpc})
		f.must(err)
		nat, err := f.ec2.CreateNatGateway(f.ctx, &ec2.CreateNatGatewayInput{SubnetId: aws.String(n.subnets[0]), AllocationId: eip.AllocationId})
		f.must(err)
		in.NatGatewayId = nat.NatGateway.NatGatewayId
	case "igw":
		igw, err := f.ec2.CreateInternetGateway(f.ctx, &ec2.CreateInternetGatewayInput{})
		f.must(err)
		_, err = f.ec2.AttachInternetGateway(f.ctx, &ec2.AttachInternetGatewayInput{InternetGatewayId: igw.InternetGateway.InternetGatewayId, VpcId: vpc.Vpc.VpcId})
		f.must(err)
		in.GatewayId = igw.InternetGateway.InternetGatewayId
	default:
		return n
	}
	_, err = f.ec2.CreateRoute(f.ctx, in)
	f.must(err)
	return n
}

func (f *fixture) endpoints(n network, services ...string) {
	for _, svc := range services {
		in := &ec2.CreateVpcEndpointInput{VpcId: aws.String(n.vpc), ServiceName: aws.String("com.amazonaws." + testRegion + "." + svc)}
		if svc == "s3" {
			in.VpcEndpointType, in.RouteTableIds = ec2types.VpcEndpointTypeGateway, []string{n.table}
		} else {
			in.VpcEndpointType, in.SubnetIds = ec2types.VpcEndpointTypeInterface, n.subnets
		}
		_, err := f.ec2.CreateVpcEndpoint(f.ctx, in)
		f.must(err)
	}
}

// healthyParams: a network with a NAT and secrets of the right shapes.
func (f *fixture) healthyParams() map[string]string {
	f.seq++
	n := f.network("nat")
	return map[string]string{
		"DeployProfile":    "dev",
		"SubnetIds":        strings.Join(n.subnets, ","),
		"SecurityGroupIds": "sg-0123456789abcdef0",
		"MySQLSecretArn":   f.secret(fmt.Sprintf("aurora-%d", f.seq), `{"username":"docmind","password":"pw","engine":"mysql","host":"aurora.cluster-x.us-east-1.rds.amazonaws.com","port":3306,"dbname":"docmind"}`),
		"MilvusSecretArn":  f.secret(fmt.Sprintf("milvus-%d", f.seq), `{"token":"user:pw"}`),
		"MilvusAddr":       "milvus.internal:19530",
		"RedisAddr":        "redis.internal:6379",
	}
}

// deploy creates a stack with these parameters, its ingest queue and documents bucket; notify wires the
// bucket's inbox/ events to the queue as template.yaml does.
func (f *fixture) deploy(stack string, params map[string]string, notify bool) {
	tmpl := map[string]any{
		"Parameters": map[string]any{},
		"Resources": map[string]any{
			"IngestQueue":     map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{"QueueName": stack + "-ingest"}},
			"DocumentsBucket": map[string]any{"Type": "AWS::S3::Bucket", "Properties": map[string]any{"BucketName": stack + "-documents"}},
		},
		"Outputs": map[string]any{
			"DocumentsBucketName": map[string]any{"Value": map[string]any{"Ref": "DocumentsBucket"}},
			"QueueArn":            map[string]any{"Value": map[string]any{"Fn::GetAtt": []string{"IngestQueue", "Arn"}}},
		},
	}
	var ps []cfntypes.Parameter
	for k, v := range params {
		tmpl["Parameters"].(map[string]any)[k] = map[string]any{"Type": "String"}
		ps = append(ps, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	body, _ := json.Marshal(tmpl)
	_, err := f.cfn.CreateStack(f.ctx, &cloudformation.CreateStackInput{StackName: aws.String(stack), TemplateBody: aws.String(string(body)), Parameters: ps})
	f.must(err)
	if !notify {
		return
	}
	arn := "arn:aws:sqs:" + testRegion + ":123456789012:" + stack + "-ingest"
	inbox := &s3types.NotificationConfigurationFilter{Key: &s3types.S3KeyFilter{FilterRules: []s3types.FilterRule{{Name: s3types.FilterRuleNamePrefix, Value: aws.String("inbox/")}}}}
	_, err = f.s3.PutBucketNotificationConfiguration(f.ctx, &s3.PutBucketNotificationConfigurationInput{
		Bucket: aws.String(stack + "-documents"),
		NotificationConfiguration: &s3types.NotificationConfiguration{QueueConfigurations: []s3types.QueueConfiguration{
			{QueueArn: aws.String(arn), Events: []s3types.Event{"s3:ObjectCreated:*"}, Filter: inbox},
			{QueueArn: aws.String(arn), Events: []s3types.Event{"s3:ObjectRemoved:*"}, Filter: inbox},
		}},
	})
	f.must(err)
}

func (f *fixture) run(stack string, planned map[string]string) []Finding {
	f.t.Helper()
	lc := lambda.NewFromConfig(f.cfg, func(o *lambda.Options) { o.BaseEndpoint = aws.String(f.lambda) })
	c := Checker{Stacks: f.cfn, Functions: lc, Secrets: f.sm, Network: f.ec2, Buckets: f.s3, Region: testRegion, Stack: stack, Planned: planned}
	out, err := c.Run(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return out
}

// expect: the findings of status Fail (or Warn) are exactly the checks named; every other is OK.
func expect(t *testing.T, got []Finding, status Status, checks ...string) {
	t.Helper()
	bad := map[string]Finding{}
	for _, f := range got {
		if f.Status != OK {
			bad[f.Check] = f
		}
		if f.Status != OK && f.Fix == "" {
			t.Errorf("%s is %s without a fix: %s", f.Check, f.Status, f.Message)
		}
	}
	for _, c := range checks {
		f, ok := bad[c]
		if !ok || f.Status != status {
			t.Errorf("want %s %s, got %+v", c, status, f)
		}
		delete(bad, c)
	}
	for c, f := range bad {
		t.Errorf("unexpected %s %s: %s (fix: %s)", f.Status, c, f.Message, f.Fix)
	}
}

func TestPreflightFaults(t *testing.T) {
	f := newFixture(t)

	t.Run("healthy", func(t *testing.T) {
		f.t = t
		f.deploy("ok", f.healthyParams(), true)
		got := f.run("ok", nil)
		expect(t, got, Fail)
		if len(got) < 6 {
			t.Errorf("only %d findings: %+v", len(got), got)
		}
	})
	t.Run("secret missing", func(t *testing.T) {
		f.t = t
		p := f.healthyParams()
		p["MySQLSecretArn"] = "arn:aws:secretsmanager:us-east-1:123456789012:secret:gone-AbCdEf"
		f.deploy("nosecret", p, true)
		expect(t, f.run("nosecret", nil), Fail, "secret MySQLSecretArn")
	})
	t.Run("secret does not parse", func(t *testing.T) {
		f.t = t
		p := f.healthyParams()
		p["MilvusSecretArn"] = f.secret("milvus-wrong", `{"user":"x"}`)
		p["MySQLSecretArn"] = f.secret("aurora-wrong", `{"password":"only"}`)
		f.deploy("badsecret", p, true)
		got := f.run("badsecret", nil)
		expect(t, got, Fail, "secret MilvusSecretArn", "secret MySQLSecretArn")
		for _, x := range got {
			if strings.Contains(x.Message, "only") {
				t.Errorf("a finding shows the secret's value: %s", x.Message)
			}
		}
	})
	t.Run("no NAT, no endpoints, a hosted model", func(t *testing.T) {
		f.t = t
		p := f.healthyParams()
		p["SubnetIds"] = strings.Join(f.network("none").subnets, ",")
		p["ChatModel"] = "gpt-4o-mini"
		f.deploy("isolated", p, true)
		got := f.run("isolated", nil)
		expect(t, got, Fail, "vpc-endpoints", "model-route")
		for _, x := range got {
			if x.Check == "vpc-endpoints" && (!strings.Contains(x.Message, "sync-states") || !strings.Contains(x.Message, "s3 (gateway")) {
				t.Errorf("the missing endpoints are not named: %s", x.Message)
			}
		}
	})
	t.Run("no NAT but every endpoint", func(t *testing.T) {
		f.t = t
		p := f.healthyParams()
		n := f.network("none")
		f.endpoints(n, "secretsmanager", "states", "sync-states", "lambda", "logs", "s3")
		p["SubnetIds"] = strings.Join(n.subnets, ",")
		f.deploy("endpoints", p, true)
		expect(t, f.run("endpoints", nil), Fail)
	})
	t.Run("public subnets", func(t *testing.T) {
		f.t = t
		p := f.healthyParams()
		p["SubnetIds"] = strings.Join(f.network("igw").subnets, ",")
		f.deploy("public", p, true)
		expect(t, f.run("public", nil), Fail, "routes")
	})
	t.Run("one AZ", func(t *testing.T) {
		f.t = t
		p := f.healthyParams()
		p["SubnetIds"] = strings.Split(p["SubnetIds"], ",")[0]
		f.deploy("oneaz", p, true)
		expect(t, f.run("oneaz", nil), Warn, "subnets")
	})
	t.Run("bucket does not notify the queue", func(t *testing.T) {
		f.t = t
		f.deploy("nonotify", f.healthyParams(), false)
		expect(t, f.run("nonotify", nil), Fail, "bucket-notification")
	})
	t.Run("not deployed, samconfig without the guided answers", func(t *testing.T) {
		f.t = t
		expect(t, f.run("planned", map[string]string{"Stage": "dev"}), Fail, "stack")
	})
	t.Run("not deployed, a stack name the bucket name cannot take", func(t *testing.T) {
		f.t = t
		for _, name := range []string{"Docmind-Dev", "docmind-tenant-b-0123456789abcdefghi"} {
			expect(t, f.run(name, f.healthyParams()), Fail, "stack")
		}
		expect(t, f.run("docmind-tenant-b-0123456789abcdefgh", f.healthyParams()), Fail)
	})
	t.Run("not deployed, prod in a new account", func(t *testing.T) {
		f.t = t
		p := f.healthyParams()
		p["DeployProfile"] = "prod"
		saved := f.lambda
		f.lambda = lambdaSettings(t, 50, 50)
		defer func() { f.lambda = saved }()
		got := f.run("newaccount", p)
		expect(t, got, Fail, "lambda-concurrency")
		for _, x := range got {
			if x.Check == "lambda-concurrency" && !strings.Contains(x.Fix, "at least 177") {
				t.Errorf("the fix does not name the quota the defaults need (77 reserved + 100): %s", x.Fix)
			}
		}
	})
	t.Run("dev in a new account", func(t *testing.T) {
		f.t = t
		saved := f.lambda
		f.lambda = lambdaSettings(t, 10, 10)
		defer func() { f.lambda = saved }()
		expect(t, f.run("devaccount", f.healthyParams()), Warn, "lambda-concurrency")
	})
}
