// Package smoketest holds test doubles for the smoke test's upload step: UploadsDouble answers
// POST /api/kbs/{kb}/uploads with the contract the api function's presigned upload endpoint keeps
// (issue 19 item 4, built on another branch), presigning a real S3 PUT with the SDK against a test S3
// (gofakes3 or moto); S3Front stands in front of that S3, refuses a PUT whose headers differ from the
// signed ones (as S3 does) and reports each stored object, as the bucket's notification would. Tests
// only: no function links it (each function's TestDeps forbids httptest-only code).
package smoketest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/docmind/docmind/shared/awssmoke"
)

// Pending is what Create made: the document's id and the object key its bytes go to.
type Pending struct {
	DocumentID, Key string
}

// UploadsDouble serves POST /api/kbs/{kb}/uploads and passes every other request to Next.
type UploadsDouble struct {
	Presign  *s3.PresignClient
	Bucket   string
	MaxBytes int64
	// Create authorises the caller (r carries the key) for kb and creates the pending document; an error
	// with a status is answered with it.
	Create func(ctx context.Context, r *http.Request, kb string, in awssmoke.UploadRequest) (Pending, int, error)
	Next   http.Handler
	Front  *S3Front // told what each grant signed
}

func (u *UploadsDouble) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kb, ok := uploadsPath(r)
	if !ok {
		u.Next.ServeHTTP(w, r)
		return
	}
	var in awssmoke.UploadRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil || in.FileName == "" || in.Size <= 0 || in.ContentType == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": `want {"file_name","size","content_type"}`})
		return
	}
	if in.Size > u.MaxBytes {
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"error": fmt.Sprintf("at most %d bytes", u.MaxBytes)})
		return
	}
	p, code, err := u.Create(r.Context(), r, kb, in)
	if err != nil {
		writeJSON(w, code, map[string]string{"error": err.Error()})
		return
	}
	const ttl = 15 * time.Minute
	req, err := u.Presign.PresignPutObject(r.Context(), &s3.PutObjectInput{Bucket: aws.String(u.Bucket), Key: aws.String(p.Key),
		ContentType: aws.String(in.ContentType), ContentLength: aws.Int64(in.Size)}, s3.WithPresignExpires(ttl))
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	headers := map[string]string{}
	for k, vs := range req.SignedHeader {
		if !strings.EqualFold(k, "Host") {
			headers[k] = strings.Join(vs, ",")
		}
	}
	u.Front.expect(p.Key, in.ContentType, in.Size)
	writeJSON(w, http.StatusCreated, awssmoke.UploadGrant{DocumentID: p.DocumentID, URL: req.URL, Method: req.Method, Headers: headers,
		ExpiresAt: time.Now().Add(ttl).UTC(), MaxBytes: u.MaxBytes})
}

func uploadsPath(r *http.Request) (string, bool) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/api/kbs/")
	kb, ok2 := strings.CutSuffix(rest, "/uploads")
	return kb, r.Method == http.MethodPost && ok && ok2 && kb != "" && !strings.Contains(kb, "/")
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// S3Front is the S3 endpoint the presigned URLs point at: it checks a PUT against what was signed for its
// key (Content-Type and Content-Length, as S3 checks signed headers), passes it to the S3 behind it, and
// then calls Stored with the key, as the bucket's notification would.
type S3Front struct {
	*httptest.Server
	mu     sync.Mutex
	grants map[string]grant
	// Stored is called after a PUT the S3 behind accepted (in its own goroutine).
	Stored func(key string)
	// Refused counts PUTs refused for headers that differ from the signed ones.
	Refused int
}

type grant struct {
	contentType string
	size        int64
}

// NewS3Front starts the front on 127.0.0.1 before the S3 at backend (a URL).
func NewS3Front(backend string) *S3Front {
	f := &S3Front{grants: map[string]grant{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.serve(w, r, backend) }))
	return f
}

func (f *S3Front) expect(key, contentType string, size int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grants[key] = grant{contentType, size}
}

func (f *S3Front) serve(w http.ResponseWriter, r *http.Request, backend string) {
	_, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/") // path style: /bucket/key
	f.mu.Lock()
	g, granted := f.grants[key]
	f.mu.Unlock()
	if r.Method == http.MethodPut && granted {
		if r.Header.Get("Content-Type") != g.contentType || r.ContentLength != g.size || r.URL.Query().Get("X-Amz-Signature") == "" {
			f.mu.Lock()
			f.Refused++
			f.mu.Unlock()
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprint(w, "<Error><Code>SignatureDoesNotMatch</Code><Message>the request's headers differ from the signed ones</Message></Error>")
			return
		}
	}
	body, _ := io.ReadAll(r.Body)
	out, err := http.NewRequestWithContext(r.Context(), r.Method, backend+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	out.Header = r.Header.Clone()
	out.ContentLength = int64(len(body))
	resp, err := (&http.Client{}).Do(out) // a test double forwarding to the emulated API on loopback
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
	if r.Method == http.MethodPut && resp.StatusCode/100 == 2 && f.Stored != nil {
		go f.Stored(key)
	}
}
