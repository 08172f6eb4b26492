package textract_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/textract"
)

// Against moto_server (5.2.1), an independent implementation of Textract's JSON protocol that serves
// the job lifecycle without real blocks: the SDK's StartDocumentAnalysis request is accepted and gives
// a job id, and an unknown job is InvalidJobIdException, which is Terminal.
func TestMotoJobLifecycle(t *testing.T) {
	url := mototest.Start(t)
	cfg := aws.Config{APIOptions: awsrt.APIOptions(), Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("testing", "testing", "")}
	c := textract.New(cfg, textract.Options{Bucket: "docs-bucket", MaxAttempts: 2, MaxBackoff: 10 * time.Millisecond})
	ctx := context.Background()
	id, err := c.Start(ctx, "sources/t1/kb/doc/source.pdf", strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	if len(id) < 16 {
		t.Fatalf("job id %q", id)
	}
	// moto 5.2.1 answers GetDocumentAnalysis with DocumentMetadata.Pages as an object ({"Pages": n});
	// the service's documented shape is a number, so the SDK cannot read it: a malformed response,
	// reported as Unavailable (retried by the state machine) with a message saying so, not a crash
	_, _, err = c.Status(ctx, id)
	if !rag.Is(err, rag.KindUnavailable) || !strings.Contains(err.Error(), "could not be read") {
		t.Errorf("status of moto's job: %v; want Unavailable, the response could not be read", err)
	}
	_, _, err = c.Status(ctx, "00000000-0000-0000-0000-000000000000")
	if !rag.Is(err, rag.KindTerminal) || !strings.Contains(err.Error(), "InvalidJobId") {
		t.Errorf("unknown job: %v; want Terminal naming InvalidJobIdException", err)
	}
}
