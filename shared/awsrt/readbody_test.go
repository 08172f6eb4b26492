package awsrt

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/docmind/docmind/shared/deptest"
)

// The mechanism, deterministically: the body smithy-go builds from a request stream fails net/http's
// extra-bytes copy once smithy has closed it; after ReadOnlyBodies the same body ends the copy cleanly,
// keeps its length and content, and still rewinds for a retry.
func TestReadOnlyBodyEndsCleanlyWhenClosed(t *testing.T) {
	payload := []byte(`{"SecretId":"s"}`)
	req, err := smithyhttp.NewStackRequest().(*smithyhttp.Request).SetStream(bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	raw := req.Build(context.Background()).Body
	raw.Close()
	if _, err := io.Copy(io.Discard, raw); err != io.EOF {
		t.Logf("smithy-go's closed body no longer fails the copy (%v); ReadOnlyBodies may be dropped", err)
	}

	var got *smithyhttp.Request
	next := middleware.FinalizeHandlerFunc(func(_ context.Context, in middleware.FinalizeInput) (middleware.FinalizeOutput, middleware.Metadata, error) {
		got = in.Request.(*smithyhttp.Request)
		return middleware.FinalizeOutput{}, middleware.Metadata{}, nil
	})
	if _, _, err := readOnlyBody(context.Background(), middleware.FinalizeInput{Request: req}, next); err != nil {
		t.Fatal(err)
	}
	if got.ContentLength != int64(len(payload)) || !got.IsStreamSeekable() {
		t.Fatalf("length %d, seekable %v; want %d, true", got.ContentLength, got.IsStreamSeekable(), len(payload))
	}
	body := got.Build(context.Background()).Body
	if _, ok := body.(io.WriterTo); ok {
		t.Fatal("the body still has WriteTo")
	}
	if b, err := io.ReadAll(body); err != nil || !bytes.Equal(b, payload) {
		t.Fatalf("body %q, %v", b, err)
	}
	body.Close()
	if n, err := io.Copy(io.Discard, body); n != 0 || err != nil {
		t.Fatalf("copy of the closed body: %d bytes, %v; want 0, nil", n, err)
	}
	if err := got.RewindStream(); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(got.GetStream()); !bytes.Equal(b, payload) {
		t.Fatalf("after a rewind the stream reads %q", b)
	}
}

// End to end: many calls of a real SDK client, each on a new connection, against a service that
// answers at once with more than the client's read buffer holds. Without ReadOnlyBodies some fail with
// "use of closed network connection" (counted and logged: it is a race); with it none may.
func TestNoClosedConnectionAfterAnswer(t *testing.T) {
	answer := `{"ARN":"arn:aws:secretsmanager:us-east-1:1:secret:s","Name":"s","SecretString":"` + strings.Repeat("v", 64<<10) + `"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	calls := 1500
	if testing.Short() {
		calls = 300
	}
	run := func(opts []func(*middleware.Stack) error) (failed int, last error) {
		for range calls {
			cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), APIOptions: opts, RetryMaxAttempts: 1,
				Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
			c := secretsmanager.NewFromConfig(cfg) // a new client: a new connection and write loop
			out, err := c.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("s")})
			if err != nil {
				failed, last = failed+1, err
			} else if len(aws.ToString(out.SecretString)) != 64<<10 {
				t.Fatalf("secret of %d bytes", len(aws.ToString(out.SecretString)))
			}
		}
		return failed, last
	}
	plain, last := run(nil)
	t.Logf("without ReadOnlyBodies: %d of %d calls failed (last: %v)", plain, calls, last)
	if failed, last := run(APIOptions()); failed > 0 {
		t.Fatalf("with ReadOnlyBodies: %d of %d calls failed; last: %v", failed, calls, last)
	}
}

// Every production AWS configuration is loaded by LoadConfig, so no client is built without
// ReadOnlyBodies.
func TestConfigsLoadedByLoadConfig(t *testing.T) {
	deptest.EachSource(t, filepath.Join("..", ".."), func(path string, src []byte) {
		if filepath.Base(path) != "readbody.go" && strings.Contains(string(src), ".LoadDefaultConfig(") {
			t.Errorf("%s calls LoadDefaultConfig; use awsrt.LoadConfig", path)
		}
	})
}
