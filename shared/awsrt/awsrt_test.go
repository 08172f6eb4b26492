package awsrt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/docmind/docmind/shared/rag"
)

type typed struct{}

func (typed) Error() string     { return "strong count short" }
func (typed) ErrorType() string { return "Incomplete" }

func TestErrorType(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{rag.Errorf("x", rag.KindUnavailable, "down"), "Unavailable"},
		{fmt.Errorf("wrapped: %w", rag.Errorf("x", rag.KindTerminal, "poison")), "Terminal"},
		{errors.New("plain"), "Unknown"},
		{context.DeadlineExceeded, "Unavailable"},
		{fmt.Errorf("index: %w", typed{}), "Incomplete"},
	} {
		if got := ErrorType(c.err); got != c.want {
			t.Errorf("ErrorType(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

// The library itself (its RPC-mode Function, which shares lambdaErrorResponse with the runtime-API loop)
// must report the kind, not the Go type name "Error".
func TestLambdaReportsKindAsErrorType(t *testing.T) {
	stage := func(ctx context.Context, in struct{ N int }) (int, error) {
		if in.N < 0 {
			return 0, rag.Errorf("stage", rag.KindTerminal, "negative")
		}
		return in.N, rag.Errorf("stage", rag.KindUnavailable, "later")
	}
	for _, c := range []struct {
		payload string
		want    string
	}{{`{"N":-1}`, "Terminal"}, {`{"N":1}`, "Unavailable"}} {
		var resp messages.InvokeResponse
		err := lambda.NewFunction(lambda.NewHandler(Handler(stage))).Invoke(&messages.InvokeRequest{Payload: []byte(c.payload)}, &resp)
		if err != nil || resp.Error == nil || resp.Error.Type != c.want {
			t.Fatalf("payload %s: err %v, response error %+v; want errorType %s", c.payload, err, resp.Error, c.want)
		}
	}
	// the control: the unwrapped function is reported by Go type name
	var resp messages.InvokeResponse
	lambda.NewFunction(lambda.NewHandler(stage)).Invoke(&messages.InvokeRequest{Payload: []byte(`{"N":1}`)}, &resp)
	if resp.Error == nil || resp.Error.Type != "Error" {
		t.Fatalf("control: %+v; the library changed how it names errors, revisit LambdaError", resp.Error)
	}
}

func TestDecodeKey(t *testing.T) {
	long := strings.Repeat("a", 1000) + "%E4%B8%AD"
	for _, c := range []struct{ raw, want string }{
		{"inbox/kb/a+b.md", "inbox/kb/a b.md"},
		{"inbox/kb/a%2Bb.md", "inbox/kb/a+b.md"},
		{"inbox/kb/%E5%91%98%E5%B7%A5%E6%89%8B%E5%86%8C.pdf", "inbox/kb/员工手册.pdf"},
		{"inbox/kb/%F0%9F%93%84+x.txt", "inbox/kb/📄 x.txt"},
		{"inbox/kb/100%25.md", "inbox/kb/100%.md"},
		{long, strings.Repeat("a", 1000) + "中"},
	} {
		got, err := DecodeKey(c.raw)
		if err != nil || got != c.want {
			t.Errorf("DecodeKey(%q) = %q, %v; want %q", c.raw, got, err, c.want)
		}
	}
	if _, err := DecodeKey("inbox/%zz"); !rag.Is(err, rag.KindInvalid) {
		t.Errorf("bad escape: %v, want Invalid", err)
	}
}

func TestCompareSequencer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"FF", "0100", -1}, {"0100", "FF", 1}, {"0A", "a", 0}, {"0055AED6DCD90281E5", "0055AED6DCD90281E6", -1},
		{"55AED6DCD90281E5", "0055AED6DCD90281E5", 0}, {"1", "", 1},
	} {
		if got := CompareSequencer(c.a, c.b); got != c.want {
			t.Errorf("CompareSequencer(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// ING-04: 10,000 random (tenant, key, version) triples: valid, deterministic, no collisions.
func TestExecutionNameProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 11))
	alphabet := []rune("abcXYZ019 +%/._-:中文📄\"'<>{}[]?*#\\^|~`$&,;\x00\n")
	str := func(max int) string {
		n := r.IntN(max) + 1
		b := make([]rune, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(b)
	}
	seen := map[string]string{}
	const n = 10000
	bad := 0
	for range n {
		tenant, key, version := str(20), str(300), str(40)
		in := tenant + "\x01" + key + "\x01" + version
		name := ExecutionName(key, tenant, key, version)
		if !ValidExecutionName(name) {
			bad++
			t.Errorf("invalid name %q (len %d)", name, len(name))
		}
		if again := ExecutionName(key, tenant, key, version); again != name {
			t.Fatalf("not deterministic: %q then %q", name, again)
		}
		if prev, ok := seen[name]; ok && prev != in {
			t.Fatalf("collision: %q for %q and %q", name, prev, in)
		}
		seen[name] = in
	}
	if ExecutionName("", "a", "bc") == ExecutionName("", "ab", "c") {
		t.Fatal("part boundaries are not part of the name")
	}
	t.Logf("ING-04: %d names, %d invalid, %d distinct, 0 collisions (rule of three: <= %.2f%%)", n, bad, len(seen), 300.0/n)
}

func TestDecodeS3MessageFromTestdata(t *testing.T) {
	b, err := os.ReadFile("testdata/sqs-s3-created.json")
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeS3Message(ev.Records[0].Body)
	if err != nil || len(got) != 1 {
		t.Fatalf("DecodeS3Message = %+v, %v", got, err)
	}
	want := ObjectEvent{Bucket: "docmind-dev-documents", Key: "inbox/handbook/HR policy 员工手册 v2+.md", VersionID: "096fKKXTRTtl3on89fVO.nfljtsv6qko",
		ETag: "d41d8cd98f00b204e9800998ecf8427e", Size: 1024, Sequencer: "0055AED6DCD90281E5"}
	if got[0] != want {
		t.Fatalf("got %+v\nwant %+v", got[0], want)
	}
}

func TestDecodeS3MessageShapes(t *testing.T) {
	if got, err := DecodeS3Message(`{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2026-11-30T10:00:00.000Z","Bucket":"b"}`); err != nil || len(got) != 0 {
		t.Fatalf("test event: %v, %v; want ignored", got, err)
	}
	del := `{"Records":[{"eventName":"ObjectRemoved:DeleteMarkerCreated","s3":{"bucket":{"name":"b"},"object":{"key":"inbox/kb/x.md","versionId":"v2","sequencer":"0A"}}},
		{"eventName":"ObjectRestore:Completed","s3":{"bucket":{"name":"b"},"object":{"key":"inbox/kb/y.md","sequencer":"0B"}}}]}`
	got, err := DecodeS3Message(del)
	if err != nil || len(got) != 1 || !got[0].Removed || got[0].Key != "inbox/kb/x.md" {
		t.Fatalf("delete: %+v, %v", got, err)
	}
	for _, bad := range []string{`not json`, `{"foo":1}`, `{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"k"}}}]}`,
		`{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"%zz","sequencer":"01"}}}]}`} {
		if _, err := DecodeS3Message(bad); !rag.Is(err, rag.KindInvalid) {
			t.Errorf("DecodeS3Message(%q) = %v, want Invalid", bad, err)
		}
	}
}

func TestBatchReportsOnlyFailures(t *testing.T) {
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "a", Body: "ok"}, {MessageId: "b", Body: "poison"}, {MessageId: "c", Body: "ok"}}}
	var ran []string
	resp := Batch(context.Background(), nil, ev, func(_ context.Context, m events.SQSMessage) error {
		ran = append(ran, m.MessageId)
		if m.Body == "poison" {
			return rag.Errorf("t", rag.KindInvalid, "poison")
		}
		return nil
	})
	if len(ran) != 3 || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "b" {
		t.Fatalf("ran %v, failures %+v; want all run and only b failed", ran, resp.BatchItemFailures)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	resp = Batch(ctx, nil, ev, func(context.Context, events.SQSMessage) error { return nil })
	if len(resp.BatchItemFailures) != 3 {
		t.Fatalf("after the deadline: %+v; want every message returned to the queue", resp.BatchItemFailures)
	}
}

type fakeSecrets struct {
	mu    sync.Mutex // Env reads secrets concurrently
	vals  map[string]string
	calls int
}

func (f *fakeSecrets) SecretString(_ context.Context, id string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	v, ok := f.vals[id]
	if !ok {
		return "", rag.Errorf("fake", rag.KindUnavailable, "AccessDenied for %s", id)
	}
	return v, nil
}

func TestEnvResolvesSecretsOnceAndDirectValuesWin(t *testing.T) {
	src := &fakeSecrets{vals: map[string]string{
		"arn:db":     `{"username":"app","password":"p@ss:w0rd!","engine":"mysql","host":"aurora.cluster-x.eu-west-1.rds.amazonaws.com","port":3306,"dbname":"docmind"}`,
		"arn:milvus": `{"token":"root:Milvus-secret"}`,
		"arn:embed":  "sk-plain-key",
	}}
	env := map[string]string{"DOCMIND_SQL_SECRET_ARN": "arn:db", "DOCMIND_MILVUS_SECRET_ARN": "arn:milvus",
		"DOCMIND_EMBED_API_KEY_SECRET_ARN": "arn:embed", "DOCMIND_CHAT_API_KEY_SECRET_ARN": "arn:missing", "DOCMIND_CHAT_API_KEY": "direct"}
	cache := &Cache{Reader: src}
	getenv, err := Env(context.Background(), func(k string) string { return env[k] }, cache, Bindings())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mysqldrv.ParseDSN(getenv("DOCMIND_SQL_DSN"))
	if err != nil || cfg.User != "app" || cfg.Passwd != "p@ss:w0rd!" || cfg.Addr != "aurora.cluster-x.eu-west-1.rds.amazonaws.com:3306" || cfg.DBName != "docmind" {
		t.Fatalf("DSN %q parses to %+v, %v", getenv("DOCMIND_SQL_DSN"), cfg, err)
	}
	if got := getenv("DOCMIND_MILVUS_TOKEN"); got != "root:Milvus-secret" {
		t.Errorf("milvus token = %q", got)
	}
	if got := getenv("DOCMIND_EMBED_API_KEY"); got != "sk-plain-key" {
		t.Errorf("embed key = %q", got)
	}
	if got := getenv("DOCMIND_CHAT_API_KEY"); got != "direct" {
		t.Errorf("chat key = %q; a directly set variable must win and its secret not be read", got)
	}
	if got := getenv("DOCMIND_TENANT"); got != "" {
		t.Errorf("unrelated variable = %q", got)
	}
	if src.calls != 3 {
		t.Errorf("GetSecretValue calls = %d, want 3", src.calls)
	}
	if _, err := Env(context.Background(), func(k string) string { return env[k] }, cache, Bindings()); err != nil {
		t.Fatal(err)
	}
	if src.calls != 3 {
		t.Errorf("after a second resolve: %d calls; the cache must serve it", src.calls)
	}
}

func TestEnvErrorsNameTheSecretNotTheValue(t *testing.T) {
	src := &fakeSecrets{vals: map[string]string{"arn:milvus": `{"password":"hunter2-very-secret"}`}}
	env := map[string]string{"DOCMIND_MILVUS_SECRET_ARN": "arn:milvus"}
	_, err := Env(context.Background(), func(k string) string { return env[k] }, src, Bindings())
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "DOCMIND_MILVUS_SECRET_ARN") {
		t.Fatalf("error %v: want it to name the variable and never the value", err)
	}
	env = map[string]string{"DOCMIND_SQL_SECRET_ARN": "arn:gone"}
	_, err = Env(context.Background(), func(k string) string { return env[k] }, src, Bindings())
	if !rag.Is(err, rag.KindUnavailable) {
		t.Fatalf("unreadable secret: %v, want Unavailable", err)
	}
}

// DOCMIND_MCP_SERVERS_SECRET_ARN fills DOCMIND_MCP_SERVERS with the secret's JSON array; anything else is
// refused without echoing the secret.
func TestMCPServersSecret(t *testing.T) {
	list := ` [{"name":"tickets","url":"https://mcp.example/mcp","headers":{"Authorization":"Bearer t0ken"},"tools":["lookup"]}] `
	src := &fakeSecrets{vals: map[string]string{"arn:mcp": list, "arn:bad": `{"Authorization":"Bearer t0ken"}`}}
	env := map[string]string{"DOCMIND_MCP_SERVERS_SECRET_ARN": "arn:mcp"}
	getenv, err := Env(context.Background(), func(k string) string { return env[k] }, src, Bindings())
	if err != nil || getenv("DOCMIND_MCP_SERVERS") != strings.TrimSpace(list) {
		t.Fatalf("DOCMIND_MCP_SERVERS = %q, %v; want the secret's array", getenv("DOCMIND_MCP_SERVERS"), err)
	}
	env["DOCMIND_MCP_SERVERS_SECRET_ARN"] = "arn:bad"
	_, err = Env(context.Background(), func(k string) string { return env[k] }, src, Bindings())
	if !rag.Is(err, rag.KindInvalid) || strings.Contains(err.Error(), "t0ken") || !strings.Contains(err.Error(), "DOCMIND_MCP_SERVERS_SECRET_ARN") {
		t.Fatalf("an object secret: %v, want Invalid naming the variable and never the value", err)
	}
}

func TestMySQLDSNShapes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"u:p@tcp(h:3306)/db", "u:p@tcp(h:3306)/db"},
		{`{"dsn":"u:p@tcp(h:1)/x"}`, "u:p@tcp(h:1)/x"},
		{`{"username":"u","password":"p","host":"h","port":"3307"}`, "u:p@tcp(h:3307)/docmind"},
	} {
		got, err := MySQLDSN(c.in)
		if err != nil || got != c.want {
			t.Errorf("MySQLDSN(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", `{"username":"u"}`, `{"username":"u","host":"h","port":"x"}`, `{bad`} {
		if _, err := MySQLDSN(bad); err == nil {
			t.Errorf("MySQLDSN(%q) accepted", bad)
		}
	}
}

func TestFieldOrPlainShapes(t *testing.T) {
	get := fieldOrPlain([]string{"token", "api_key"}, false)
	for _, c := range []struct{ secret, want string }{
		{" tok-1\n", "tok-1"}, {`{"api_key":"k2"}`, "k2"}, {`  {"token":"t3","api_key":"k3"}`, "t3"},
	} {
		if got, err := get(c.secret); err != nil || got != c.want {
			t.Errorf("%q: %q, %v; want %q", c.secret, got, err, c.want)
		}
	}
	for _, bad := range []string{"", " \n", `{"other":"x"}`, `{bad`} {
		if got, err := get(bad); err == nil {
			t.Errorf("%q accepted as %q", bad, got)
		}
	}
}
