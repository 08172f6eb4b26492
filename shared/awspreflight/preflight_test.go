package awspreflight

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
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
	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/index"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
	"github.com/docmind/docmind/shared/store/storetest"
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
	t *testing.T
	// the stores a deployed stack's checks connect to: a Milvus with the collection loaded, and a MySQL
	// server requiring TLS with a certificate from ca
	milvus    *fakemilvus.Server
	mysqlAddr string
	ca        *storetest.CA
	caFile    string
	ctx       context.Context
	cfg       aws.Config
	moto      string
	cfn       *cloudformation.Client
	ec2       *ec2.Client
	s3        *s3.Client
	sm        *secretsmanager.Client
	seq       int
	lambda    string
}

func newFixture(t *testing.T) *fixture {
	moto := mototest.Start(t)
	cfg := aws.Config{APIOptions: awsrt.APIOptions(), Region: testRegion, Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), BaseEndpoint: aws.String(moto)}
	f := &fixture{t: t, ctx: context.Background(), cfg: cfg, moto: moto,
		cfn: cloudformation.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg), sm: secretsmanager.NewFromConfig(cfg),
		s3:     s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }),
		lambda: lambdaSettings(t, 1000, 1000)}
	f.milvus = f.milvusWith(true, true)
	f.ca = storetest.NewCA(t)
	f.caFile = f.ca.File(t)
	f.mysqlAddr = f.tlsMySQL(f.ca, "localhost")
	return f
}

// milvusWith starts a Milvus (token root:Milvus) with the functions' collection at dimension 64, created
// and loaded as the ingest side leaves it, or missing, or released.
func (f *fixture) milvusWith(create, loaded bool) *fakemilvus.Server {
	srv := fakemilvus.StartWithToken(f.t, "root:Milvus")
	if !create {
		return srv
	}
	ix, err := milvus.Open(f.ctx, milvus.Options{Addr: srv.Addr(), Token: "root:Milvus", Collection: "docmind_chunks", Dim: 64})
	f.must(err)
	ix.Close()
	if !loaded {
		c, err := milvusclient.New(f.ctx, &milvusclient.ClientConfig{Address: srv.Addr(), APIKey: "root:Milvus"})
		f.must(err)
		defer c.Close(f.ctx)
		f.must(c.ReleaseCollection(f.ctx, milvusclient.NewReleaseCollectionOption("docmind_chunks")))
	}
	return srv
}

// milvusWithoutMeta serves a loaded collection made before the metadata field (milvus.Schema without
// it), as a stack deployed before issue #23's Milvus expressions has.
func (f *fixture) milvusWithoutMeta() *fakemilvus.Server {
	srv := fakemilvus.StartWithToken(f.t, "root:Milvus")
	c, err := milvusclient.New(f.ctx, &milvusclient.ClientConfig{Address: srv.Addr(), APIKey: "root:Milvus"})
	f.must(err)
	defer c.Close(f.ctx)
	sch := milvus.Schema("docmind_chunks", 64)
	sch.Fields = slices.DeleteFunc(sch.Fields, func(fl *entity.Field) bool { return fl.Name == milvus.FieldMeta })
	f.must(c.CreateCollection(f.ctx, milvusclient.NewCreateCollectionOption("docmind_chunks", sch).
		WithIndexOptions(milvusclient.NewCreateIndexOption("docmind_chunks", milvus.FieldVector, index.NewAutoIndex(entity.COSINE)))))
	task, err := c.LoadCollection(f.ctx, milvusclient.NewLoadCollectionOption("docmind_chunks"))
	f.must(err)
	f.must(task.Await(f.ctx))
	return srv
}

// tlsMySQL starts a MySQL-protocol server that requires TLS, its certificate from ca for host.
func (f *fixture) tlsMySQL(ca *storetest.CA, host string) string {
	return mysqltest.TLSServer(f.t, &tls.Config{Certificates: []tls.Certificate{ca.Server(f.t, []string{host}, nil)}})
}

// auroraSecret is an RDS-managed secret for a server at addr, reached by host.
func (f *fixture) auroraSecret(host, addr string) string {
	f.seq++
	_, port, _ := net.SplitHostPort(addr)
	return f.secret(fmt.Sprintf("aurora-%d", f.seq), fmt.Sprintf(`{"username":"root","password":"","engine":"mysql","host":%q,"port":%s,"dbname":"docmind_seed"}`, host, port))
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

// healthyParams: a network with a NAT, secrets of the right shapes, a Milvus with the collection loaded
// and a MySQL server that requires TLS with a certificate for the secret's host.
func (f *fixture) healthyParams() map[string]string {
	f.seq++
	n := f.network("nat")
	return map[string]string{
		"DeployProfile":    "dev",
		"SubnetIds":        strings.Join(n.subnets, ","),
		"SecurityGroupIds": "sg-0123456789abcdef0",
		"MySQLSecretArn":   f.auroraSecret("localhost", f.mysqlAddr),
		"MilvusSecretArn":  f.secret(fmt.Sprintf("milvus-%d", f.seq), `{"token":"root:Milvus"}`),
		"MilvusAddr":       f.milvus.Addr(),
		"EmbeddingDim":     "64",
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
	c := Checker{Stacks: f.cfn, Functions: lc, Secrets: f.sm, Network: f.ec2, Buckets: f.s3, Region: testRegion, Stack: stack, Planned: planned, MySQLCAFile: f.caFile}
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
		for _, c := range []string{"milvus-collection", "aurora-tls"} {
			if x := find(got, c); x.Status != OK {
				t.Errorf("the healthy stack's %s: %+v", c, x)
			}
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
			if x.Check == "lambda-concurrency" && !strings.Contains(x.Fix, "at least 181") {
				t.Errorf("the fix does not name the quota the defaults need (81 reserved + 100): %s", x.Fix)
			}
		}
	})
	t.Run("milvus collection missing, not loaded, without metadata, another dimension, token refused", func(t *testing.T) {
		f.t = t
		for _, c := range []struct {
			name   string
			params func(p map[string]string)
			status Status
			says   string
		}{
			{"missing", func(p map[string]string) { p["MilvusAddr"] = f.milvusWith(false, false).Addr() }, Fail, "does not exist"},
			{"released", func(p map[string]string) { p["MilvusAddr"] = f.milvusWith(true, false).Addr() }, Fail, "not loaded"},
			{"nometa", func(p map[string]string) { p["MilvusAddr"] = f.milvusWithoutMeta().Addr() }, Warn, "docmind metadata mirror"},
			{"dimension", func(p map[string]string) { p["EmbeddingDim"] = "32" }, Fail, "EmbeddingDim"},
			{"token", func(p map[string]string) {
				p["MilvusSecretArn"] = f.secret("milvus-badtoken", `{"token":"root:wrong"}`)
			}, Fail, "refused the secret's token"},
			{"unreachable", func(p map[string]string) { p["MilvusAddr"] = closedAddr(t) }, Warn, "inside the VPC"},
		} {
			p := f.healthyParams()
			c.params(p)
			name := "milvus-" + c.name
			f.deploy(name, p, true)
			got := f.run(name, nil)
			expect(t, got, c.status, "milvus-collection")
			if x := find(got, "milvus-collection"); !strings.Contains(x.Message+" "+x.Fix, c.says) {
				t.Errorf("%s: %+v does not say %q", c.name, x, c.says)
			}
		}
	})
	t.Run("aurora without TLS, an unknown CA, another host, unreachable", func(t *testing.T) {
		f.t = t
		plain, _ := mysqlAddrOf(mysqltest.Server(t))
		for _, c := range []struct {
			name   string
			secret string
			status Status
			says   string
		}{
			{"plain", f.auroraSecret("127.0.0.1", plain), Fail, "does not accept TLS"},
			{"unknown-ca", f.auroraSecret("localhost", f.tlsMySQL(storetest.NewCA(t), "localhost")), Fail, "not signed by the RDS certificate authorities"},
			{"other-host", f.auroraSecret("localhost", f.tlsMySQL(f.ca, "db.example.internal")), Fail, "names another host"},
			{"unreachable", f.auroraSecret("127.0.0.1", closedAddr(t)), Warn, "inside the VPC"},
		} {
			p := f.healthyParams()
			p["MySQLSecretArn"] = c.secret
			name := "aurora-" + c.name
			f.deploy(name, p, true)
			got := f.run(name, nil)
			expect(t, got, c.status, "aurora-tls")
			if x := find(got, "aurora-tls"); !strings.Contains(x.Message+" "+x.Fix, c.says) {
				t.Errorf("%s: %+v does not say %q", c.name, x, c.says)
			}
		}
	})
	t.Run("the stores are checked through the RDS Proxy endpoint when the stack names one", func(t *testing.T) {
		f.t = t
		p := f.healthyParams()
		p["MySQLSecretArn"] = f.auroraSecret("aurora.cluster-x.us-east-1.rds.amazonaws.com", f.mysqlAddr)
		p["MySQLProxyEndpoint"] = "localhost"
		f.deploy("proxied", p, true)
		got := f.run("proxied", nil)
		expect(t, got, Fail)
		if x := find(got, "aurora-tls"); !strings.Contains(x.Message, "localhost:") {
			t.Errorf("not checked through the proxy endpoint: %+v", x)
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

func find(fs []Finding, check string) Finding {
	for _, f := range fs {
		if f.Check == check {
			return f
		}
	}
	return Finding{}
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func mysqlAddrOf(dsn string) (string, error) {
	i, j := strings.Index(dsn, "tcp("), strings.Index(dsn, ")/")
	if i < 0 || j < i {
		return "", fmt.Errorf("no address in %s", dsn)
	}
	return dsn[i+4 : j], nil
}
