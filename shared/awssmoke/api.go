package awssmoke

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// UploadRequest is POST /api/kbs/{kb}/uploads's body.
type UploadRequest struct {
	FileName    string `json:"file_name"`
	Size        int64  `json:"size"`
	ContentType string `json:"content_type"`
}

// UploadGrant is its 201 answer: PUT the bytes to URL with exactly Headers, before ExpiresAt.
type UploadGrant struct {
	DocumentID string            `json:"document_id"`
	URL        string            `json:"url"`
	Method     string            `json:"method"`
	Headers    map[string]string `json:"headers"`
	ExpiresAt  time.Time         `json:"expires_at"`
	MaxBytes   int64             `json:"max_bytes"`
}

// document is the part of GET /api/documents/{id} the smoke reads.
type document struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Error  string `json:"error"`
}

// call sends a JSON request to the HTTP API with the key; a status other than want is an *errStatus, and
// the answer is decoded into v when v is not nil.
func (s *Smoke) call(ctx context.Context, method, path string, in any, want int, v any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	u := strings.TrimSuffix(s.Out.APIURL, "/") + path
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+s.Key)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	if resp.StatusCode != want {
		return &errStatus{method: method, url: u, code: resp.StatusCode, body: string(b[:min(len(b), 300)])}
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", method, u, err)
		}
	}
	return nil
}

// keyLook is what to look at when the API refuses the key.
func (s *Smoke) keyLook(err error) string {
	switch statusOf(err) {
	case http.StatusUnauthorized:
		return "the API key: create one for an editor of the tenant (docs/aws.md, section Smoke test) and put it in the key variable"
	case http.StatusForbidden:
		return "the key's user may not create or edit the smoke knowledge base: use an admin's key, or make the user an editor of it"
	case 0:
		return "the ApiUrl output is not reachable from here: check the URL and your network"
	}
	return "the api function's logs: " + s.logs("ApiFunction")
}

// ensureKB creates the smoke knowledge base unless it exists.
func (s *Smoke) ensureKB(ctx context.Context) Result {
	r := Result{Check: "knowledge-base"}
	err := s.call(ctx, http.MethodPost, "/api/kbs", map[string]string{"name": s.KB,
		"description": "documents uploaded and deleted by docmind aws smoke"}, http.StatusCreated, nil)
	if err == nil || statusOf(err) == http.StatusConflict {
		r.Status, r.Message = Pass, "knowledge base "+s.KB+" is there"
		return r
	}
	r.Status, r.Message, r.Look = Fail, err.Error(), s.keyLook(err)
	return r
}

// smokeDocument is a small markdown document, distinct on every run (an identical upload could be
// recognised as the same content), with sections enough for a long answer.
func smokeDocument(run string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# Smoke test %s\n\nThis document was uploaded by docmind aws smoke (run %s) and is deleted by it.\n", run, run)
	for i, topic := range []string{"Rooms", "Parking", "Visitors", "Lost property", "Quiet hours"} {
		fmt.Fprintf(&b, "\n## %s\n\nRule %d of run %s: %s may be booked up to %d days ahead; a booking not used within %d minutes is released, and a member who releases three bookings in a month waits %d days before booking again.\n",
			topic, i+1, run, strings.ToLower(topic), 7*(i+1), 10+5*i, 2+i)
	}
	return []byte(b.String())
}

// upload asks for a presigned URL, PUTs the document to it with exactly the headers given, and waits
// for the document to be ready. It returns the document's id when the API created one.
func (s *Smoke) upload(ctx context.Context, kbOK bool) (Result, string) {
	r := Result{Check: "upload"}
	if !kbOK {
		r.Status, r.Message = Skip, "the smoke knowledge base could not be created"
		return r, ""
	}
	var runID [4]byte
	_, _ = rand.Read(runID[:])
	run := hex.EncodeToString(runID[:])
	data := smokeDocument(run)
	in := UploadRequest{FileName: "smoke-" + run + ".md", Size: int64(len(data)), ContentType: "text/markdown"}
	var g UploadGrant
	if err := s.call(ctx, http.MethodPost, "/api/kbs/"+url.PathEscape(s.KB)+"/uploads", in, http.StatusCreated, &g); err != nil {
		r.Status, r.Message = Fail, "ask for an upload URL: "+err.Error()
		r.Look = s.keyLook(err)
		if statusOf(err) == http.StatusNotFound || statusOf(err) == http.StatusMethodNotAllowed {
			r.Look = "the stack predates presigned uploads (POST /api/kbs/{kb}/uploads): deploy the current template (make deploy)"
		}
		return r, ""
	}
	switch {
	case g.DocumentID == "" || g.URL == "":
		r.Status, r.Message = Fail, fmt.Sprintf("the upload answer lacks document_id or url: %+v", g)
		r.Look = "the api function's version: " + s.logs("ApiFunction")
		return r, g.DocumentID
	case g.MaxBytes > 0 && g.MaxBytes < in.Size:
		r.Status, r.Message = Fail, fmt.Sprintf("max_bytes %d is below the document's %d bytes", g.MaxBytes, in.Size)
		r.Look = "the stack's upload limit (DOCMIND_MAX_UPLOAD_BYTES on the api function)"
		return r, g.DocumentID
	}
	if err := s.put(ctx, g, data); err != nil {
		r.Status, r.Message = Fail, "PUT to the presigned URL: "+err.Error()
		r.Look = "a 403 SignatureDoesNotMatch means a header differs from the signed ones or the clock is off; AccessDenied, the api function's role lacks s3:PutObject on the upload prefix; the bucket is the DocumentsBucketName output"
		return r, g.DocumentID
	}
	start := s.Now()
	doc, err := s.waitReady(ctx, g.DocumentID)
	took := s.Now().Sub(start).Round(100 * time.Millisecond)
	switch {
	case err != nil:
		r.Status, r.Message = Fail, fmt.Sprintf("document %s: %v (last status %q after %s)", g.DocumentID, err, doc.Status, took)
		r.Look = "did the upload reach the ingest queue: the bucket's notification (docmind aws preflight), the ingestion state machine's executions (IngestStateMachineArn output: aws stepfunctions list-executions), the dead-letter queue (IngestDeadLetterQueueUrl), and " + s.logs("StageFunction")
	case doc.Status != "ready":
		r.Status, r.Message = Fail, fmt.Sprintf("document %s is %s: %s", g.DocumentID, doc.Status, doc.Error)
		r.Look = "the failed execution's input and error (aws stepfunctions list-executions --status-filter FAILED) and " + s.logs("StageFunction")
	default:
		r.Status, r.Message = Pass, fmt.Sprintf("%d bytes through the presigned %s, document %s ready %s later", in.Size, methodOf(g), g.DocumentID, took)
	}
	return r, g.DocumentID
}

func methodOf(g UploadGrant) string {
	if g.Method == "" {
		return http.MethodPut
	}
	return g.Method
}

// put sends data to the presigned URL with exactly the granted headers: S3 checks the signed ones.
func (s *Smoke) put(ctx context.Context, g UploadGrant, data []byte) error {
	req, err := http.NewRequestWithContext(ctx, methodOf(g), g.URL, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.ContentLength = int64(len(data))
	for k, v := range g.Headers {
		if strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Host") {
			continue // the transport writes these itself, from the request
		}
		req.Header.Set(k, v)
	}
	resp, err := s.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return nil
}

// waitReady polls the document until it is ready or failed, or s.Ready has passed.
func (s *Smoke) waitReady(ctx context.Context, id string) (document, error) {
	ctx, cancel := context.WithTimeout(ctx, s.Ready)
	defer cancel()
	var d document
	for {
		err := s.call(ctx, http.MethodGet, "/api/documents/"+url.PathEscape(id), nil, http.StatusOK, &d)
		if err != nil && ctx.Err() == nil {
			return d, err
		}
		if d.Status == "ready" || d.Status == "failed" {
			return d, nil
		}
		select {
		case <-ctx.Done():
			return d, fmt.Errorf("not ready within %s", s.Ready)
		case <-time.After(s.Poll):
		}
	}
}

// delete deletes the document and checks the API no longer finds it. A 409 (an ingestion holds the
// document's lease) is repeated, as the API asks.
func (s *Smoke) delete(ctx context.Context, id string) Result {
	r := Result{Check: "delete"}
	path := "/api/documents/" + url.PathEscape(id)
	var err error
	for range 5 {
		if err = s.call(ctx, http.MethodDelete, path, nil, http.StatusNoContent, nil); statusOf(err) != http.StatusConflict {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(s.Poll):
		}
	}
	if err != nil {
		r.Status, r.Message, r.Look = Fail, err.Error(), s.keyLook(err)
		return r
	}
	switch err := s.call(ctx, http.MethodGet, path, nil, http.StatusNotFound, nil); {
	case statusOf(err) == http.StatusOK:
		r.Status, r.Message = Fail, fmt.Sprintf("document %s is still there after its delete", id)
		r.Look = "the api function's delete path: " + s.logs("ApiFunction")
	case err != nil:
		r.Status, r.Message, r.Look = Fail, "after the delete: "+err.Error(), s.keyLook(err)
	default:
		r.Status, r.Message = Pass, fmt.Sprintf("document %s deleted, GET answers 404", id)
	}
	return r
}
