package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/docmind/docmind/functions/internal/httpfn"
	"github.com/docmind/docmind/functions/internal/kbtest"
	"github.com/docmind/docmind/functions/internal/lambdatest"
	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/deptest"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memkv"
	"github.com/docmind/docmind/shared/store/sqldb"
)

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/api") }

type fakeS3 struct {
	mu   sync.Mutex
	puts map[string][]byte
}

func (f *fakeS3) PutObject(_ context.Context, in *awss3.PutObjectInput, _ ...func(*awss3.Options)) (*awss3.PutObjectOutput, error) {
	b, _ := io.ReadAll(in.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.puts[aws.ToString(in.Key)] = b
	return &awss3.PutObjectOutput{VersionId: aws.String("v1"), ETag: aws.String(`"e"`)}, nil
}

type fakeExecutions struct {
	mu   sync.Mutex
	jobs []ingest.Job
}

func (f *fakeExecutions) Start(_ context.Context, name string, input []byte) (bool, error) {
	var j ingest.Job
	if err := json.Unmarshal(input, &j); err != nil {
		return false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.jobs = append(f.jobs, j)
	return true, nil
}

type apiFixture struct {
	proxy *httpadapter.HandlerAdapterV2
	key   string
	s3    *fakeS3
	execs *fakeExecutions
	db    *sqldb.DB
}

func newAPI(t *testing.T) *apiFixture {
	t.Helper()
	ctx := context.Background()
	cfg := config.Default()
	cfg.Auth.Mode = "keys"
	cfg.Chat.MemoryEnabled = false
	lib := kbtest.New(t, cfg)
	db := lib.DB
	u := rag.User{Tenant: cfg.Tenant, Email: "ops@example.com", Role: rag.RoleAdmin}
	if err := db.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	plain, prefix, hash, err := auth.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateAPIKey(ctx, &rag.APIKey{Tenant: cfg.Tenant, UserID: u.ID, Hash: hash, Prefix: prefix, Name: "test"}); err != nil {
		t.Fatal(err)
	}
	f := &apiFixture{key: plain, s3: &fakeS3{puts: map[string][]byte{}}, execs: &fakeExecutions{}, db: db}
	h, err := newHandler(cfg, backends{Stores: httpfn.Stores{SQL: db, Keyword: lib.Keyword, Vectors: lib.Vectors, KV: memkv.New(nil, 0)},
		Blobs: memblob.New(), S3: f.s3, Bucket: "drop", Executions: f.execs},
		slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	f.proxy = httpadapter.NewV2(h)
	return f
}

// event loads an API Gateway HTTP API event (payload 2.0) from testdata and sets the caller's key.
func (f *apiFixture) event(t *testing.T, file string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	ev := lambdatest.ReadJSON[events.APIGatewayV2HTTPRequest](t, filepath.Join("testdata", file))
	if f.key != "" {
		ev.Headers["authorization"] = "Bearer " + f.key
	}
	return ev
}

func (f *apiFixture) do(t *testing.T, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	t.Helper()
	res, err := f.proxy.ProxyWithContext(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsBase64Encoded {
		b, _ := base64.StdEncoding.DecodeString(res.Body)
		res.Body = string(b)
	}
	return res
}

// TestAskThroughAPIGateway: POST /api/ask through the api-proxy answers with the done object.
func TestAskThroughAPIGateway(t *testing.T) {
	f := newAPI(t)
	res := f.do(t, f.event(t, "ask.json"))
	if res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, res.Body)
	}
	var done answer.Done
	if err := json.Unmarshal([]byte(res.Body), &done); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(done.Answer, "30 days") || len(done.Sources) == 0 {
		t.Errorf("done %+v", done)
	}
	f.key = ""
	if res := f.do(t, f.event(t, "ask.json")); res.StatusCode != 401 {
		t.Errorf("without a key: %d, want 401", res.StatusCode)
	}
}

// TestManagement: list knowledge bases, upload (stored under a server key, ingestion started), and
// the streamed endpoints pointing elsewhere.
func TestManagement(t *testing.T) {
	f := newAPI(t)
	res := f.do(t, f.event(t, "list-kbs.json"))
	if res.StatusCode != 200 || !strings.Contains(res.Body, `"handbook"`) {
		t.Fatalf("list: %d %s", res.StatusCode, res.Body)
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "../../etc/passwd.md")
	fw.Write([]byte("# Leave\n\nStaff get 25 days of leave.\n"))
	mw.Close()
	ev := f.event(t, "list-kbs.json")
	ev.RawPath, ev.RequestContext.HTTP.Path, ev.RequestContext.HTTP.Method = "/api/kbs/handbook/documents", "/api/kbs/handbook/documents", "POST"
	ev.Headers["content-type"] = mw.FormDataContentType()
	ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body.Bytes()), true
	res = f.do(t, ev)
	if res.StatusCode/100 != 2 {
		t.Fatalf("upload: %d %s", res.StatusCode, res.Body)
	}
	if len(f.execs.jobs) != 1 {
		t.Fatalf("executions %+v", f.execs.jobs)
	}
	j := f.execs.jobs[0]
	if !strings.HasPrefix(j.Key, "uploads/") || strings.Contains(j.Key, "passwd") || j.Bucket != "drop" || j.VersionID != "v1" || j.FileName != "passwd.md" {
		t.Errorf("job %+v: want a server-generated key in the drop bucket, the file name as metadata only", j)
	}
	if got := string(f.s3.puts[j.Key]); !strings.Contains(got, "25 days") {
		t.Errorf("stored %q", got)
	}
	ev = f.event(t, "ask.json")
	ev.RawPath, ev.RequestContext.HTTP.Path = "/api/chat", "/api/chat"
	if res := f.do(t, ev); res.StatusCode != 404 || !strings.Contains(res.Body, "query function") {
		t.Errorf("/api/chat on the HTTP API: %d %s", res.StatusCode, res.Body)
	}
}

// TestOtherTenantRefused: a stack serves DOCMIND_TENANT only (its roles reach that tenant's prefixes),
// so a valid key of another tenant gets 403 with a message naming the stack's tenant, and nothing of
// the request runs (no upload stored, no execution).
func TestOtherTenantRefused(t *testing.T) {
	f := newAPI(t)
	ctx := context.Background()
	db := f.db
	u := rag.User{Tenant: "acme", Email: "ops@acme.example", Role: rag.RoleAdmin}
	if err := db.CreateUser(ctx, &u); err != nil {
		t.Fatal(err)
	}
	plain, prefix, hash, err := auth.NewAPIKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateAPIKey(ctx, &rag.APIKey{Tenant: "acme", UserID: u.ID, Hash: hash, Prefix: prefix, Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	own := f.key
	f.key = plain
	res := f.do(t, f.event(t, "list-kbs.json"))
	if res.StatusCode != 403 {
		t.Fatalf("another tenant's key: %d %s, want 403", res.StatusCode, res.Body)
	}
	var body struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(res.Body), &body); err != nil {
		t.Fatalf("not JSON: %s", res.Body)
	}
	if !strings.Contains(body.Error.Message, `serves tenant "local"`) || !strings.Contains(body.Error.Message, `"acme"`) {
		t.Errorf("message %q: want the stack's tenant and the caller's", body.Error.Message)
	}
	ev := f.event(t, "list-kbs.json")
	ev.RawPath, ev.RequestContext.HTTP.Path, ev.RequestContext.HTTP.Method = "/api/kbs/handbook/documents", "/api/kbs/handbook/documents", "POST"
	if res := f.do(t, ev); res.StatusCode != 403 || len(f.execs.jobs) != 0 || len(f.s3.puts) != 0 {
		t.Errorf("upload by another tenant: %d, %d executions, %d objects", res.StatusCode, len(f.execs.jobs), len(f.s3.puts))
	}
	f.key = own
	if res := f.do(t, f.event(t, "list-kbs.json")); res.StatusCode != 200 {
		t.Errorf("the stack's tenant: %d %s", res.StatusCode, res.Body)
	}
}
