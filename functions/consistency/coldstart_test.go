package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
	"github.com/docmind/docmind/shared/store/s3"
)

// runtimeAPI is the part of the Lambda Runtime API a Go function uses: it hands out one invocation and
// records when the process first asked for work (the end of its init) and what it answered.
type runtimeAPI struct {
	event     []byte
	firstNext chan time.Time
	response  chan []byte
	failure   chan []byte
}

func (r *runtimeAPI) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	switch {
	case req.Method == http.MethodGet && req.URL.Path == "/2018-06-01/runtime/invocation/next":
		select {
		case r.firstNext <- time.Now():
		default: // a second /next: the test is over; hold it until the process is killed
			<-req.Context().Done()
			return
		}
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-1")
		w.Header().Set("Lambda-Runtime-Deadline-Ms", fmt.Sprint(time.Now().Add(5*time.Minute).UnixMilli()))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:eu-west-1:123456789012:function:docmind-dev-consistency")
		w.Write(r.event)
	case strings.HasSuffix(req.URL.Path, "/response"):
		r.response <- body
		w.WriteHeader(http.StatusAccepted)
	default: // .../error or /runtime/init/error
		r.failure <- body
		w.WriteHeader(http.StatusAccepted)
	}
}

// TestColdStart builds the function's bootstrap as the Makefile does (for this machine's architecture),
// starts it with the template's driver variables against the in-process MySQL, Milvus and S3 servers the
// suites use and a minimal Runtime API, measures exec to the first /next (the cold init), and checks the
// one scheduled invocation repairs the drift it was given. Opt-in: DOCMIND_TEST_COLDSTART=1.
func TestColdStart(t *testing.T) {
	if os.Getenv("DOCMIND_TEST_COLDSTART") == "" {
		t.Skip("set DOCMIND_TEST_COLDSTART=1 to build the bootstrap and measure its cold init against in-process servers")
	}
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bootstrap")
	t0 := time.Now()
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	st, _ := os.Stat(bin)
	t.Logf("built in %s", time.Since(t0).Round(time.Second))
	t0 = time.Now()

	// stores, migrated and seeded through the production adapters: one document that lost a vector
	dsn := mysqltest.Database(t)
	db, err := mysql.Open(ctx, dsn, mysql.Options{MaxOpenConns: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	mv := fakemilvus.Start(t)
	vec, err := milvus.Open(ctx, milvus.Options{Addr: mv.Addr(), Collection: "chunks", Dim: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer vec.Close()
	backend := s3mem.New()
	backend.CreateBucket("docs")
	s3srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer s3srv.Close()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	blobs, err := s3.New(ctx, s3.Options{Bucket: "docs", Region: "us-east-1", Endpoint: s3srv.URL, UsePathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: db, Vectors: vec, Blobs: blobs, Embedder: embed.NewOffline(64),
		Chunking: chunk.Options{ChildChars: 200, Overlap: 20, ParentChars: 800}}}}
	rep, err := svc.Ingest(ctx, "acme", ingest.Source{KBName: "manuals", URI: "inbox/manuals/a.md", Name: "a.md",
		Data: []byte("# Cover\n\n" + strings.Repeat("The waiting period is ninety days. ", 40))})
	if err != nil {
		t.Fatal(err)
	}
	refs, err := vec.ListVectors(ctx, rag.Filter{Tenant: "acme", DocumentIDs: []string{rep.DocumentID}})
	if err != nil || len(refs) == 0 {
		t.Fatalf("vectors %v, %v", refs, err)
	}
	vec.Delete(ctx, "acme", []string{refs[0].ID})
	vec.Flush(ctx)

	t.Logf("stores seeded in %s", time.Since(t0).Round(time.Millisecond))
	api := &runtimeAPI{event: []byte(`{"repair": true}`), firstNext: make(chan time.Time, 1), response: make(chan []byte, 1), failure: make(chan []byte, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api}
	go srv.Serve(ln)
	defer srv.Close()

	cmd := exec.Command(bin)
	cmd.Env = []string{"AWS_LAMBDA_RUNTIME_API=" + ln.Addr().String(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
		"DOCMIND_SQL_DRIVER=mysql", "DOCMIND_SQL_DSN=" + dsn, "DOCMIND_VECTOR_DRIVER=milvus", "DOCMIND_MILVUS_ADDR=" + mv.Addr(), "DOCMIND_MILVUS_COLLECTION=chunks", "DOCMIND_VECTOR_DIM=64",
		"DOCMIND_KV_DRIVER=redis", "DOCMIND_REDIS_ADDR=127.0.0.1:1", "DOCMIND_BLOB_DRIVER=s3", "DOCMIND_S3_BUCKET=docs", "DOCMIND_S3_ENDPOINT=" + s3srv.URL,
		"DOCMIND_S3_PATH_STYLE=true", "DOCMIND_TENANT=acme", "DOCMIND_LOG_FORMAT=json"}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var initDone time.Time
	select {
	case initDone = <-api.firstNext:
	case b := <-api.failure:
		t.Fatalf("init failed: %s\n%s", b, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("no /next within 2 minutes\n%s", stderr.String())
	}
	var res Result
	select {
	case b := <-api.response:
		if err := json.Unmarshal(b, &res); err != nil {
			t.Fatalf("response %s: %v", b, err)
		}
	case b := <-api.failure:
		t.Fatalf("invocation failed: %s\n%s", b, stderr.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("no response within 2 minutes\n%s", stderr.String())
	}
	invoked := time.Since(initDone)
	if res.Drift[reconcile.ReadyWithoutVectors] != 1 || res.Repaired[reconcile.ReadyWithoutVectors] != 1 || res.LockHeld {
		t.Fatalf("report %+v\n%s", res, stderr.String())
	}
	n, _ := vec.Count(ctx, rag.Filter{Tenant: "acme", DocumentIDs: []string{rep.DocumentID}})
	if n != len(refs) {
		t.Fatalf("%d of %d vectors after the invocation", n, len(refs))
	}
	t.Logf("bootstrap %.1f MB; cold init (exec to first /next) %s; first invocation (check + repair of 1 document) %s",
		float64(st.Size())/1e6, initDone.Sub(start).Round(time.Millisecond), invoked.Round(time.Millisecond))
}
