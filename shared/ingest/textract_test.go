package ingest

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/go-pdf/fpdf"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/textract"
	"github.com/docmind/docmind/shared/textract/textracttest"
)

// withTextract gives the workflow's stages the real Textract client pointed at a fake.
func withTextract(t *testing.T, w *wfEnv) *textracttest.Server {
	t.Helper()
	srv := textracttest.New(t)
	cfg := aws.Config{APIOptions: awsrt.APIOptions(), Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	// the first PDF starts the PDF engine, which takes seconds alone and over a minute on a loaded
	// machine: the default 60 s parse deadline would fail the test, not the code
	w.wf.Stages.Limits.Timeout = 10 * time.Minute
	w.wf.Stages.Textract = textract.New(cfg, textract.Options{Bucket: "docs-bucket", MaxAttempts: 3, MaxBackoff: time.Millisecond})
	return srv
}

// scannedPDF is a two-page PDF with no text layer (only drawn shapes), as a scanner makes them;
// with text, a digital PDF whose pages all have one.
func scannedPDF(t *testing.T, text string) []byte {
	t.Helper()
	// small pages: the scanned page is rendered for OCR before Textract is chosen, at 300 dpi
	p := fpdf.NewCustom(&fpdf.InitType{UnitStr: "mm", Size: fpdf.SizeType{Wd: 90, Ht: 60}})
	p.SetFont("Helvetica", "", 9)
	for range 2 {
		p.AddPage()
		p.Rect(10, 10, 40, 10, "F")
		if text != "" {
			p.MultiCell(70, 5, text, "", "L", false)
		}
	}
	var b bytes.Buffer
	if err := p.Output(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// agreement is the blocks of a three-page scanned service agreement: headings, a paragraph, a table
// of service credits with a merged header, and a poorly recognised last page.
func agreement() []textracttest.Block {
	b := &textracttest.Builder{}
	b.Page(1)
	b.Layout("LAYOUT_TITLE", 99, "Service Agreement")
	b.Layout("LAYOUT_TEXT", 98, "The provider keeps the platform available", "every month of the term.")
	b.Page(2)
	b.Layout("LAYOUT_SECTION_HEADER", 99, "Service credits")
	b.Table([][]string{{"Monthly availability", "Refund", ""}, {"", "Percent", "Cap"}, {"99.0% to 99.9%", "10%", "1 month"},
		{"95.0% to 99.0%", "25%", "2 months"}, {"below 95.0%", "50%", "3 months"}}, 2, "",
		textracttest.Merge{Row: 1, Col: 2, RowSpan: 1, ColSpan: 2}, textracttest.Merge{Row: 1, Col: 1, RowSpan: 2, ColSpan: 1})
	b.Page(3)
	b.Layout("LAYOUT_TEXT", 41, "Signed for the customer")
	return b.Blocks
}

// A scanned PDF on AWS: Extract finds the page without a text layer and starts a Textract job; the
// state machine waits (5, 10, 20 s) and checks it until it succeeds, then reads three NextToken pages
// of results; the table is one table chunk, and the document row says what OCR did.
func TestWorkflowTextractScannedPDF(t *testing.T) {
	w := newWorkflowEnv(t)
	srv := withTextract(t, w)
	var startKey string
	srv.NewJob = func(body map[string]any) *textracttest.Job {
		startKey, _ = body["DocumentLocation"].(map[string]any)["S3Object"].(map[string]any)["Name"].(string)
		return &textracttest.Job{Status: "SUCCEEDED", InProgressPolls: 2, Results: textracttest.Split(agreement(), 3), Pages: 3}
	}
	w.handle(t, w.bucket.put("inbox/legal/agreement.pdf", scannedPDF(t, "")))
	tr, err := w.sfn.last()
	if err != nil {
		t.Fatalf("execution failed: %v (states %v)", err, tr.States)
	}
	d, ok := w.doc(t, "legal", "inbox/legal/agreement.pdf")
	if !ok || d.Status != rag.StatusReady {
		t.Fatalf("document %+v, want ready", d)
	}
	if !strings.HasPrefix(startKey, "sources/"+tenant+"/") || !strings.HasSuffix(startKey, "/source.pdf") {
		t.Errorf("Textract was asked to read %q, not the stored source", startKey)
	}
	if want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second}; !slices.Equal(tr.Waits, want) {
		t.Errorf("waits %v, want %v", tr.Waits, want)
	}
	ops := srv.Ops()
	if ops["StartDocumentAnalysis"] != 1 || ops["GetDocumentAnalysis"] != 3+3 || ops["AnalyzeDocument"] != 0 {
		t.Errorf("Textract calls %v: want one job, three status checks and three result pages", ops)
	}
	if n := strings.Count(strings.Join(tr.States, ","), "TextractStatus"); n != 3 {
		t.Errorf("%d status checks in states %v", n, tr.States)
	}
	if !strings.Contains(d.OCRNote, "OCR (textract) on 3 page(s)") || !strings.HasSuffix(d.OCRNote, "low confidence on page(s) 3: check the scan") {
		t.Errorf("OCR note %q", d.OCRNote)
	}
	rows, _ := w.sql.ListChunks(context.Background(), tenant, d.ID)
	var table *rag.Chunk
	for i, c := range rows {
		if c.Level == rag.LevelChild && c.ContentType == "table" {
			table = &rows[i]
		}
	}
	if table == nil {
		t.Fatalf("no table chunk in %d rows", len(rows))
	}
	for _, want := range []string{"| Monthly availability | Refund / Percent | Refund / Cap |", "| below 95.0% | 50% | 3 months |"} {
		if !strings.Contains(table.Content, want) {
			t.Errorf("table chunk lacks %q:\n%s", want, table.Content)
		}
	}
	if table.Page != 2 {
		t.Errorf("table chunk on page %d, want 2", table.Page)
	}
}

// A scanned image is read by AnalyzeDocument within Extract: no job, no wait.
func TestWorkflowTextractImage(t *testing.T) {
	w := newWorkflowEnv(t)
	srv := withTextract(t, w)
	srv.Analyze = func(body map[string]any) ([]textracttest.Block, int) {
		b := &textracttest.Builder{}
		b.Page(1)
		b.Layout("LAYOUT_TITLE", 99, "Expense receipt")
		b.Layout("LAYOUT_TEXT", 97, "Taxi from the airport, 42 euros.")
		return b.Blocks, 1
	}
	png := []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 64))
	w.handle(t, w.bucket.put("inbox/finance/receipt.png", png))
	tr, err := w.sfn.last()
	if err != nil {
		t.Fatalf("execution failed: %v (states %v)", err, tr.States)
	}
	d, _ := w.doc(t, "finance", "inbox/finance/receipt.png")
	if d.Status != rag.StatusReady || !strings.HasPrefix(d.OCRNote, "OCR (textract) on 1 page(s), mean confidence 9") {
		t.Fatalf("document %s, note %q", d.Status, d.OCRNote)
	}
	if len(tr.Waits) != 0 || slices.Contains(tr.States, "TextractWait") || srv.Ops()["AnalyzeDocument"] != 1 {
		t.Errorf("an image waited: states %v, calls %v", tr.States, srv.Ops())
	}
	doc := srv.Calls()[0].Body["Document"].(map[string]any)
	if doc["Bytes"] == nil {
		t.Errorf("a small image should travel as bytes: %v", doc)
	}
}

// A PDF whose pages all have text never reaches Textract (it would only cost money).
func TestWorkflowTextractNotForDigitalPDF(t *testing.T) {
	w := newWorkflowEnv(t)
	srv := withTextract(t, w)
	w.handle(t, w.bucket.put("inbox/legal/terms.pdf", scannedPDF(t, "These terms apply to every order placed through the shop after the first of March.")))
	if tr, err := w.sfn.last(); err != nil {
		t.Fatalf("execution failed: %v (states %v)", err, tr.States)
	}
	d, _ := w.doc(t, "legal", "inbox/legal/terms.pdf")
	if d.Status != rag.StatusReady || d.OCRNote != "" || len(srv.Calls()) != 0 {
		t.Fatalf("document %s, note %q, Textract calls %v", d.Status, d.OCRNote, srv.Ops())
	}
}

// A job Textract fails, one that never finishes, a refused read and a format Textract does not take
// each fail the document with a reason a person can act on, without retries that cannot help.
func TestWorkflowTextractFailures(t *testing.T) {
	for _, c := range []struct {
		name, file string
		data       func(t *testing.T) []byte
		setup      func(*textracttest.Server)
		reason     string
		check      func(t *testing.T, waits []time.Duration, ops map[string]int)
	}{
		{"failed job", "scan.pdf", func(t *testing.T) []byte { return scannedPDF(t, "") },
			func(s *textracttest.Server) {
				s.NewJob = func(map[string]any) *textracttest.Job {
					return &textracttest.Job{Status: "FAILED", InProgressPolls: 1, Message: "UNSUPPORTED_DOCUMENT"}
				}
			},
			"Terminal: Textract could not read the document: UNSUPPORTED_DOCUMENT",
			func(t *testing.T, waits []time.Duration, ops map[string]int) {
				if len(waits) != 2 || ops["GetDocumentAnalysis"] != 2 {
					t.Errorf("waits %v, calls %v: want two rounds and no result read", waits, ops)
				}
			}},
		{"never finishes", "scan.tiff", func(*testing.T) []byte { return []byte("II*\x00" + strings.Repeat("\x00", 64)) },
			func(s *textracttest.Server) {
				s.NewJob = func(map[string]any) *textracttest.Job {
					return &textracttest.Job{Status: "SUCCEEDED", InProgressPolls: 1 << 20}
				}
			},
			"Terminal: Textract did not finish reading the document in 30 minutes",
			func(t *testing.T, waits []time.Duration, ops map[string]int) {
				var sum time.Duration
				for _, d := range waits {
					sum += d
				}
				if sum < TextractMaxWait*time.Second || sum >= (TextractMaxWait+30)*time.Second || slices.Max(waits) != 30*time.Second {
					t.Errorf("waited %v in %d rounds; want just past %ds, 30 s at most per round", sum, len(waits), TextractMaxWait)
				}
			}},
		{"access refused", "scan.pdf", func(t *testing.T) []byte { return scannedPDF(t, "") },
			func(s *textracttest.Server) { s.Throttle = []string{"AccessDeniedException"} },
			"Permission: textract.StartDocumentAnalysis: Textract cannot read the stored source (check the function's role and the bucket)",
			func(t *testing.T, waits []time.Duration, ops map[string]int) {
				if ops["StartDocumentAnalysis"] != 1 {
					t.Errorf("a refused start was tried %d times; the SDK and the state machine must not retry it", ops["StartDocumentAnalysis"])
				}
			}},
		{"webp", "photo.webp", func(*testing.T) []byte { return []byte("RIFF\x00\x00\x00\x00WEBPVP8 " + strings.Repeat("\x00", 32)) },
			func(*textracttest.Server) {}, "Textract reads PNG, JPEG, TIFF and PDF files: convert this .webp image to PNG",
			func(t *testing.T, waits []time.Duration, ops map[string]int) {
				if len(ops) != 0 {
					t.Errorf("calls %v", ops)
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorkflowEnv(t)
			srv := withTextract(t, w)
			c.setup(srv)
			w.handle(t, w.bucket.put("inbox/scans/"+c.file, c.data(t)))
			tr, _ := w.sfn.last()
			d, _ := w.doc(t, "scans", "inbox/scans/"+c.file)
			if d.Status != rag.StatusFailed || !strings.Contains(d.Error, c.reason) {
				t.Fatalf("document %s with error %q; want failed with %q (states %v)", d.Status, d.Error, c.reason, tr.States)
			}
			c.check(t, tr.Waits, srv.Ops())
		})
	}
}

// Textract's text is untrusted like any document's: hidden characters are stripped and counted, and
// the output limit holds as for a local extraction.
func TestWorkflowTextractTextCleanedAndBounded(t *testing.T) {
	w := newWorkflowEnv(t)
	srv := withTextract(t, w)
	srv.Analyze = func(map[string]any) ([]textracttest.Block, int) {
		b := &textracttest.Builder{}
		b.Page(1)
		b.Layout("LAYOUT_TEXT", 99, "Refunds\u200b are paid\u202e within 30 days.")
		return b.Blocks, 1
	}
	png := []byte("\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 64))
	w.handle(t, w.bucket.put("inbox/finance/refunds.png", png))
	d, _ := w.doc(t, "finance", "inbox/finance/refunds.png")
	rows, _ := w.sql.ListChunks(context.Background(), tenant, d.ID)
	if d.Status != rag.StatusReady || len(rows) == 0 {
		t.Fatalf("document %s (%s), %d rows", d.Status, d.Error, len(rows))
	}
	for _, r := range rows {
		if strings.ContainsAny(r.Content, "\u200b\u202e") {
			t.Errorf("hidden characters kept: %q", r.Content)
		}
	}

	w.wf.Stages.Limits.MaxOutputBytes = 40
	w.handle(t, w.bucket.put("inbox/finance/refunds2.png", append(png, 1)))
	d, _ = w.doc(t, "finance", "inbox/finance/refunds2.png")
	if d.Status != rag.StatusFailed || !strings.Contains(d.Error, "more than 40 bytes of text") {
		t.Errorf("over the output limit: %s, %q", d.Status, d.Error)
	}
}

// The job token is per run: a task retried within one execution gets its job back (textract's own
// test), while uploading the same scan again after a failed job starts a new job instead of being
// handed the failed one.
func TestWorkflowTextractNewRunNewJob(t *testing.T) {
	w := newWorkflowEnv(t)
	srv := withTextract(t, w)
	jobs := 0
	var tokens []string
	srv.NewJob = func(body map[string]any) *textracttest.Job {
		jobs++
		tok, _ := body["ClientRequestToken"].(string)
		tokens = append(tokens, tok)
		if jobs == 1 {
			return &textracttest.Job{Status: "FAILED", Message: "INTERNAL_ERROR"}
		}
		return &textracttest.Job{Status: "SUCCEEDED", Results: textracttest.Split(agreement(), 2), Pages: 3}
	}
	tiff := []byte("II*\x00" + strings.Repeat("\x00", 64))
	w.handle(t, w.bucket.put("inbox/scans/contract.tiff", tiff))
	if d, _ := w.doc(t, "scans", "inbox/scans/contract.tiff"); d.Status != rag.StatusFailed {
		t.Fatalf("first run: %s, want failed", d.Status)
	}
	w.handle(t, w.bucket.put("inbox/scans/contract.tiff", tiff))
	d, _ := w.doc(t, "scans", "inbox/scans/contract.tiff")
	if d.Status != rag.StatusReady || len(tokens) != 2 || tokens[0] == tokens[1] || len(tokens[0]) != 64 {
		t.Fatalf("second run: %s (%s); tokens %q", d.Status, d.Error, tokens)
	}
}
