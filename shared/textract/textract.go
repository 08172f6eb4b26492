// Package textract reads scanned documents and images with Amazon Textract, through the official SDK
// client (aws-sdk-go-v2/service/textract), for the AWS ingestion workflow: AnalyzeDocument for a single
// image, StartDocumentAnalysis for PDFs and TIFFs (multi-page) in the documents bucket, whose job the
// state machine waits for with a Wait/poll loop (Status is one cheap check, never a wait), and
// Collect, which pages the results through NextToken. Both ask for TABLES and LAYOUT and turn the
// blocks into markdown (Markdown): headings, paragraphs, lists and tables, with the same confidence
// report as Tesseract's. Throttling is retried by the SDK's standard retryer with jittered backoff;
// every other failure is classified with a rag kind.
package textract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awstextract "github.com/aws/aws-sdk-go-v2/service/textract"
	"github.com/aws/aws-sdk-go-v2/service/textract/types"
	"github.com/aws/smithy-go"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// API is the part of the Textract client used here (*textract.Client).
type API interface {
	AnalyzeDocument(ctx context.Context, in *awstextract.AnalyzeDocumentInput, opt ...func(*awstextract.Options)) (*awstextract.AnalyzeDocumentOutput, error)
	StartDocumentAnalysis(ctx context.Context, in *awstextract.StartDocumentAnalysisInput, opt ...func(*awstextract.Options)) (*awstextract.StartDocumentAnalysisOutput, error)
	GetDocumentAnalysis(ctx context.Context, in *awstextract.GetDocumentAnalysisInput, opt ...func(*awstextract.Options)) (*awstextract.GetDocumentAnalysisOutput, error)
}

// Options configure New.
type Options struct {
	Bucket string // the documents bucket: where the stored sources Textract reads are
	Prefix string // the blob store's key prefix in the bucket ("" for none)
	// MaxAttempts and MaxBackoff bound the SDK's retries of throttling and transient errors (default
	// 8 attempts, backoff up to 20 s with full jitter: about a minute of waiting at most).
	MaxAttempts int
	MaxBackoff  time.Duration
}

// Client reads documents with Textract.
type Client struct {
	API    API
	Bucket string
	Prefix string
}

// New builds the client over the SDK configuration. Its retryer is the SDK's standard one (exponential
// backoff with full jitter) with Textract's throttling errors named (ThrottlingException,
// ProvisionedThroughputExceededException, LimitExceededException: too many jobs at once) and no
// client-side retry quota: throttling is what these retries are for, and a quota drained by a burst
// of uploads would fail documents that a few seconds' wait would have read.
func New(cfg aws.Config, o Options) *Client {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 8
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 20 * time.Second
	}
	c := awstextract.NewFromConfig(cfg, func(opt *awstextract.Options) {
		opt.Retryer = retry.AddWithErrorCodes(retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts, so.MaxBackoff = o.MaxAttempts, o.MaxBackoff
			so.Backoff = retry.NewExponentialJitterBackoff(o.MaxBackoff)
			so.RateLimiter = ratelimit.None
		}), ThrottleCodes...)
	})
	return &Client{API: c, Bucket: o.Bucket, Prefix: o.Prefix}
}

// ThrottlingCodes are the Textract errors retried with backoff.
var ThrottleCodes = []string{"ThrottlingException", "ProvisionedThroughputExceededException", "LimitExceededException"}

// features are what every analysis asks for: tables and layout (headings, paragraphs, lists).
var features = []types.FeatureType{types.FeatureTypeTables, types.FeatureTypeLayout}

// s3 names a stored source (its blob key) in the documents bucket.
func (c *Client) s3(key string) *types.S3Object {
	return &types.S3Object{Bucket: aws.String(c.Bucket), Name: aws.String(c.Prefix + key)}
}

// Analyze reads a single-page image (PNG, JPEG, single-page TIFF) synchronously: bytes when given
// (at most 10 MB, Textract's limit for them), the stored object (its blob key) otherwise.
func (c *Client) Analyze(ctx context.Context, key string, data []byte, maxPages int) (extract.Result, error) {
	doc := &types.Document{}
	if data != nil {
		doc.Bytes = data
	} else {
		doc.S3Object = c.s3(key)
	}
	out, err := c.API.AnalyzeDocument(ctx, &awstextract.AnalyzeDocumentInput{Document: doc, FeatureTypes: features})
	if err != nil {
		return extract.Result{}, classify("textract.AnalyzeDocument", err)
	}
	pages := 0
	if out.DocumentMetadata != nil {
		pages = int(aws.ToInt32(out.DocumentMetadata.Pages))
	}
	return result(out.Blocks, pages, maxPages)
}

// Start starts the analysis of a stored PDF or TIFF (its blob key) and returns the job id.
func (c *Client) Start(ctx context.Context, key, token string) (string, error) {
	out, err := c.API.StartDocumentAnalysis(ctx, &awstextract.StartDocumentAnalysisInput{
		DocumentLocation: &types.DocumentLocation{S3Object: c.s3(key)}, FeatureTypes: features,
		ClientRequestToken: aws.String(token), JobTag: aws.String("docmind")})
	if err != nil {
		return "", classify("textract.StartDocumentAnalysis", err)
	}
	if aws.ToString(out.JobId) == "" {
		return "", rag.Errorf("textract.StartDocumentAnalysis", rag.KindUnavailable, "Textract returned no job id")
	}
	return *out.JobId, nil
}

// Job statuses, as Textract names them.
const (
	InProgress     = string(types.JobStatusInProgress)
	Succeeded      = string(types.JobStatusSucceeded)
	PartialSuccess = string(types.JobStatusPartialSuccess)
	Failed         = string(types.JobStatusFailed)
)

// Status is one check of a job: GetDocumentAnalysis with one result, for its JobStatus and
// StatusMessage. It never waits: the state machine's Wait state does.
func (c *Client) Status(ctx context.Context, jobID string) (status, message string, err error) {
	out, err := c.API.GetDocumentAnalysis(ctx, &awstextract.GetDocumentAnalysisInput{JobId: aws.String(jobID), MaxResults: aws.Int32(1)})
	if err != nil {
		return "", "", classify("textract.GetDocumentAnalysis", err)
	}
	switch s := string(out.JobStatus); s {
	case InProgress, Succeeded, PartialSuccess, Failed:
		return s, aws.ToString(out.StatusMessage), nil
	default:
		return "", "", rag.Errorf("textract.GetDocumentAnalysis", rag.KindUnavailable, "Textract returned the unknown job status %q", s)
	}
}

// maxResultPages bounds the NextToken loop: a service that kept returning tokens would otherwise hold
// the task until its timeout (1,000 blocks a page: ten million blocks is far past any real document).
const maxResultPages = 10000

// Collect reads a finished job's blocks, page after page through NextToken, and turns them into
// markdown. A job that did not succeed is Terminal with Textract's message; PARTIAL_SUCCESS keeps the
// pages read, and the pages its warnings name are listed in the report (OCRReport.Unread), so the
// document's status says which pages came out empty.
func (c *Client) Collect(ctx context.Context, jobID string, maxPages int) (extract.Result, error) {
	const op = "textract.GetDocumentAnalysis"
	var blocks []types.Block
	pages := 0
	unread := map[int]bool{} // pages a PARTIAL_SUCCESS job's warnings name
	var token *string
	for i := 0; ; i++ {
		if i == maxResultPages {
			return extract.Result{}, rag.Errorf(op, rag.KindTerminal, "Textract's results did not end after %d pages of blocks", maxResultPages)
		}
		out, err := c.API.GetDocumentAnalysis(ctx, &awstextract.GetDocumentAnalysisInput{JobId: aws.String(jobID), NextToken: token})
		if err != nil {
			return extract.Result{}, classify(op, err)
		}
		switch out.JobStatus {
		case types.JobStatusSucceeded, types.JobStatusPartialSuccess:
		case types.JobStatusInProgress:
			return extract.Result{}, rag.Errorf(op, rag.KindUnavailable, "the Textract job is still running")
		default:
			return extract.Result{}, rag.Errorf(op, rag.KindTerminal, "Textract could not read the document (%s): %s", out.JobStatus, aws.ToString(out.StatusMessage))
		}
		if out.DocumentMetadata != nil {
			pages = max(pages, int(aws.ToInt32(out.DocumentMetadata.Pages)))
			if maxPages > 0 && pages > maxPages {
				return extract.Result{}, rag.Errorf(op, rag.KindTerminal, "the document has %d pages, the limit is %d", pages, maxPages)
			}
		}
		blocks = append(blocks, out.Blocks...)
		for _, w := range out.Warnings {
			for _, p := range w.Pages {
				unread[int(p)] = true
			}
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		if token != nil && *token == *out.NextToken {
			return extract.Result{}, rag.Errorf(op, rag.KindTerminal, "Textract returned the same NextToken twice")
		}
		token = out.NextToken
	}
	res, err := result(blocks, pages, maxPages)
	if err != nil {
		return res, err
	}
	for p := range unread {
		if p >= 1 && p <= res.Pages {
			res.OCR.Unread = append(res.OCR.Unread, p)
		}
	}
	slices.Sort(res.OCR.Unread)
	return res, nil
}

// result is the markdown of blocks as an extraction result.
func result(blocks []types.Block, pages, maxPages int) (extract.Result, error) {
	if len(blocks) == 0 {
		return extract.Result{}, rag.Errorf("textract", rag.KindTerminal, "Textract returned no blocks for the document")
	}
	md, rep, n := Markdown(blocks, pages)
	if maxPages > 0 && n > maxPages {
		return extract.Result{}, rag.Errorf("textract", rag.KindTerminal, "the document has %d pages, the limit is %d", n, maxPages)
	}
	return extract.Result{Markdown: md, Pages: n, OCR: rep}, nil
}

// classify gives a Textract error its kind. Throttling that outlasted the retries and the service's
// own failures are Unavailable (the state machine retries those later); a document Textract cannot
// read is Terminal with Textract's reason; a refused access (the role, the bucket, a KMS key) is
// Permission; anything unknown stays Unknown.
func classify(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return rag.E(op, rag.KindUnavailable, err)
	}
	var de *smithy.DeserializationError
	if errors.As(err, &de) {
		return rag.E(op, rag.KindUnavailable, fmt.Errorf("Textract's response could not be read: %w", err))
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		// no response from the service (connection refused, reset, DNS): the retries are spent
		return rag.E(op, rag.KindUnavailable, err)
	}
	switch ae.ErrorCode() {
	case "ThrottlingException", "ProvisionedThroughputExceededException", "LimitExceededException",
		"InternalServerError", "ServiceUnavailable", "ServiceQuotaExceededException":
		return rag.E(op, rag.KindUnavailable, err)
	case "BadDocumentException", "UnsupportedDocumentException", "DocumentTooLargeException":
		return rag.E(op, rag.KindTerminal, fmt.Errorf("Textract cannot read the document (%s): %s", ae.ErrorCode(), ae.ErrorMessage()))
	case "InvalidJobIdException":
		return rag.E(op, rag.KindTerminal, fmt.Errorf("Textract does not know the job (InvalidJobIdException): it expired or was never started"))
	case "AccessDeniedException", "InvalidS3ObjectException", "InvalidKMSKeyException":
		return rag.E(op, rag.KindPermission, fmt.Errorf("Textract cannot read the stored source (check the function's role and the bucket): %s: %s", ae.ErrorCode(), ae.ErrorMessage()))
	case "InvalidParameterException", "ValidationException", "IdempotentParameterMismatchException":
		return rag.E(op, rag.KindInvalid, err)
	}
	return rag.E(op, rag.KindUnknown, err)
}
