package infra

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/awslabs/goformation/v7"
	"github.com/awslabs/goformation/v7/intrinsics"
	"github.com/go-sql-driver/mysql"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	mysqlstore "github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
)

// EnvRIE opts into the emulator test: it builds every function and needs aws-lambda-rie on PATH (or in
// $(go env GOPATH)/bin); .ci/run installs it and runs `make test-lambda`.
const EnvRIE = "DOCMIND_TEST_RIE"

const bucket = "docmind-test-documents"

// fakeAWS serves the two AWS JSON APIs the functions call beyond S3: Secrets Manager's GetSecretValue
// and Step Functions' StartExecution (names unique, a repeat is ExecutionAlreadyExists).
type fakeAWS struct {
	secrets map[string]string
	mu      sync.Mutex
	execs   map[string]string // name -> input
	order   []string
	reads   map[string]int
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	json.NewDecoder(r.Body).Decode(&body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	fail := func(code int, typ, msg string) {
		w.WriteHeader(code)
		json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.Header.Get("X-Amz-Target") {
	case "secretsmanager.GetSecretValue":
		id, _ := body["SecretId"].(string)
		f.reads[id]++
		v, ok := f.secrets[id]
		if !ok {
			fail(400, "ResourceNotFoundException", "no secret "+id)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ARN": id, "Name": id, "SecretString": v, "VersionId": "v1"})
	case "AWSStepFunctions.StartExecution":
		name, _ := body["name"].(string)
		input, _ := body["input"].(string)
		if _, ok := f.execs[name]; ok {
			fail(400, "ExecutionAlreadyExists", "Execution Already Exists: "+name)
			return
		}
		f.execs[name] = input
		f.order = append(f.order, name)
		json.NewEncoder(w).Encode(map[string]any{"executionArn": "arn:aws:states:us-east-1:123456789012:execution:ingest:" + name, "startDate": float64(time.Now().Unix())})
	default:
		fail(400, "UnknownOperationException", r.Header.Get("X-Amz-Target"))
	}
}

type fixture struct {
	t      *testing.T
	envFor func(fn string) []string // the template's environment for a function, resolved against the fakes
	aws    *fakeAWS
	s3     *awss3.Client
	dsn    string
	milvus *fakemilvus.Server
	bins   map[string]string // function logical id -> host binary
	// iam holds each function's S3 proxy: its template policy enforced in front of the fake S3
	iamMu sync.Mutex
	iam   map[string]*iamProxy
}

// allowedS3 counts the requests of fn's proxies that its policy allowed, by IAM action.
func (f *fixture) allowedS3(fn string) map[string]int {
	f.iamMu.Lock()
	defer f.iamMu.Unlock()
	out := map[string]int{}
	for name, p := range f.iam {
		if strings.HasPrefix(name, fn+"#") {
			p.mu.Lock()
			for a, n := range p.seen {
				out[a] += n
			}
			p.mu.Unlock()
		}
	}
	return out
}

// deniedS3 lists every S3 request a function's template policy refused (AWS would have too).
func (f *fixture) deniedS3() []string {
	f.iamMu.Lock()
	defer f.iamMu.Unlock()
	var out []string
	for fn, p := range f.iam {
		for _, d := range p.Denied() {
			out = append(out, fn+": "+d)
		}
	}
	sort.Strings(out)
	return out
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// templateEnv returns Globals' and the function's variables, parameters resolved to the fakes; variables
// that reference resources get the fakes' names for them.
func templateEnv(t *testing.T, fn string, params map[string]any, resources map[string]string) []string {
	tmpl, err := goformation.OpenWithOptions(filepath.Join("..", "template.yaml"), &intrinsics.ProcessorOptions{ParameterOverrides: params})
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	if g, ok := tmpl.Globals["Function"]; ok {
		b, _ := json.Marshal(g)
		var gf struct {
			Environment struct{ Variables map[string]string }
		}
		json.Unmarshal(b, &gf)
		for k, v := range gf.Environment.Variables {
			vars[k] = v
		}
	}
	f := tmpl.GetAllServerlessFunctionResources()[fn]
	if f == nil {
		t.Fatalf("no %s in template.yaml", fn)
	}
	if f.Environment != nil {
		for k, v := range f.Environment.Variables {
			vars[k] = v
		}
	}
	var out []string
	for k, v := range vars {
		if r, ok := resources[k]; ok {
			v = r
		}
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, aws: &fakeAWS{execs: map[string]string{}, reads: map[string]int{}}, bins: map[string]string{}, iam: map[string]*iamProxy{}}
	policies := templateS3Policies(t)
	// S3 (versioned, path style), MySQL, Milvus, Secrets Manager and Step Functions, all on 127.0.0.1
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	s3srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3srv.Close)
	awssrv := httptest.NewServer(f.aws)
	t.Cleanup(awssrv.Close)
	f.milvus = fakemilvus.Start(t)
	f.dsn = mysqltest.Database(t)
	cfg, err := mysql.ParseDSN(f.dsn)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(cfg.Addr)
	// the RDS-managed secret's shape, so the DSN is built as it is on Aurora
	dbSecret, _ := json.Marshal(map[string]any{"username": cfg.User, "password": cfg.Passwd, "engine": "mysql", "host": host, "port": port, "dbname": cfg.DBName})
	f.aws.secrets = map[string]string{"arn:aws:secretsmanager:us-east-1:123456789012:secret:db": string(dbSecret),
		"arn:aws:secretsmanager:us-east-1:123456789012:secret:milvus": `{"token":"root:Milvus"}`}
	f.s3 = awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(s3srv.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	if _, err := f.s3.PutBucketVersioning(context.Background(), &awss3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatalf("enable versioning: %v", err)
	}
	params := map[string]any{"MilvusAddr": f.milvus.Addr(), "RedisAddr": "127.0.0.1:1", "EmbeddingDim": "64",
		"MySQLSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:db", "MilvusSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:milvus"}
	resources := map[string]string{"DOCMIND_S3_BUCKET": bucket, "DOCMIND_INGEST_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:ingest",
		"DOCMIND_ANSWER_STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:answer",
		// the in-process MySQL server speaks no TLS here; tls=rds is tested against one that requires
		// it in shared/store/mysql (TestTLSRDS)
		"DOCMIND_SQL_TLS": "false"}
	s3For := func(fn string) string { // every function reaches S3 through its own policy
		f.iamMu.Lock()
		defer f.iamMu.Unlock()
		p, url := newIAMProxy(t, policies[fn], bucket, s3srv.URL)
		f.iam[fn+"#"+strconv.Itoa(len(f.iam))] = p
		return url
	}
	f.envFor = func(fn string) []string {
		return append(templateEnv(t, fn, params, resources),
			// what differs from AWS: endpoints of the fakes, static credentials, no instance metadata
			"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=AKIDTEST", "AWS_SECRET_ACCESS_KEY=secret", "AWS_EC2_METADATA_DISABLED=true",
			"AWS_ENDPOINT_URL_SECRETS_MANAGER="+awssrv.URL, "AWS_ENDPOINT_URL_SFN="+awssrv.URL,
			"DOCMIND_S3_ENDPOINT="+s3For(fn), "DOCMIND_S3_PATH_STYLE=true", "DOCMIND_S3_REGION=us-east-1", "PATH="+os.Getenv("PATH"))
	}
	return f
}

// build compiles a function as the Makefile does, for GOARCH arch, and returns the binary's path.
func build(t *testing.T, fn, arch, dir string) string {
	t.Helper()
	pkg, err := makeTarget(fn)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, fn+"-"+arch, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", out, "./functions/"+pkg)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", fn, err, b)
	}
	return out
}

// coldInit runs bin against a minimal Runtime API and returns the time from exec to its first
// GET /runtime/invocation/next: the function's whole init (config, secrets, connections).
func coldInit(t *testing.T, bin string, env []string) (time.Duration, string, error) {
	next := make(chan time.Time, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/invocation/next") {
			select {
			case next <- time.Now():
			default:
			}
			<-r.Context().Done() // never deliver an invocation
		}
	}))
	defer srv.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(bin)
	cmd.Env = append(env, "AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(srv.URL, "http://"))
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, "", err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
		srv.CloseClientConnections()
	}()
	select {
	case at := <-next:
		return at.Sub(start), "", nil
	case err := <-exited:
		exited <- err
		return 0, stderr.String(), fmt.Errorf("exited before /next: %v", err)
	case <-time.After(60 * time.Second):
		return 0, stderr.String(), fmt.Errorf("no /next within 60 s")
	}
}

// requireRIE skips the test unless it is opted into (EnvRIE) on linux, and returns the emulator's path.
func requireRIE(t *testing.T) string {
	t.Helper()
	if os.Getenv(EnvRIE) == "" {
		t.Skip("set " + EnvRIE + "=1 to build the functions and run them under aws-lambda-rie (make test-lambda)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the emulator runs linux binaries")
	}
	return rieBinary(t)
}

func rieBinary(t *testing.T) string {
	if p, err := exec.LookPath("aws-lambda-rie"); err == nil {
		return p
	}
	gopath, _ := exec.Command("go", "env", "GOPATH").Output()
	p := filepath.Join(strings.TrimSpace(string(gopath)), "bin", "aws-lambda-rie")
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("aws-lambda-rie not found (go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d)")
	}
	return p
}

// emulator is one function under aws-lambda-rie, bound to 127.0.0.1.
type emulator struct {
	addr string
	mu   sync.Mutex // the emulator serves one invocation at a time
	logs *syncBuffer
}

// syncBuffer is the emulator's output: exec copies it in from its own goroutine while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startRIE(t *testing.T, rie, bin string, env []string) *emulator {
	return startRIELogging(t, rie, bin, env, "warn")
}

// startRIELogging is startRIE with the emulator's log level ("info" logs its INIT REPORT).
func startRIELogging(t *testing.T, rie, bin string, env []string, level string) *emulator {
	e := &emulator{addr: freeAddr(t), logs: &syncBuffer{}}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", e.addr, "--runtime-api-address", freeAddr(t), bin)
	cmd.Env = append(env, "AWS_LAMBDA_FUNCTION_TIMEOUT=120", "LOG_LEVEL="+level)
	cmd.Stdout, cmd.Stderr = e.logs, e.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", e.addr); err == nil {
			c.Close()
			return e
		}
		if i > 200 {
			t.Fatalf("aws-lambda-rie did not listen on %s:\n%s", e.addr, e.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// initReport is the emulator's own measure of a function's init: from its start of the runtime to the
// runtime's first GET /next (rapid's "INIT REPORT(durationMs: ...)").
var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// initUnderRIE starts bin under aws-lambda-rie, sends one invocation that no handler can decode (a JSON
// string where every function takes an object, so nothing runs and nothing changes), and returns the
// init duration the emulator reports. The function must have initialised successfully.
func initUnderRIE(t *testing.T, rie, bin string, env []string) (float64, error) {
	e := startRIELogging(t, rie, bin, env, "info")
	if _, err := e.invoke([]byte(`"cold-init-probe"`)); err != nil && !isFunctionError(err) {
		return 0, fmt.Errorf("invoke: %v\n%s", err, e.logs)
	}
	// The invocation's reply can arrive before exec has copied the emulator's INIT lines out of its
	// pipe (CI saw a fast init's log end at INIT START): wait for them, generously.
	var logs string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		logs = e.logs.String()
		if initReport.MatchString(logs) || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(logs, "INIT RTDONE(status: success)") {
		return 0, fmt.Errorf("init did not succeed:\n%s", logs)
	}
	m := initReport.FindStringSubmatch(logs)
	if m == nil {
		return 0, fmt.Errorf("no INIT REPORT in the emulator's log:\n%s", logs)
	}
	return strconv.ParseFloat(m[1], 64)
}

func isFunctionError(err error) bool {
	_, ok := err.(*aslrun.Error)
	return ok
}

// invoke posts a payload; a function error comes back as *aslrun.Error named by its errorType.
func (e *emulator) invoke(payload []byte) (json.RawMessage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	resp, err := http.Post("http://"+e.addr+"/2015-03-31/functions/function/invocations", "application/json", bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var fe struct {
		Type    string `json:"errorType"`
		Message string `json:"errorMessage"`
	}
	if json.Unmarshal(b, &fe) == nil && fe.Type != "" {
		return nil, &aslrun.Error{Name: fe.Type, Cause: string(b)}
	}
	return b, nil
}

// s3Event is the SQS message body S3 sends for one object event (keys form-encoded, as S3 does).
func s3Event(name, key, version, seq string) string {
	b, _ := json.Marshal(map[string]any{"Records": []any{map[string]any{"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
		"eventName": name, "s3": map[string]any{"s3SchemaVersion": "1.0", "bucket": map[string]any{"name": bucket, "arn": "arn:aws:s3:::" + bucket},
			"object": map[string]any{"key": url.QueryEscape(key), "versionId": version, "sequencer": seq}}}}})
	b = bytes.ReplaceAll(b, []byte("%2F"), []byte("/"))
	return string(b)
}

func sqsBatch(bodies ...string) []byte {
	var recs []any
	for i, b := range bodies {
		recs = append(recs, map[string]any{"messageId": fmt.Sprintf("m%d", i), "receiptHandle": "rh", "body": b, "eventSource": "aws:sqs",
			"eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:docmind-test-ingest", "awsRegion": "us-east-1", "attributes": map[string]string{"ApproximateReceiveCount": "1"}})
	}
	out, _ := json.Marshal(map[string]any{"Records": recs})
	return out
}

// TestRIE builds the functions, measures each one's size and cold init, then runs ingestion end to end
// through the built binaries under aws-lambda-rie with the template's own environment: migrate, the
// ingest function on an SQS batch of S3 events (CJK, spaces, "+", a poisoned message), the state machine
// (the ASL file, run by aslrun) invoking the stage binary for every Task, a replay, a removal, and an
// upload whose notification was lost, which the consistency function finds and starts (ING-08).
func TestRIE(t *testing.T) {
	rie := requireRIE(t)
	f := newFixture(t)
	t.Cleanup(func() {
		// every S3 request went through the function's own template policy: a denial is a missing grant
		if d := f.deniedS3(); len(d) > 0 {
			t.Errorf("S3 requests the template's policies deny (AWS would too):\n%s", strings.Join(d, "\n"))
		}
	})
	dir := t.TempDir()
	tmpl, err := goformation.Open(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range tmpl.GetAllServerlessFunctionResources() {
		names = append(names, name)
	}
	sort.Strings(names)

	t.Run("SizeAndColdInit", func(t *testing.T) {
		for _, fn := range names {
			pkg, _ := makeTarget(fn)
			if _, err := os.Stat(filepath.Join("..", "functions", pkg, "main.go")); err != nil {
				t.Logf("%-20s functions/%s not in this tree", fn, pkg)
				continue
			}
			arm := build(t, fn, "arm64", dir)
			host := build(t, fn, runtime.GOARCH, dir)
			f.bins[fn] = host
			st, _ := os.Stat(arm)
			d, logs, err := coldInit(t, host, f.envFor(fn))
			if err != nil {
				// every function starts with the template's own environment (issue 11)
				t.Errorf("%s did not reach /next with the template's environment: %v\n%s", fn, err, logs)
				continue
			}
			under, err := initUnderRIE(t, rie, host, f.envFor(fn))
			if err != nil {
				t.Errorf("%s under aws-lambda-rie: %v", fn, err)
			}
			t.Logf("%-20s arm64 %5.1f MB, cold init (exec to first /next) %6.1f ms; under aws-lambda-rie (its INIT REPORT) %6.1f ms",
				fn, float64(st.Size())/1e6, float64(d.Microseconds())/1000, under)
		}
		if f.aws.reads["arn:aws:secretsmanager:us-east-1:123456789012:secret:db"] == 0 {
			t.Error("no function read the database secret: the template's secret wiring is not exercised")
		}
	})
	if f.bins["IngestFunction"] == "" || f.bins["StageFunction"] == "" || f.bins["MigrateFunction"] == "" {
		t.Fatal("the ingestion functions were not built")
	}

	migrate := startRIE(t, rie, f.bins["MigrateFunction"], f.envFor("MigrateFunction"))
	out, err := migrate.invoke([]byte(`{}`))
	if err != nil {
		t.Fatalf("migrate: %v\n%s", err, migrate.logs)
	}
	var mres struct{ Version int }
	json.Unmarshal(out, &mres)
	if mres.Version < 6 {
		t.Fatalf("migrate answered %s", out)
	}

	// the drop folder: three documents whose keys S3 must encode
	keys := []string{"inbox/handbook/HR policy v2.md", "inbox/handbook/a+b=c.txt", "inbox/手册/员工 手册（2026）.md"}
	bodies := []string{}
	versions := map[string]string{}
	for i, k := range keys {
		doc := fmt.Sprintf("# Document %d\n\n## Rules\n\nRule %d: members may book %d rooms per week, and cancellations are free until noon.\n", i, i, i+2)
		po, err := f.s3.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(k), Body: strings.NewReader(doc)})
		if err != nil {
			t.Fatal(err)
		}
		versions[k] = aws.ToString(po.VersionId)
		bodies = append(bodies, s3Event("ObjectCreated:Put", k, versions[k], fmt.Sprintf("0055AED6DCD9028%d", i+1)))
	}
	bodies = append(bodies, `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"inbox/x/%ZZ.md","sequencer":"01"}}}]}`)
	ingest := startRIE(t, rie, f.bins["IngestFunction"], f.envFor("IngestFunction"))
	out, err = ingest.invoke(sqsBatch(bodies...))
	if err != nil {
		t.Fatalf("ingest: %v\n%s", err, ingest.logs)
	}
	var batch struct {
		Failures []struct {
			ID string `json:"itemIdentifier"`
		} `json:"batchItemFailures"`
	}
	json.Unmarshal(out, &batch)
	if len(batch.Failures) != 1 || batch.Failures[0].ID != "m3" || len(f.aws.order) != 3 {
		t.Fatalf("ingest answered %s with %d executions started; want only m3 failed and 3 executions\n%s", out, len(f.aws.order), ingest.logs)
	}

	// Step Functions: the ASL file, every Task invoking the stage binary under the emulator
	def, err := os.ReadFile(filepath.Join("..", "infra", "statemachines", "ingest.asl.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := aslrun.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	stage := startRIE(t, rie, f.bins["StageFunction"], f.envFor("StageFunction"))
	runner := &aslrun.Runner{Machine: m, Sleep: func(context.Context, time.Duration) error { return nil },
		Invoke: func(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
			return stage.invoke(input)
		}}
	for _, name := range f.aws.order {
		_, tr, err := runner.Run(context.Background(), name, json.RawMessage(f.aws.execs[name]))
		if err != nil {
			t.Fatalf("execution %s: %v (states %v)\n%s", name, err, tr.States, stage.logs)
		}
		t.Logf("execution %s: %d states, max state %d bytes", name, len(tr.States), tr.MaxStateBytes)
	}
	db, err := mysqlstore.Open(context.Background(), f.dsn, mysqlstore.Options{MaxOpenConns: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ready := func() map[string]string {
		got := map[string]string{}
		kbs, _ := db.ListKBs(context.Background(), "default")
		for _, kb := range kbs {
			docs, _ := db.ListDocuments(context.Background(), "default", kb.ID, "")
			for _, d := range docs {
				got[d.SourceURI] = d.Status
			}
		}
		return got
	}
	got := ready()
	for _, k := range keys {
		if got[k] != rag.StatusReady {
			t.Errorf("%s: status %q, want ready (all: %v)", k, got[k], got)
		}
	}
	vectors := f.milvus.Rows("docmind_chunks")
	if vectors == 0 {
		t.Error("no vectors reached the Milvus server")
	}

	// a replay starts nothing; a removal deletes the document everywhere
	before := len(f.aws.order)
	if _, err := ingest.invoke(sqsBatch(bodies[:3]...)); err != nil || len(f.aws.order) != before {
		t.Fatalf("replay: %v, executions %d -> %d", err, before, len(f.aws.order))
	}
	del, err := f.s3.DeleteObject(context.Background(), &awss3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(keys[2])})
	if err != nil {
		t.Fatal(err)
	}
	out, err = ingest.invoke(sqsBatch(s3Event("ObjectRemoved:DeleteMarkerCreated", keys[2], aws.ToString(del.VersionId), "0055AED6DCD90289")))
	if err != nil || strings.Contains(string(out), "itemIdentifier") {
		t.Fatalf("removal: %s %v\n%s", out, err, ingest.logs)
	}
	if st, ok := ready()[keys[2]]; ok {
		t.Fatalf("%s still has a document (%s) after its removal", keys[2], st)
	}
	if after := f.milvus.Rows("docmind_chunks"); after >= vectors {
		t.Fatalf("vectors %d -> %d: the removal left the document's vectors", vectors, after)
	}

	// ING-08: an upload whose notification was lost is found by the scheduled consistency function, which
	// starts its execution; the state machine ingests it (the age gate is lowered: the object is new)
	lost := "inbox/handbook/lost notice.md"
	if _, err := f.s3.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(lost),
		Body: strings.NewReader("# Lost notice\n\nRooms booked through the old portal must be booked again by Friday.\n")}); err != nil {
		t.Fatal(err)
	}
	if f.bins["ConsistencyFunction"] == "" {
		t.Fatal("the consistency function was not built")
	}
	consistency := startRIE(t, rie, f.bins["ConsistencyFunction"], append(f.envFor("ConsistencyFunction"), "DOCMIND_RECONCILE_INBOX_MIN_AGE=1ns"))
	before = len(f.aws.order)
	out, err = consistency.invoke([]byte(`{"repair": true}`))
	var rep struct {
		Drift    map[string]int `json:"drift"`
		Repaired map[string]int `json:"repaired"`
	}
	json.Unmarshal(out, &rep)
	if err != nil || rep.Drift["sources_without_document"] != 1 || rep.Repaired["sources_without_document"] != 1 || len(f.aws.order) != before+1 {
		t.Fatalf("consistency answered %s (%v) with %d executions started; want the lost upload found and 1 started\n%s", out, err, len(f.aws.order)-before, consistency.logs)
	}
	name := f.aws.order[before]
	if _, tr, err := runner.Run(context.Background(), name, json.RawMessage(f.aws.execs[name])); err != nil {
		t.Fatalf("repair execution %s: %v (states %v)\n%s", name, err, tr.States, stage.logs)
	}
	if st := ready()[lost]; st != rag.StatusReady {
		t.Fatalf("%s: status %q after the repair's execution, want ready", lost, st)
	}
	// connectors on AWS: the connector sync state machine over the built connector function, each item
	// ingested by the ingestion state machine over the stage function (startExecution.sync:2), a web
	// site on 127.0.0.1 as the source (allowed by DOCMIND_CONNECTOR_ALLOW_HOSTS)
	if f.bins["ConnectorFunction"] == "" {
		t.Fatal("the connector function was not built")
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages := map[string]string{
			"/kb/":           `<html><head><title>Handbook</title></head><body><p>Start here.</p><a href="leave.html">Leave</a> <a href="rooms.html">Rooms</a></body></html>`,
			"/kb/leave.html": `<html><head><title>Leave</title></head><body><h1>Leave</h1><p>Annual leave is 28 days; carry-over needs a manager's approval.</p></body></html>`,
			"/kb/rooms.html": `<html><head><title>Rooms</title></head><body><h1>Rooms</h1><p>Meeting rooms are booked through the front desk.</p></body></html>`,
		}
		body, ok := pages[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, body)
	}))
	defer site.Close()
	kb := rag.KnowledgeBase{Tenant: "default", Name: "web-handbook"}
	if err := db.CreateKB(context.Background(), &kb); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateConnector(context.Background(), &rag.Connector{Tenant: "default", Name: "handbook-site", KBID: kb.ID, Type: "web",
		Config: `{"url":"` + site.URL + `/kb/"}`}); err != nil {
		t.Fatal(err)
	}
	conn := startRIE(t, rie, f.bins["ConnectorFunction"], append(f.envFor("ConnectorFunction"), "DOCMIND_CONNECTOR_ALLOW_HOSTS=127.0.0.1"))
	syncDef, err := os.ReadFile(filepath.Join("..", "infra", "statemachines", "connector-sync.asl.json"))
	if err != nil {
		t.Fatal(err)
	}
	sm, err := aslrun.Parse(syncDef)
	if err != nil {
		t.Fatal(err)
	}
	syncRunner := &aslrun.Runner{Machine: sm, Sleep: func(context.Context, time.Duration) error { return nil },
		Invoke: func(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
			switch resource {
			case "${ConnectorFunctionArn}":
				return conn.invoke(input)
			case "arn:aws:states:::states:startExecution.sync:2":
				var p struct {
					Name  string
					Input json.RawMessage
				}
				json.Unmarshal(input, &p)
				out, _, err := runner.Run(ctx, p.Name, p.Input)
				if err != nil {
					return nil, &aslrun.Error{Name: "States.TaskFailed", Cause: err.Error()}
				}
				return json.Marshal(map[string]any{"Output": json.RawMessage(out), "Status": "SUCCEEDED"})
			}
			return nil, &aslrun.Error{Name: "States.Runtime", Cause: "no fake for " + resource}
		}}
	out, tr, err := syncRunner.Run(context.Background(), "sched-handbook-site-1", json.RawMessage(`{"connector":"handbook-site"}`))
	if err != nil {
		t.Fatalf("connector sync: %v (states %v)\n%s\n%s", err, tr.States, conn.logs, stage.logs)
	}
	var synced struct {
		Result struct {
			Status string
			Added  int
			Failed []any
		} `json:"result"`
	}
	json.Unmarshal(out, &synced)
	if synced.Result.Status != rag.SyncOK || synced.Result.Added != 3 {
		t.Fatalf("connector sync answered %s; want ok with 3 pages added\n%s", out, conn.logs)
	}
	docs, _ := db.ListDocuments(context.Background(), "default", kb.ID, "")
	readyDocs := 0
	for _, d := range docs {
		if d.Status == rag.StatusReady {
			readyDocs++
		}
	}
	if readyDocs != 3 {
		t.Fatalf("%d of %d synced pages ready; want 3", readyDocs, len(docs))
	}
	if c, _ := db.GetConnector(context.Background(), "default", "handbook-site"); c.Status != rag.SyncOK || c.Cursor == "" && c.SucceededAt.IsZero() {
		t.Fatalf("connector after the sync: %+v", c.SyncState)
	}
	t.Logf("connector sync under aws-lambda-rie: %d states, max state %d bytes, 3 pages ready", len(tr.States), tr.MaxStateBytes)

	// the policies were in the path: each function's own requests went through its proxy
	for fn, action := range map[string]string{"StageFunction": "s3:GetObjectVersion", "IngestFunction": "s3:ListBucket", "ConsistencyFunction": "s3:ListBucket",
		"ConnectorFunction": "s3:PutObject"} {
		if got := f.allowedS3(fn); got[action] == 0 {
			t.Errorf("%s made no %s through its policy proxy (allowed: %v)", fn, action, got)
		}
	}
}
