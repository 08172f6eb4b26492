package textract_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/textract"
	"github.com/docmind/docmind/shared/textract/textracttest"
)

// client is the real SDK client pointed at the fake, with millisecond backoff.
func client(t *testing.T, srv *textracttest.Server, attempts int) *textract.Client {
	t.Helper()
	cfg := aws.Config{APIOptions: awsrt.APIOptions(), Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	return textract.New(cfg, textract.Options{Bucket: "docs-bucket", Prefix: "t1/", MaxAttempts: attempts, MaxBackoff: 5 * time.Millisecond})
}

// threePages is a three-page scanned policy: a title, a section heading, paragraphs, a list, a running
// header and page number (dropped), a table on page 2 and a poorly recognised page 3.
func threePages() *textracttest.Builder {
	b := &textracttest.Builder{}
	b.Page(1)
	b.Layout("LAYOUT_HEADER", 99, "ACME Corp - confidential")
	b.Layout("LAYOUT_TITLE", 99, "Service Agreement")
	b.Layout("LAYOUT_TEXT", 98, "This agreement sets the service levels", "of the hosted platform.")
	b.Layout("LAYOUT_SECTION_HEADER", 99, "1. Scope")
	b.List(97, "• Hosting of the platform", "• Support on working days")
	b.Layout("LAYOUT_PAGE_NUMBER", 99, "1")
	b.Page(2)
	b.Layout("LAYOUT_SECTION_HEADER", 99, "2. Service credits")
	b.Table([][]string{{"Monthly availability", "Credit"}, {"99.0% to 99.9%", "10%"}, {"95.0% to 99.0%", "25%"}, {"below 95.0%", "50%"}}, 1, "")
	b.Layout("LAYOUT_TEXT", 98, "Credits are paid within 30 days.")
	b.Page(3)
	b.Layout("LAYOUT_SECTION_HEADER", 45, "3. Signatures")
	b.Layout("LAYOUT_TEXT", 40, "Signed for the customer")
	return b
}

func TestMultiPageJobAcrossThreeResultPages(t *testing.T) {
	srv := textracttest.New(t)
	b := threePages()
	srv.NewJob = func(map[string]any) *textracttest.Job {
		return &textracttest.Job{Status: "SUCCEEDED", InProgressPolls: 2, Results: textracttest.Split(b.Blocks, 3), Pages: 3}
	}
	c := client(t, srv, 3)
	ctx := context.Background()
	tok := strings.Repeat("7f", 32) // ingest derives it from the document and its content
	id, err := c.Start(ctx, "sources/t1/kb/doc-1/agreement.pdf", tok)
	if err != nil {
		t.Fatal(err)
	}
	// a retried Start (a lost response) gets the same job: the token is the document's content
	if again, err := c.Start(ctx, "sources/t1/kb/doc-1/agreement.pdf", tok); err != nil || again != id {
		t.Fatalf("second Start: %q, %v; want the job %q", again, err, id)
	}
	var statuses []string
	for range 3 {
		st, _, err := c.Status(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, st)
	}
	if strings.Join(statuses, ",") != "IN_PROGRESS,IN_PROGRESS,SUCCEEDED" {
		t.Fatalf("statuses %v", statuses)
	}
	res, err := c.Collect(ctx, id, 100)
	if err != nil {
		t.Fatal(err)
	}
	start := srv.Calls()[0].Body
	loc := start["DocumentLocation"].(map[string]any)["S3Object"].(map[string]any)
	if loc["Bucket"] != "docs-bucket" || loc["Name"] != "t1/sources/t1/kb/doc-1/agreement.pdf" {
		t.Errorf("S3Object %v: want the bucket and the prefixed key", loc)
	}
	if f := start["FeatureTypes"].([]any); len(f) != 2 || f[0] != "TABLES" || f[1] != "LAYOUT" {
		t.Errorf("FeatureTypes %v", f)
	}
	if start["ClientRequestToken"] != tok || len(tok) != 64 {
		t.Errorf("ClientRequestToken %v", start["ClientRequestToken"])
	}
	var tokens []string
	for _, call := range srv.Calls() {
		if call.Op == "GetDocumentAnalysis" && call.Body["MaxResults"] == nil {
			s, _ := call.Body["NextToken"].(string)
			tokens = append(tokens, s)
		}
	}
	if strings.Join(tokens, ",") != ",page-1,page-2" {
		t.Errorf("result pages read with tokens %q; want the first, page-1, page-2", tokens)
	}
	want := `
<!-- page 1 -->

# Service Agreement

This agreement sets the service levels of the hosted platform.

## 1. Scope

- Hosting of the platform
- Support on working days

<!-- page 2 -->

## 2. Service credits

| Monthly availability | Credit |
| --- | --- |
| 99.0% to 99.9% | 10% |
| 95.0% to 99.0% | 25% |
| below 95.0% | 50% |

Credits are paid within 30 days.

<!-- page 3 -->

## [?3.] [?Signatures]

[?Signed] [?for] [?the] [?customer]
`
	if res.Markdown != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", res.Markdown, want)
	}
	if res.Pages != 3 || res.OCR == nil || len(res.OCR.Pages) != 3 {
		t.Fatalf("pages %d, report %+v", res.Pages, res.OCR)
	}
	if got := res.OCR.LowPages; len(got) != 1 || got[0] != 3 {
		t.Errorf("low pages %v, want [3]", got)
	}
	if note := res.OCR.Note(); !strings.Contains(note, "OCR (textract) on 3 page(s)") || !strings.Contains(note, "low confidence on page(s) 3: check the scan") {
		t.Errorf("note %q", note)
	}
	if res.OCR.LowWords != 6 {
		t.Errorf("low words %d, want 6", res.OCR.LowWords)
	}
}

// A header cell merged over two columns and one merged over two rows: each column's header says
// what it holds, the merged text repeated over the span, never shifted into the wrong column.
func TestMergedHeaderCells(t *testing.T) {
	srv := textracttest.New(t)
	b := &textracttest.Builder{}
	b.Page(1)
	b.Table([][]string{
		{"Monthly availability", "Service credit", ""},
		{"", "Percent", "Cap"},
		{"99.0% to 99.9%", "10%", "1 month"},
		{"below 95.0%", "50%", "3 months"},
	}, 2, "Table 1: credits", textracttest.Merge{Row: 1, Col: 2, RowSpan: 1, ColSpan: 2}, textracttest.Merge{Row: 1, Col: 1, RowSpan: 2, ColSpan: 1})
	srv.Analyze = func(map[string]any) ([]textracttest.Block, int) { return b.Blocks, 1 }
	res, err := client(t, srv, 2).Analyze(context.Background(), "k", []byte("\x89PNG..."), 10)
	if err != nil {
		t.Fatal(err)
	}
	want := `
<!-- page 1 -->

Table 1: credits

| Monthly availability | Service credit / Percent | Service credit / Cap |
| --- | --- | --- |
| 99.0% to 99.9% | 10% | 1 month |
| below 95.0% | 50% | 3 months |
`
	if res.Markdown != want {
		t.Errorf("markdown:\n%s\nwant:\n%s", res.Markdown, want)
	}
	call := srv.Calls()[0]
	if doc := call.Body["Document"].(map[string]any); doc["Bytes"] == nil || doc["S3Object"] != nil {
		t.Errorf("AnalyzeDocument sent %v; want the image's bytes", doc)
	}
}

// A merged body cell (a row label over two rows) is repeated in both rows.
func TestMergedBodyCellRepeated(t *testing.T) {
	srv := textracttest.New(t)
	b := &textracttest.Builder{}
	b.Page(1)
	b.Table([][]string{{"Plan", "Region", "Price"}, {"Basic", "EU", "10"}, {"", "US", "12"}}, 1, "", textracttest.Merge{Row: 2, Col: 1, RowSpan: 2, ColSpan: 1})
	srv.Analyze = func(map[string]any) ([]textracttest.Block, int) { return b.Blocks, 1 }
	res, err := client(t, srv, 2).Analyze(context.Background(), "k", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Markdown, "| Basic | EU | 10 |\n| Basic | US | 12 |") {
		t.Errorf("markdown:\n%s", res.Markdown)
	}
	if doc := srv.Calls()[0].Body["Document"].(map[string]any); doc["S3Object"] == nil {
		t.Errorf("AnalyzeDocument without bytes sent %v; want the stored object", doc)
	}
}

// Throttling (each of Textract's three kinds) is retried by the SDK's retryer until the call succeeds;
// throttling that outlasts the attempts is Unavailable, which the state machine retries later.
func TestThrottlingRetriedThenSucceeds(t *testing.T) {
	srv := textracttest.New(t)
	b := &textracttest.Builder{}
	b.Page(1)
	b.Line("Invoice 42", 99)
	srv.Analyze = func(map[string]any) ([]textracttest.Block, int) { return b.Blocks, 1 }
	srv.Throttle = []string{"ThrottlingException", "ProvisionedThroughputExceededException", "LimitExceededException"}
	res, err := client(t, srv, 8).Analyze(context.Background(), "k", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.Ops()["AnalyzeDocument"]; n != 4 {
		t.Errorf("%d AnalyzeDocument calls, want 3 throttled and 1 answered", n)
	}
	if !strings.Contains(res.Markdown, "Invoice 42") {
		t.Errorf("markdown %q", res.Markdown)
	}

	srv.Throttle = []string{"ThrottlingException", "ThrottlingException", "ThrottlingException", "ThrottlingException"}
	_, err = client(t, srv, 3).Analyze(context.Background(), "k", nil, 10)
	if !rag.Is(err, rag.KindUnavailable) || !strings.Contains(err.Error(), "ThrottlingException") {
		t.Errorf("throttled past the attempts: %v; want Unavailable naming ThrottlingException", err)
	}
	if n := srv.Ops()["AnalyzeDocument"]; n != 7 {
		t.Errorf("%d AnalyzeDocument calls in all, want 4 + 3", n)
	}
}

func TestFailedJob(t *testing.T) {
	srv := textracttest.New(t)
	srv.NewJob = func(map[string]any) *textracttest.Job {
		return &textracttest.Job{Status: "FAILED", Message: "UNSUPPORTED_DOCUMENT: the document is encrypted"}
	}
	c := client(t, srv, 2)
	id, err := c.Start(context.Background(), "k.pdf", "tok")
	if err != nil {
		t.Fatal(err)
	}
	st, msg, err := c.Status(context.Background(), id)
	if err != nil || st != textract.Failed || !strings.Contains(msg, "encrypted") {
		t.Fatalf("status %q %q %v", st, msg, err)
	}
	_, err = c.Collect(context.Background(), id, 10)
	if !rag.Is(err, rag.KindTerminal) || !strings.Contains(err.Error(), "the document is encrypted") {
		t.Errorf("collect of a failed job: %v; want Terminal with Textract's message", err)
	}
}

func TestErrorsClassified(t *testing.T) {
	for _, c := range []struct {
		code string
		kind rag.Kind
	}{
		{"UnsupportedDocumentException", rag.KindTerminal},
		{"BadDocumentException", rag.KindTerminal},
		{"DocumentTooLargeException", rag.KindTerminal},
		{"AccessDeniedException", rag.KindPermission},
		{"InvalidS3ObjectException", rag.KindPermission},
		{"InternalServerError", rag.KindUnavailable},
	} {
		srv := textracttest.New(t)
		srv.Throttle = []string{c.code, c.code, c.code}
		_, err := client(t, srv, 1).Start(context.Background(), "k.pdf", "tok")
		if !rag.Is(err, c.kind) {
			t.Errorf("%s: %v (%v); want %v", c.code, err, rag.KindOf(err), c.kind)
		}
	}
}

func TestMalformedResponses(t *testing.T) {
	srv := textracttest.New(t)
	srv.Analyze = func(map[string]any) ([]textracttest.Block, int) { return nil, 1 }
	srv.Malformed = `{"Blocks": [{"Id": 7`
	_, err := client(t, srv, 1).Analyze(context.Background(), "k", nil, 10)
	if !rag.Is(err, rag.KindUnavailable) || !strings.Contains(err.Error(), "could not be read") {
		t.Errorf("truncated JSON: %v; want Unavailable saying the response could not be read", err)
	}

	srv.Malformed = ""
	_, err = client(t, srv, 1).Analyze(context.Background(), "k", nil, 10)
	if !rag.Is(err, rag.KindTerminal) || !strings.Contains(err.Error(), "no blocks") {
		t.Errorf("no blocks: %v; want Terminal", err)
	}

	// well-formed JSON whose relationships name missing blocks and whose cells have no or absurd
	// positions: what can be placed is, the rest is skipped, nothing panics
	srv.Analyze = func(map[string]any) ([]textracttest.Block, int) {
		return []textracttest.Block{
			{Id: "p", BlockType: "PAGE", Page: 1, Relationships: []textracttest.Relationship{{Type: "CHILD", Ids: []string{"l", "gone"}}}},
			{Id: "l", BlockType: "LINE", Page: 1, Text: "Total due", Relationships: []textracttest.Relationship{{Type: "CHILD", Ids: []string{"missing"}}}},
			{Id: "t", BlockType: "TABLE", Page: 1, Relationships: []textracttest.Relationship{{Type: "CHILD", Ids: []string{"c1", "c2", "c3", "nope"}}, {Type: "MERGED_CELL", Ids: []string{"m"}}}},
			{Id: "c1", BlockType: "CELL", Page: 1, RowIndex: 1, ColumnIndex: 1, Relationships: []textracttest.Relationship{{Type: "CHILD", Ids: []string{"w1"}}}},
			{Id: "w1", BlockType: "WORD", Page: 1, Text: "Amount", Confidence: 99},
			{Id: "c2", BlockType: "CELL", Page: 1},
			{Id: "c3", BlockType: "CELL", Page: 1, RowIndex: 2000000000, ColumnIndex: 1},
			{Id: "m", BlockType: "MERGED_CELL", Page: 1, RowIndex: 1, ColumnIndex: 1, RowSpan: 2000000000, ColumnSpan: 2000000000},
		}, 1
	}
	res, err := client(t, srv, 1).Analyze(context.Background(), "k", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Markdown) > 1<<10 {
		t.Fatalf("a malformed span made %d bytes of markdown", len(res.Markdown))
	}
	if !strings.Contains(res.Markdown, "Total due") || !strings.Contains(res.Markdown, "| Amount |") {
		t.Errorf("markdown:\n%s", res.Markdown)
	}
}

// A document over the page limit fails Terminal before its blocks are kept.
func TestPageLimit(t *testing.T) {
	srv := textracttest.New(t)
	b := threePages()
	srv.NewJob = func(map[string]any) *textracttest.Job {
		return &textracttest.Job{Status: "SUCCEEDED", Results: textracttest.Split(b.Blocks, 3), Pages: 3}
	}
	c := client(t, srv, 1)
	id, _ := c.Start(context.Background(), "k.pdf", "tok")
	_, err := c.Collect(context.Background(), id, 2)
	if !rag.Is(err, rag.KindTerminal) || !strings.Contains(err.Error(), "3 pages, the limit is 2") {
		t.Errorf("%v", err)
	}
	if n := srv.Ops()["GetDocumentAnalysis"]; n != 1 {
		t.Errorf("%d result pages read; the first one's DocumentMetadata already says too many", n)
	}
}

// Blocks without LAYOUT (a response to TABLES alone): each LINE a paragraph, the table where its first
// line stood, not also as loose lines; Chinese words joined without spaces.
func TestLinesWithoutLayout(t *testing.T) {
	b := &textracttest.Builder{}
	b.Page(1)
	b.Line("服务 协议", 99)
	var blocks []textracttest.Block
	b.Table([][]string{{"月可用性", "返还比例"}, {"低于 95.0%", "50%"}}, 1, "")
	b.Line("Paid within 30 days.", 99)
	for _, bl := range b.Blocks {
		if !strings.HasPrefix(bl.BlockType, "LAYOUT_") {
			blocks = append(blocks, bl)
		}
	}
	srv := textracttest.New(t)
	srv.Analyze = func(map[string]any) ([]textracttest.Block, int) { return blocks, 1 }
	res, err := client(t, srv, 1).Analyze(context.Background(), "k", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := "\n<!-- page 1 -->\n\n服务协议\n\n| 月可用性 | 返还比例 |\n| --- | --- |\n| 低于 95.0% | 50% |\n\nPaid within 30 days.\n"
	if res.Markdown != want {
		t.Errorf("markdown:\n%q\nwant:\n%q", res.Markdown, want)
	}
}

// PARTIAL_SUCCESS keeps the pages Textract read and says which it could not; a status check asks for
// one block and no more pages.
func TestPartialSuccessAndCheapStatus(t *testing.T) {
	srv := textracttest.New(t)
	b := threePages()
	srv.NewJob = func(map[string]any) *textracttest.Job {
		return &textracttest.Job{Status: "PARTIAL_SUCCESS", Results: textracttest.Split(b.Blocks, 2), Pages: 3,
			Warnings: []map[string]any{{"ErrorCode": "INTERNAL_ERROR", "Pages": []int{3}}}}
	}
	c := client(t, srv, 1)
	id, _ := c.Start(context.Background(), "k.pdf", "tok")
	st, _, err := c.Status(context.Background(), id)
	if err != nil || st != textract.PartialSuccess {
		t.Fatalf("status %q, %v", st, err)
	}
	if call := srv.Calls()[1]; call.Body["MaxResults"] != 1.0 || call.Body["NextToken"] != nil {
		t.Errorf("status check sent %v; want MaxResults 1 and no token", call.Body)
	}
	res, err := c.Collect(context.Background(), id, 10)
	if err != nil || res.Pages != 3 || !strings.Contains(res.Markdown, "| below 95.0% | 50% |") {
		t.Fatalf("partial result: %d pages, %v\n%s", res.Pages, err, res.Markdown)
	}
	if note := res.OCR.Note(); !strings.HasSuffix(note, "; page(s) 3 could not be read") {
		t.Errorf("note %q: the pages Textract's warnings name must be said", note)
	}
}
