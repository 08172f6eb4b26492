// Package awssmoke is the smoke test a user runs against their own deployed stack (`docmind aws smoke`,
// `make smoke`): it uploads a small document through the presigned path and waits for it to be ready,
// asks a question over the smoke knowledge base (which now holds it) through the chat URL and measures
// whether the Server-Sent Events arrive one at a time, deletes the document and checks it is gone, and
// runs the consistency function expecting no drift. It reads the stack's outputs through CloudFormation and invokes the consistency function through
// the SDK's Lambda client; every call to the application carries the caller's API key.
//
// Each check returns a Result that says what was seen and, when it fails, what to look at. The checks
// change nothing but the smoke knowledge base (created when missing, kept for the next run) and the one
// document they upload and delete.
package awssmoke

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/docmind/docmind/shared/netx"
)

// The ports: the SDK clients' methods the smoke calls (*cloudformation.Client, *lambda.Client).
type (
	Stacks interface {
		DescribeStacks(context.Context, *cloudformation.DescribeStacksInput, ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
	}
	Invoker interface {
		Invoke(context.Context, *lambda.InvokeInput, ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
	}
)

// Outputs are the stack outputs the smoke needs (template.yaml's Outputs of the same names).
type Outputs struct {
	ChatURL             string // ChatUrl: CloudFront in front of the chat Function URL, or the URL itself
	APIURL              string // ApiUrl: the HTTP API
	ConsistencyFunction string // ConsistencyFunctionName
}

// ReadOutputs reads the stack's outputs; an error names every output that is missing.
func ReadOutputs(ctx context.Context, s Stacks, stack string) (Outputs, error) {
	res, err := s.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		return Outputs{}, fmt.Errorf("describe stack %s: %w", stack, err)
	}
	if len(res.Stacks) != 1 {
		return Outputs{}, fmt.Errorf("describe stack %s: %d stacks", stack, len(res.Stacks))
	}
	got := map[string]string{}
	for _, o := range res.Stacks[0].Outputs {
		got[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	out := Outputs{ChatURL: got["ChatUrl"], APIURL: got["ApiUrl"], ConsistencyFunction: got["ConsistencyFunctionName"]}
	var missing []string
	for k, v := range map[string]string{"ChatUrl": out.ChatURL, "ApiUrl": out.APIURL, "ConsistencyFunctionName": out.ConsistencyFunction} {
		if v == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("stack %s (%s) has no output %s: deploy the current template.yaml (make deploy)",
			stack, res.Stacks[0].StackStatus, strings.Join(slices.Sorted(slices.Values(missing)), ", "))
	}
	return out, nil
}

// Status of a check.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip" // not run: an earlier check it depends on failed
)

// Result is one check's outcome; Look says what to look at when it did not pass.
type Result struct {
	Check   string `json:"check"`
	Status  Status `json:"status"`
	Message string `json:"message"`
	Look    string `json:"look,omitempty"`
	// Stream is the stream check's measurement (nil for the other checks).
	Stream *StreamStats `json:"stream,omitempty"`
}

// Smoke runs the checks against one stack.
type Smoke struct {
	Out    Outputs
	Stack  string // for the commands Look names
	Key    string // an API key (or JWT) of an editor of the smoke knowledge base
	HTTP   *http.Client
	Lambda Invoker
	// KB is the knowledge base the document goes to (created when missing); default "smoke".
	KB string
	// Question is asked about the uploaded document; it should ask for a long answer, so that the
	// stream has frames to space out.
	Question string
	// Ready bounds the wait for the upload to be ingested (default 5 minutes); Poll is the interval.
	Ready, Poll time.Duration
	// MinGroups is how many separate arrivals the stream's frames must come in (default 3).
	MinGroups int
	// Now reads the clock (default time.Now); the stream check measures arrival times with it.
	Now func() time.Time
}

// Run runs every check in order: upload (and wait for ready), stream (a question over the smoke
// knowledge base, which then holds the document), delete, consistency. A check whose input an earlier
// one failed to produce is reported as skipped, never as passed.
func (s *Smoke) Run(ctx context.Context) []Result {
	s.defaults()
	var out []Result
	kb := s.ensureKB(ctx)
	if kb.Status != Pass {
		out = append(out, kb)
	}
	up, docID := s.upload(ctx, kb.Status == Pass)
	out = append(out, up)
	out = append(out, s.stream(ctx))
	if docID != "" {
		out = append(out, s.delete(ctx, docID))
	} else {
		out = append(out, Result{Check: "delete", Status: Skip, Message: "no document was uploaded"})
	}
	out = append(out, s.consistency(ctx))
	return out
}

// Failed reports whether any result failed or was skipped.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Status != Pass {
			return true
		}
	}
	return false
}

func (s *Smoke) defaults() {
	if s.HTTP == nil {
		// the hardened client (SR-11), with room for a streamed answer and an upload; loopback allowed:
		// the stack's URLs are the operator's own, or an emulated stack on this machine
		s.HTTP = netx.NewClient(netx.Options{Timeout: 5 * time.Minute, MaxBytes: 64 << 20,
			Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}})
	}
	if s.KB == "" {
		s.KB = "smoke"
	}
	if s.Question == "" {
		s.Question = "Summarise the smoke test document section by section, in as much detail as it gives."
	}
	if s.Ready <= 0 {
		s.Ready = 5 * time.Minute
	}
	if s.Poll <= 0 {
		s.Poll = 2 * time.Second
	}
	if s.MinGroups <= 0 {
		s.MinGroups = 3
	}
	if s.Now == nil {
		s.Now = time.Now
	}
}

// logs names the command that shows a function's logs.
func (s *Smoke) logs(fn string) string {
	return fmt.Sprintf("sam logs -n %s --stack-name %s --start-time '10min ago'", fn, s.Stack)
}

// errStatus is an unexpected HTTP answer, with the start of its body (the API's error message).
type errStatus struct {
	method, url string
	code        int
	body        string
}

func (e *errStatus) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.url, e.code, strings.TrimSpace(e.body))
}

func statusOf(err error) int {
	var es *errStatus
	if errors.As(err, &es) {
		return es.code
	}
	return 0
}
