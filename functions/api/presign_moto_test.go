package main

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/httpfn"
	"github.com/docmind/docmind/functions/internal/ingestenv"
	"github.com/docmind/docmind/functions/internal/kbtest"
	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/awspreflight/mototest"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memkv"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// aslExecutions is Step Functions for the ingestion state machine: each execution runs the ASL file
// through aslrun over the stage handlers, synchronously, as the stage functions would.
type aslExecutions struct {
	t      *testing.T
	runner *aslrun.Runner
	names  map[string]bool
	errs   []error
}

func newASLExecutions(t *testing.T, wf *ingest.Workflow) *aslExecutions {
	def, err := os.ReadFile("../../infra/statemachines/ingest.asl.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := aslrun.Parse(def)
	if err != nil {
		t.Fatal(err)
	}
	return &aslExecutions{t: t, names: map[string]bool{}, runner: &aslrun.Runner{Machine: m, ErrorName: awsrt.ErrorType,
		Sleep: func(context.Context, time.Duration) error { return nil },
		Invoke: func(ctx context.Context, _ string, input json.RawMessage) (json.RawMessage, error) {
			var env ingest.Envelope
			if err := json.Unmarshal(input, &env); err != nil {
				return nil, err
			}
			out, err := wf.Dispatch(ctx, env)
			if err != nil {
				return nil, err
			}
			return json.Marshal(out)
		}}}
}

func (a *aslExecutions) Start(ctx context.Context, name string, input []byte) (bool, error) {
	if a.names[name] {
		return false, nil
	}
	a.names[name] = true
	_, _, err := a.runner.Run(ctx, name, input)
	a.errs = append(a.errs, err)
	return true, nil
}

// presignedStack is the management API and the ingest path over moto_server's S3 (versioned bucket)
// and the embedded relational and vector stores.
type presignedStack struct {
	s3      *awss3.Client
	bucket  string
	tenant  string
	api     *httpadapter.HandlerAdapterV2
	db      *sqldb.DB
	kb      rag.KnowledgeBase
	keys    map[string]string // role -> API key
	users   map[string]rag.User
	trigger *ingest.Trigger
	execs   *aslExecutions
}

func newPresignedStack(t *testing.T) *presignedStack {
	t.Helper()
	ctx := context.Background()
	endpoint := mototest.Start(t)
	cfg := config.Default()
	cfg.Auth.Mode = "keys"
	cfg.Chat.MemoryEnabled = false
	cfg.Ingest.ExtractMemory = 2 << 30 // the extract function's DOCMIND_EXTRACT_MEMORY in template.yaml (3008 MB function)
	cfg.Blob.Endpoint, cfg.Blob.Region, cfg.Blob.UsePathStyle = endpoint, "us-east-1", true
	ac := aws.Config{APIOptions: awsrt.APIOptions(), Region: "us-east-1", Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
	})}
	s := &presignedStack{s3: awsenv.S3Client(ac, cfg), bucket: "docmind-presign", tenant: cfg.Tenant, keys: map[string]string{}, users: map[string]rag.User{}}
	if _, err := s.s3.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(s.bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.s3.PutBucketVersioning(ctx, &awss3.PutBucketVersioningInput{Bucket: aws.String(s.bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	lib := kbtest.New(t, cfg)
	s.db, s.kb = lib.DB, lib.KB
	for _, role := range []string{"editor", "reader"} {
		u := rag.User{Tenant: cfg.Tenant, Email: role + "@example.com", Role: rag.RoleMember}
		if err := s.db.CreateUser(ctx, &u); err != nil {
			t.Fatal(err)
		}
		kbRole := map[string]rag.KBRole{"editor": rag.KBEditor, "reader": rag.KBReader}[role]
		if err := s.db.SetMember(ctx, cfg.Tenant, s.kb.ID, u.ID, kbRole); err != nil {
			t.Fatal(err)
		}
		plain, prefix, hash, err := auth.NewAPIKey()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.db.CreateAPIKey(ctx, &rag.APIKey{Tenant: cfg.Tenant, UserID: u.ID, Hash: hash, Prefix: prefix, Name: role}); err != nil {
			t.Fatal(err)
		}
		s.keys[role], s.users[role] = plain, u
	}
	blobs := memblob.New()
	emb, err := ingestenv.Embedder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := ingestenv.Stages(cfg, ingestenv.Stores{Records: s.db, Vectors: lib.Vectors, Blobs: blobs}, emb, slog.New(slog.DiscardHandler))
	wf := &ingest.Workflow{Stages: st, Leases: s.db, Events: s.db, Objects: awsenv.Objects{S3: s.s3}}
	s.execs = newASLExecutions(t, wf)
	s.trigger = &ingest.Trigger{Service: ingestenv.Service(cfg, st), Events: s.db, Leases: s.db, Executions: s.execs, Tenant: cfg.Tenant,
		Name: awsrt.ExecutionName, Users: s.db, MaxUploadBytes: cfg.Server.MaxBodyBytes}
	h, err := newHandler(cfg, backends{Stores: httpfn.Stores{SQL: s.db, Keyword: lib.Keyword, Vectors: lib.Vectors, KV: memkv.New(nil, 0)},
		Blobs: blobs, S3: s.s3, Presign: awss3.NewPresignClient(s.s3), Bucket: s.bucket, Executions: s.execs}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.api = httpadapter.NewV2(h)
	return s
}

// presign asks the management API (through API Gateway's event) for an upload URL as role.
func (s *presignedStack) presign(t *testing.T, role, body string) (int, map[string]any) {
	t.Helper()
	f := &apiFixture{proxy: s.api, key: s.keys[role]}
	ev := f.event(t, "list-kbs.json")
	ev.RawPath, ev.RequestContext.HTTP.Path, ev.RequestContext.HTTP.Method = "/api/kbs/handbook/uploads", "/api/kbs/handbook/uploads", "POST"
	ev.Headers["content-type"] = "application/json"
	ev.Body, ev.IsBase64Encoded = body, false
	res := f.do(t, ev)
	var out map[string]any
	json.Unmarshal([]byte(res.Body), &out)
	return res.StatusCode, out
}

// s3Event is the notification S3 sends the ingest queue for the object as it is now (S3's record
// format, decoded by the ingest function's own decoder).
func (s *presignedStack) s3Event(t *testing.T, key string) ingest.SourceChange {
	t.Helper()
	head, err := s.s3.HeadObject(context.Background(), &awss3.HeadObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	rec := map[string]any{"Records": []any{map[string]any{"eventName": "ObjectCreated:Put", "s3": map[string]any{
		"bucket": map[string]any{"name": s.bucket},
		"object": map[string]any{"key": url.QueryEscape(key), "size": aws.ToInt64(head.ContentLength), "versionId": aws.ToString(head.VersionId),
			"eTag": strings.Trim(aws.ToString(head.ETag), `"`), "sequencer": fmt.Sprintf("%016X", time.Now().UnixNano())}}}}}
	body, _ := json.Marshal(rec)
	objs, err := awsrt.DecodeS3Message(string(body))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decode %s: %v %v", body, objs, err)
	}
	o := objs[0]
	return ingest.SourceChange{Bucket: o.Bucket, Key: o.Key, VersionID: o.VersionID, Sequencer: o.Sequencer, Size: o.Size}
}

// bigManual is a Word document of at least n bytes, as a manual with photographs is: a few thousand
// numbered rules in word/document.xml, and an incompressible image (random bytes, stored) making up the
// size. A 50 MB markdown or HTML file could not be ingested at all: the text a document yields is capped
// at 32 MiB (extract.Limits.MaxOutputBytes), and the extraction memory budget refuses HTML over about
// 45 MiB on the extract function; a document's images are not read.
func bigManual(t *testing.T, n int) []byte {
	t.Helper()
	var body strings.Builder
	body.WriteString(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>`)
	for i := range 4000 {
		if i%200 == 0 {
			fmt.Fprintf(&body, `<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Section %d</w:t></w:r></w:p>`, i/200)
		}
		fmt.Fprintf(&body, `<w:p><w:r><w:t>Rule %d: the device of model %d holds %d litres and runs %d hours on one charge.</w:t></w:r></w:p>`, i, i%977, i%53, i%31)
	}
	body.WriteString(`</w:body></w:document>`)
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, f := range [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Default Extension="jpeg" ContentType="image/jpeg"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`},
		{"_rels/.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`},
		{"word/document.xml", body.String()},
	} {
		w, err := zw.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(f[1]))
	}
	img, err := zw.CreateHeader(&zip.FileHeader{Name: "word/media/image1.jpeg", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 1<<16)
	for left := n - b.Len(); left > 0; left -= len(buf) {
		for i := range buf {
			buf[i] = byte(rnd.Uint32())
		}
		img.Write(buf[:min(left, len(buf))])
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// A 50 MB file, far over API Gateway's 10 MB and Lambda's 6 MB, goes from an editor's presigned URL
// straight into (moto's) S3 and, through the bucket's notification and the ingest path (trigger, the
// ingestion state machine's ASL run over the stage handlers, reading the object by version), becomes
// the editor's ready document with the file's SHA-256.
func TestPresignedUpload50MBToReady(t *testing.T) {
	s := newPresignedStack(t)
	data := bigManual(t, 50_000_000)
	if len(data) < 50_000_000 {
		t.Fatalf("made %d bytes", len(data))
	}
	code, up := s.presign(t, "editor", fmt.Sprintf(`{"file_name":"big manual.docx","size":%d,"content_type":"application/vnd.openxmlformats-officedocument.wordprocessingml.document"}`, len(data)))
	if code != http.StatusCreated {
		t.Fatalf("presign = %d %v, want 201", code, up)
	}
	docID, _ := up["document_id"].(string)
	rawURL, _ := up["url"].(string)
	u, err := url.Parse(rawURL)
	if err != nil || docID == "" || up["method"] != "PUT" {
		t.Fatalf("response %v", up)
	}
	q := u.Query()
	wantKey := "/" + s.bucket + "/" + ingest.PresignedKey(s.tenant, s.kb.ID, docID)
	if u.Path != wantKey || q.Get("X-Amz-Expires") != "900" || q.Get("X-Amz-SignedHeaders") != "content-length;content-type;host" {
		t.Errorf("URL %s: want path %s, 900 s, Content-Length and Content-Type signed", rawURL, wantKey)
	}
	if exp, err := time.Parse(time.RFC3339, up["expires_at"].(string)); err != nil || time.Until(exp) > 15*time.Minute || time.Until(exp) < 14*time.Minute {
		t.Errorf("expires_at %v (%v), want about 15 min from now", up["expires_at"], err)
	}
	doc, err := s.db.GetDocument(context.Background(), s.tenant, docID)
	if err != nil || doc.Status != rag.StatusPending || doc.FileName != "big manual.docx" {
		t.Fatalf("document when the URL is issued: %+v %v; want pending", doc, err)
	}
	if who, ok := ingest.Uploader(doc); !ok || who != s.users["editor"].ID {
		t.Errorf("uploader %q %v, want the editor", who, ok)
	}

	req, _ := http.NewRequest(up["method"].(string), rawURL, bytes.NewReader(data))
	for k, v := range up["headers"].(map[string]any) {
		req.Header.Set(k, v.(string))
	}
	if !strings.HasSuffix(req.Header.Get("Content-Type"), "wordprocessingml.document") || req.Header.Get("Content-Length") != fmt.Sprint(len(data)) {
		t.Errorf("headers to send %v: want Content-Type and Content-Length", up["headers"])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("PUT = %d", res.StatusCode)
	}

	ch := s.s3Event(t, ingest.PresignedKey(s.tenant, s.kb.ID, docID))
	if ch.Size != int64(len(data)) {
		t.Errorf("event size %d, want %d", ch.Size, len(data))
	}
	got, err := s.trigger.Handle(context.Background(), ch)
	if err != nil || got.Action != ingest.ActionStarted || got.DocumentID != docID {
		t.Fatalf("trigger = %+v %v, want started for %s", got, err, docID)
	}
	if len(s.execs.errs) != 1 || s.execs.errs[0] != nil {
		d, _ := s.db.GetDocument(context.Background(), s.tenant, docID)
		t.Fatalf("executions: %v; document %s: %s", s.execs.errs, d.Status, d.Error)
	}
	doc, err = s.db.GetDocument(context.Background(), s.tenant, docID)
	sum := sha256.Sum256(data)
	if err != nil || doc.Status != rag.StatusReady || doc.ChunkCount == 0 || doc.ContentHash != hex.EncodeToString(sum[:]) {
		t.Fatalf("document after ingestion: %s %q, %d chunks, hash %s; want ready with the file's hash", doc.Status, doc.Error, doc.ChunkCount, doc.ContentHash)
	}
	t.Logf("50 MB presigned upload ready: %d chunks", doc.ChunkCount)
}

// A reader gets no URL, and an object PUT under a document id that was never issued is refused by the
// trigger, whoever could write it.
func TestPresignedUploadRefusedThroughTheStack(t *testing.T) {
	s := newPresignedStack(t)
	if code, out := s.presign(t, "reader", `{"file_name":"a.md","size":10,"content_type":"text/markdown"}`); code != http.StatusForbidden {
		t.Errorf("reader's presign = %d %v, want 403", code, out)
	}
	if code, out := s.presign(t, "editor", `{"file_name":"a.md","size":10}`); code != http.StatusBadRequest {
		t.Errorf("presign without content_type = %d %v, want 400", code, out)
	}
	key := ingest.PresignedKey(s.tenant, s.kb.ID, rag.NewID("doc"))
	if _, err := s.s3.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
		Body: strings.NewReader("# Planted\n\nNot issued.\n")}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.trigger.Handle(context.Background(), s.s3Event(t, key)); !rag.Is(err, rag.KindInvalid) || res.Action != ingest.ActionRefused {
		t.Errorf("trigger on an object with no document = %+v %v, want refused (Invalid)", res, err)
	}
	if len(s.execs.errs) != 0 {
		t.Errorf("%d executions started, want none", len(s.execs.errs))
	}
}
