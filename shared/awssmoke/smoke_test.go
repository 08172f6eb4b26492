package awssmoke_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/awssmoke"
	"github.com/docmind/docmind/shared/awssmoke/smoketest"
	"github.com/docmind/docmind/shared/sse"
)

const (
	testKey    = "dm_test_key"
	testBucket = "smoke-documents"
)

// stack is an in-process stand-in for a deployed stack: the HTTP API (knowledge bases and documents in
// memory, the upload contract by smoketest.UploadsDouble over gofakes3), a chat URL streaming real SSE
// frames through shared/sse, and the consistency function behind the Lambda Invoke port.
type stack struct {
	mu          sync.Mutex
	kbs         map[string]bool
	docs        map[string]string       // id -> status
	ingest      func(key string) string // the status an ingested object ends in ("" leaves it pending)
	keepDeleted bool

	tokens int
	gap    time.Duration
	buffer bool // the chat answer is delivered at once, as a buffering proxy (or the RIE) does

	report string // the consistency function's answer
	fnErr  bool

	front *smoketest.S3Front
	api   *httptest.Server
	chat  *httptest.Server
	seq   int
}

func newStack(t *testing.T) *stack {
	st := &stack{kbs: map[string]bool{}, docs: map[string]string{}, tokens: 8, gap: 100 * time.Millisecond,
		ingest: func(string) string { return "ready" },
		report: `{"drift":{"documents_without_source":0,"orphan_vectors":0},"repaired":{},"remaining":{},"lock_held":false,"documents":1}`}
	backend := s3mem.New()
	if err := backend.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	s3srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(s3srv.Close)
	st.front = smoketest.NewS3Front(s3srv.URL)
	t.Cleanup(st.front.Close)
	st.front.Stored = func(key string) {
		id := key[strings.LastIndex(key, "/")+1:]
		st.mu.Lock()
		defer st.mu.Unlock()
		if s := st.ingest(key); s != "" && st.docs[id] != "" {
			st.docs[id] = s
		}
	}
	client := s3.New(s3.Options{Region: "us-east-1", BaseEndpoint: aws.String(st.front.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/kbs", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Name string }
		_ = json.NewDecoder(r.Body).Decode(&in)
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.kbs[in.Name] {
			http.Error(w, `{"error":"exists"}`, http.StatusConflict)
			return
		}
		st.kbs[in.Name] = true
		w.WriteHeader(http.StatusCreated)
	})
	mux.HandleFunc("GET /api/documents/{id}", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		defer st.mu.Unlock()
		s, ok := st.docs[r.PathValue("id")]
		if !ok {
			http.Error(w, `{"error":"no document"}`, http.StatusNotFound)
			return
		}
		fmt.Fprintf(w, `{"id":%q,"status":%q,"error":"extract: scripted failure"}`, r.PathValue("id"), s)
	})
	mux.HandleFunc("DELETE /api/documents/{id}", func(w http.ResponseWriter, r *http.Request) {
		st.mu.Lock()
		defer st.mu.Unlock()
		if !st.keepDeleted {
			delete(st.docs, r.PathValue("id"))
		}
		w.WriteHeader(http.StatusNoContent)
	})
	uploads := &smoketest.UploadsDouble{Presign: s3.NewPresignClient(client), Bucket: testBucket, MaxBytes: 1 << 20, Front: st.front, Next: mux,
		Create: func(_ context.Context, _ *http.Request, kb string, in awssmoke.UploadRequest) (smoketest.Pending, int, error) {
			st.mu.Lock()
			defer st.mu.Unlock()
			if !st.kbs[kb] {
				return smoketest.Pending{}, http.StatusNotFound, errors.New("no knowledge base " + kb)
			}
			st.seq++
			id := fmt.Sprintf("doc%d", st.seq)
			st.docs[id] = "pending"
			return smoketest.Pending{DocumentID: id, Key: "uploads/default/" + id}, 0, nil
		}}
	st.api = httptest.NewServer(withKey(uploads))
	t.Cleanup(st.api.Close)
	st.chat = httptest.NewServer(withKey(http.HandlerFunc(st.serveChat)))
	t.Cleanup(st.chat.Close)
	return st
}

func withKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+testKey {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// serveChat streams meta, the tokens gap apart and done, through the SSE writer the chat uses; with
// buffer set the whole body is written at the end, as a buffering proxy delivers it.
func (st *stack) serveChat(w http.ResponseWriter, r *http.Request) {
	out := w
	var rec *httptest.ResponseRecorder
	if st.buffer {
		rec = httptest.NewRecorder()
		out = rec
	}
	sw, err := sse.Start(out)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	_ = sw.Send("meta", map[string]string{"conversation_id": "c1"})
	for i := range st.tokens {
		if i > 0 {
			time.Sleep(st.gap)
		}
		_ = sw.Send("token", map[string]string{"text": fmt.Sprintf("word%d ", i)})
	}
	_ = sw.Send("done", map[string]any{"answer": "…", "sources": []any{map[string]string{"file_name": "smoke.md"}}})
	if rec != nil {
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		_, _ = w.Write(rec.Body.Bytes())
	}
}

// Invoke is the consistency function behind the Lambda port.
func (st *stack) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	if aws.ToString(in.FunctionName) != "smoke-consistency" || string(in.Payload) != `{"repair": false}` {
		return nil, fmt.Errorf("invoked %s with %s", aws.ToString(in.FunctionName), in.Payload)
	}
	if st.fnErr {
		return &lambda.InvokeOutput{StatusCode: 200, FunctionError: aws.String("Unhandled"), Payload: []byte(`{"errorType":"Unavailable","errorMessage":"mysql: connection refused"}`)}, nil
	}
	return &lambda.InvokeOutput{StatusCode: 200, Payload: []byte(st.report)}, nil
}

func (st *stack) smoke(key string) *awssmoke.Smoke {
	return &awssmoke.Smoke{Out: awssmoke.Outputs{ChatURL: st.chat.URL + "/", APIURL: st.api.URL, ConsistencyFunction: "smoke-consistency"},
		Stack: "smoke", Key: key, Lambda: st, Ready: 20 * time.Second, Poll: 20 * time.Millisecond}
}

// byCheck indexes results, failing the test on a check reported twice.
func byCheck(t *testing.T, rs []awssmoke.Result) map[string]awssmoke.Result {
	t.Helper()
	out := map[string]awssmoke.Result{}
	for _, r := range rs {
		if _, dup := out[r.Check]; dup {
			t.Errorf("check %s reported twice", r.Check)
		}
		if r.Status == awssmoke.Fail && r.Look == "" {
			t.Errorf("%s failed without saying what to look at: %s", r.Check, r.Message)
		}
		out[r.Check] = r
	}
	return out
}

// expect: the named checks have these statuses, every other one passed.
func expect(t *testing.T, rs []awssmoke.Result, want map[string]awssmoke.Status) map[string]awssmoke.Result {
	t.Helper()
	got := byCheck(t, rs)
	for _, c := range []string{"upload", "stream", "delete", "consistency"} {
		if _, ok := got[c]; !ok {
			t.Errorf("no %s result in %+v", c, rs)
		}
	}
	for c, r := range got {
		w, ok := want[c]
		if !ok {
			w = awssmoke.Pass
		}
		if r.Status != w {
			t.Errorf("%s: %s (%s), want %s", c, r.Status, r.Message, w)
		}
	}
	return got
}

func TestSmokePasses(t *testing.T) {
	st := newStack(t)
	rs := st.smoke(testKey).Run(context.Background())
	got := expect(t, rs, nil)
	if awssmoke.Failed(rs) {
		t.Errorf("Failed() on a passing run")
	}
	s := got["stream"].Stream
	// 100 ms between tokens against the 10 ms that separates arrivals: one arrival per token, unless a
	// loaded machine merges some (half is the bar)
	if s == nil || s.Tokens != 8 || s.Groups < 4 || s.First != "meta" || s.Last != "done" || s.Sources != 1 {
		t.Errorf("stream stats %+v, want 8 tokens in at least 4 arrivals between meta and done", s)
	}
	if len(st.docs) != 0 {
		t.Errorf("documents left after the smoke: %v", st.docs)
	}
	// a second run finds the knowledge base there and passes again
	if rs := st.smoke(testKey).Run(context.Background()); awssmoke.Failed(rs) {
		t.Errorf("second run: %+v", rs)
	}
}

func TestSmokeFaults(t *testing.T) {
	fail, skip := awssmoke.Fail, awssmoke.Skip
	for _, tc := range []struct {
		name  string
		fault func(*stack)
		key   string
		want  map[string]awssmoke.Status
		says  map[string]string // check -> a phrase its message or look must contain
	}{
		{name: "buffered stream", fault: func(s *stack) { s.buffer = true },
			want: map[string]awssmoke.Status{"stream": fail}, says: map[string]string{"stream": "arrived at once", "stream look": "RESPONSE_STREAM"}},
		{name: "answer too short", fault: func(s *stack) { s.tokens = 1 },
			want: map[string]awssmoke.Status{"stream": fail}, says: map[string]string{"stream": "too short"}},
		{name: "wrong key", key: "dm_wrong",
			want: map[string]awssmoke.Status{"knowledge-base": fail, "upload": skip, "stream": fail, "delete": skip},
			says: map[string]string{"knowledge-base look": "API key", "stream look": "API key"}},
		{name: "ingestion fails", fault: func(s *stack) { s.ingest = func(string) string { return "failed" } },
			want: map[string]awssmoke.Status{"upload": fail}, says: map[string]string{"upload": "scripted failure", "upload look": "list-executions"}},
		{name: "never ingested", fault: func(s *stack) { s.ingest = func(string) string { return "" } },
			want: map[string]awssmoke.Status{"upload": fail}, says: map[string]string{"upload": "not ready within", "upload look": "notification"}},
		{name: "delete leaves the document", fault: func(s *stack) { s.keepDeleted = true },
			want: map[string]awssmoke.Status{"delete": fail}, says: map[string]string{"delete": "still there"}},
		{name: "drift", fault: func(s *stack) { s.report = `{"drift":{"orphan_vectors":3,"documents_without_source":0},"documents":4}` },
			want: map[string]awssmoke.Status{"consistency": fail}, says: map[string]string{"consistency": "orphan_vectors 3"}},
		{name: "consistency function fails", fault: func(s *stack) { s.fnErr = true },
			want: map[string]awssmoke.Status{"consistency": fail}, says: map[string]string{"consistency": "Unavailable"}},
		{name: "lease held", fault: func(s *stack) { s.report = `{"drift":{},"lock_held":true}` },
			want: map[string]awssmoke.Status{"consistency": fail}, says: map[string]string{"consistency": "holds the lease"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(t)
			st.gap = 50 * time.Millisecond // 5x the arrival gap
			if tc.fault != nil {
				tc.fault(st)
			}
			key := testKey
			if tc.key != "" {
				key = tc.key
			}
			sm := st.smoke(key)
			if tc.name == "never ingested" {
				sm.Ready = 300 * time.Millisecond // the wait being measured is the smoke's own bound
			}
			got := expect(t, sm.Run(context.Background()), tc.want)
			for k, phrase := range tc.says {
				check, field, _ := strings.Cut(k, " ")
				text := got[check].Message
				if field == "look" {
					text = got[check].Look
				}
				if !strings.Contains(text, phrase) {
					t.Errorf("%s %s %q does not say %q", check, orMessage(field), text, phrase)
				}
			}
		})
	}
}

func orMessage(f string) string {
	if f == "" {
		return "message"
	}
	return f
}

// TestPresignedPutSendsTheSignedHeaders: the PUT carries exactly the granted headers; a client that
// dropped Content-Type would be refused as S3 refuses it (the front counts the refusals).
func TestPresignedPutSendsTheSignedHeaders(t *testing.T) {
	st := newStack(t)
	st.gap = 50 * time.Millisecond
	if rs := st.smoke(testKey).Run(context.Background()); awssmoke.Failed(rs) {
		t.Fatalf("%+v", rs)
	}
	if st.front.Refused != 0 {
		t.Errorf("the front refused %d PUTs of the smoke", st.front.Refused)
	}
	// the same grant, PUT without its Content-Type: refused
	body := strings.NewReader(`{"file_name":"x.md","size":3,"content_type":"text/markdown"}`)
	req, _ := http.NewRequest(http.MethodPost, st.api.URL+"/api/kbs/smoke/uploads", body)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var g awssmoke.UploadGrant
	_ = json.NewDecoder(resp.Body).Decode(&g)
	resp.Body.Close()
	if resp.StatusCode != 201 || g.Method != http.MethodPut || g.Headers["Content-Type"] != "text/markdown" || !strings.Contains(g.URL, "X-Amz-Signature=") {
		t.Fatalf("grant %d %+v", resp.StatusCode, g)
	}
	put, _ := http.NewRequest(http.MethodPut, g.URL, strings.NewReader("abc"))
	resp, err = http.DefaultClient.Do(put)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || st.front.Refused != 1 {
		t.Errorf("a PUT without the signed Content-Type: %d %s (refused %d)", resp.StatusCode, b, st.front.Refused)
	}
}

// TestReadOutputs reads a stack's outputs from moto's CloudFormation, and names the ones missing.
func TestReadOutputs(t *testing.T) {
	moto := mototest.Start(t)
	ctx := context.Background()
	cfn := cloudformation.NewFromConfig(aws.Config{APIOptions: awsrt.APIOptions(), Region: "us-east-1", BaseEndpoint: aws.String(moto),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	create := func(name string, outputs map[string]string) {
		res := map[string]any{"Queue": map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{"QueueName": name + "-q"}}}
		outs := map[string]any{}
		for k, v := range outputs {
			outs[k] = map[string]any{"Value": v}
		}
		body, _ := json.Marshal(map[string]any{"Resources": res, "Outputs": outs})
		if _, err := cfn.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(string(body))}); err != nil {
			t.Fatal(err)
		}
	}
	create("full", map[string]string{"ChatUrl": "https://d111.cloudfront.net/", "ApiUrl": "https://abc.execute-api.us-east-1.amazonaws.com", "ConsistencyFunctionName": "full-consistency"})
	out, err := awssmoke.ReadOutputs(ctx, cfn, "full")
	want := awssmoke.Outputs{ChatURL: "https://d111.cloudfront.net/", APIURL: "https://abc.execute-api.us-east-1.amazonaws.com", ConsistencyFunction: "full-consistency"}
	if err != nil || out != want {
		t.Errorf("outputs %+v %v, want %+v", out, err, want)
	}
	create("old", map[string]string{"ChatUrl": "https://d222.cloudfront.net/"})
	if _, err := awssmoke.ReadOutputs(ctx, cfn, "old"); err == nil || !strings.Contains(err.Error(), "ApiUrl, ConsistencyFunctionName") || !strings.Contains(err.Error(), "make deploy") {
		t.Errorf("a stack without the outputs: %v", err)
	}
	if _, err := awssmoke.ReadOutputs(ctx, cfn, "absent"); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("no stack: %v", err)
	}
}
