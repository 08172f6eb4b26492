package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"strings"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// Textract reads the documents that need OCR with a document analysis service (shared/textract's
// Client, Amazon Textract) on AWS, where no OCR binary runs. Analyze reads a single image at once;
// Start begins a job for a PDF or TIFF in the documents bucket, which the ingestion state machine waits
// for (a Wait state and one Status check per round: no function sleeps on a job) before Collect reads
// its results. key is the stored source's blob key; token makes Start idempotent for one content.
type Textract interface {
	Analyze(ctx context.Context, key string, data []byte, maxPages int) (extract.Result, error)
	Start(ctx context.Context, key, token string) (string, error)
	Status(ctx context.Context, jobID string) (status, message string, err error)
	Collect(ctx context.Context, jobID string, maxPages int) (extract.Result, error)
}

// TextractJob is a document analysis job the workflow waits for (ExtractOut.Textract while pending).
type TextractJob struct {
	JobID   string `json:"job_id"`
	Status  string `json:"status"`            // Textract's JobStatus: IN_PROGRESS, SUCCEEDED, PARTIAL_SUCCESS, FAILED
	Message string `json:"message,omitempty"` // why it failed, for the document's error
	Polls   int    `json:"polls"`             // status checks so far
	// Waited is the seconds waited so far and Wait the seconds the next Wait state waits: 5 s, doubling
	// to 30 s (a page takes seconds; most documents finish in the first rounds, and a long one costs
	// few state transitions). The state machine fails the document once Waited passes TextractMaxWait.
	Waited int `json:"waited"`
	Wait   int `json:"wait"`
}

// TextractMaxWait is the longest the workflow waits for a Textract job, in seconds: the ASL's
// TextractDone choice fails the document past it ("Textract did not finish ... in 30 minutes"). Kept
// well inside the execution's one-hour timeout and lease, so the rollback still runs.
const TextractMaxWait = 1800

// textractBytesLimit is the largest image sent to AnalyzeDocument as bytes; a larger one is read by
// Textract from the bucket (the service takes up to 10 MB either way, and bytes travel base64-encoded).
const textractBytesLimit = 5 << 20

// errTextract marks a document the local parse found needs OCR, which Textract does instead.
var errTextract = errors.New("the document needs OCR, read by Textract")

// deferOCR is the OCR engine of the local parse when Textract is configured: the first page or image
// that needs recognition stops the parse, and the document goes to Textract whole (a PDF whose pages
// all have a text layer never does, and costs nothing).
type deferOCR struct{}

func (deferOCR) Recognize(context.Context, []byte, string) ([]extract.OCRPage, error) {
	// Terminal so that the extraction guard passes it through unchanged (it rewrites unclassified errors)
	return nil, rag.E("ingest.Extract", rag.KindTerminal, errTextract)
}

// jobToken is StartDocumentAnalysis' ClientRequestToken for one document's content in one run: an
// Extract task retried after a lost response gets the same job back instead of paying for a second
// one, while a later run of the same content (after a job that failed) starts a new job rather than
// getting the failed one again.
func jobToken(documentID, run string, content []byte) string {
	h := sha256.New()
	for _, s := range []string{documentID, run} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	h.Write(content)
	return hex.EncodeToString(h.Sum(nil))
}

func (s *Stages) maxPages() int {
	if s.Limits.MaxPages > 0 {
		return s.Limits.MaxPages
	}
	return 2000
}

// startTextract reads a document that needs OCR with Textract: an image at once, a PDF or TIFF
// (possibly many pages) as a job the state machine waits for.
func (s *Stages) startTextract(ctx context.Context, in ExtractIn, data []byte) (ExtractOut, error) {
	const op = "ingest.Extract"
	switch ext := strings.ToLower(filepath.Ext(in.FileName)); ext {
	case ".png", ".jpg", ".jpeg":
		var b []byte
		if len(data) <= textractBytesLimit {
			b = data
		}
		res, err := s.Textract.Analyze(ctx, in.SourceKey, b, s.maxPages())
		if err != nil {
			return ExtractOut{}, err
		}
		res.Format = "image"
		return s.stageResult(ctx, in, res)
	case ".pdf", ".tif", ".tiff":
		id, err := s.Textract.Start(ctx, in.SourceKey, jobToken(in.DocumentID, in.Run, data))
		if err != nil {
			return ExtractOut{}, err
		}
		format := "pdf"
		if ext != ".pdf" {
			format = "image"
		}
		// the sidecar and object metadata ride with the job to its collection
		return ExtractOut{Doc: in.Doc, Format: format, Textract: &TextractJob{JobID: id, Status: "IN_PROGRESS", Wait: nextWait(0)},
			File: FileMeta{Sidecar: in.Sidecar, Object: in.Object}}, nil
	default:
		return ExtractOut{}, rag.Errorf(op, rag.KindTerminal, "Textract reads PNG, JPEG, TIFF and PDF files: convert this %s image to PNG", ext)
	}
}

// nextWait is the Wait after polls status checks: 5, 10, 20, then 30 s.
func nextWait(polls int) int {
	return min(5<<min(polls, 3), 30)
}

// stageResult cleans an extraction that did not come from extract.Extract (Textract's), checks it as
// Extract checks its own, and stages its markdown.
func (s *Stages) stageResult(ctx context.Context, in ExtractIn, res extract.Result) (ExtractOut, error) {
	const op = "ingest.Extract"
	md, hidden := extract.Clean(res.Markdown)
	res.Markdown, res.Hidden = md, res.Hidden+hidden
	limit := s.Limits.MaxOutputBytes
	if limit <= 0 {
		limit = 32 << 20 // extract.Limits' default
	}
	if len(md) > limit {
		return ExtractOut{}, rag.Errorf(op, rag.KindTerminal, "the document produced more than %d bytes of text", limit)
	}
	if !hasText(md) {
		return ExtractOut{}, rag.Errorf(op, rag.KindTerminal, "Textract found no text in this %s", res.Format)
	}
	out, md := s.extracted(ctx, in, res)
	if err := s.stageMarkdown(ctx, out, md); err != nil {
		return ExtractOut{}, err
	}
	return out, nil
}

// hasText reports whether markdown holds anything but page markers and blank lines.
func hasText(md string) bool {
	for _, l := range strings.Split(md, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "<!-- page ") {
			return true
		}
	}
	return false
}

func (s *Stages) textractJob(op string, in ExtractOut) error {
	if err := in.validate(op); err != nil {
		return err
	}
	if s.Textract == nil {
		return rag.Errorf(op, rag.KindInternal, "Textract is not configured on this function (DOCMIND_OCR)")
	}
	if in.Textract == nil || in.Textract.JobID == "" {
		return rag.Errorf(op, rag.KindInvalid, "the input names no Textract job")
	}
	return nil
}

// TextractStatus checks the document's Textract job once and returns it with its status, the checks
// counted and the next wait. A failed job's message says why, for the document's error.
func (s *Stages) TextractStatus(ctx context.Context, in ExtractOut) (TextractJob, error) {
	const op = "ingest.TextractStatus"
	if err := s.textractJob(op, in); err != nil {
		return TextractJob{}, err
	}
	st, msg, err := s.Textract.Status(ctx, in.Textract.JobID)
	if err != nil {
		return TextractJob{}, err
	}
	j := *in.Textract
	j.Waited += j.Wait
	j.Polls++
	j.Status, j.Wait, j.Message = st, nextWait(j.Polls), ""
	switch {
	case st == "FAILED":
		j.Message = truncateRunes("Textract could not read the document: "+msg, 512)
	case st == "IN_PROGRESS" && j.Waited >= TextractMaxWait:
		j.Message = "Textract did not finish reading the document in 30 minutes; try again later or split the file"
	}
	return j, nil
}

// TextractCollect reads a finished job's results into markdown and stages it, as Extract does for a
// document read locally.
func (s *Stages) TextractCollect(ctx context.Context, in ExtractOut) (ExtractOut, error) {
	const op = "ingest.TextractCollect"
	if err := s.textractJob(op, in); err != nil {
		return ExtractOut{}, err
	}
	res, err := s.Textract.Collect(ctx, in.Textract.JobID, s.maxPages())
	if err != nil {
		return ExtractOut{}, err
	}
	res.Format = in.Format
	return s.stageResult(ctx, ExtractIn{Doc: in.Doc, Sidecar: in.File.Sidecar, Object: in.File.Object}, res)
}
