package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/fsblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// streamRig is the local server's upload path over the embedded stores: the queue (no workers, so
// what an upload leaves is seen before any ingestion) writing into fsblob under dir.
type streamRig struct {
	db   *sqldb.DB
	dir  string
	kb   rag.KnowledgeBase
	h    http.Handler
	done chan error // each Upload's result, once it has returned
}

func newStreamRig(t *testing.T, maxBytes int64) *streamRig {
	t.Helper()
	r := &streamRig{db: migratedDB(t), dir: t.TempDir(), done: make(chan error, 4)}
	blobs, err := fsblob.New(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: &ingest.Stages{Records: r.db, Vectors: memvec.New(8), Blobs: blobs}}}
	r.kb = rag.KnowledgeBase{Tenant: "acme", Name: "handbook"}
	if err := r.db.CreateKB(context.Background(), &r.kb); err != nil {
		t.Fatal(err)
	}
	r.h = New(Deps{Library: r.db, Ingester: reportingIngester{queueIngester{&ingest.Queue{Service: svc}}, r.done},
		Logger: slog.New(slog.DiscardHandler), MaxUploadBytes: maxBytes, Tenant: func(*http.Request) (string, error) { return "acme", nil }})
	return r
}

// reportingIngester reports each upload's result once the ingester has returned it.
type reportingIngester struct {
	queueIngester
	done chan<- error
}

func (u reportingIngester) Upload(ctx context.Context, tenant, kbID, name string, body io.Reader, admit func(context.Context) error) (rag.Document, error) {
	d, err := u.queueIngester.Upload(ctx, tenant, kbID, name, body, admit)
	u.done <- err
	return d, err
}

// files lists every regular file under the blob store's directory: stored objects, their sidecars and
// any temporary file a write left behind.
func (r *streamRig) files(t *testing.T) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// noTrace fails unless the knowledge base has no document and the blob store no file.
func (r *streamRig) noTrace(t *testing.T) {
	t.Helper()
	docs, err := r.db.ListDocuments(context.Background(), "acme", r.kb.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 0 {
		t.Errorf("%d document rows left (first %s, %s), want none", len(docs), docs[0].FileName, docs[0].Status)
	}
	if f := r.files(t); len(f) != 0 {
		t.Errorf("files left in the blob store: %v", f)
	}
}

func multipartFile(t *testing.T, name string, data []byte) (*bytes.Buffer, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", name)
	fw.Write(data)
	mw.Close()
	return &body, mw.FormDataContentType()
}

// manualText is n bytes of markdown, different on every line.
func manualText(n int) []byte {
	var b bytes.Buffer
	b.WriteString("# Manual\n\n")
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Line %d: the device holds %d litres.\n", i, i%97)
	}
	return b.Bytes()[:n]
}

// The file is stored as it arrives and the hash computed on the way is the file's: the stored object,
// the document's content_hash and a SHA-256 of what was sent agree.
func TestUploadStreamedStoresTheFileAndItsHash(t *testing.T) {
	r := newStreamRig(t, 8<<20)
	data := manualText(3<<20 + 17)
	body, ct := multipartFile(t, "manual.md", data)
	req := httptest.NewRequest(http.MethodPost, "/api/kbs/handbook/documents", body)
	req.Header.Set("Content-Type", ct)
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted {
		t.Fatalf("upload = %d %s, want 202", rec.Code, rec.Body)
	}
	var doc rag.Document
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	if doc.ContentHash != want {
		t.Errorf("content_hash = %q, want the file's SHA-256 %q", doc.ContentHash, want)
	}
	row, err := r.db.GetDocument(context.Background(), "acme", doc.ID)
	if err != nil || row.ContentHash != want || row.Status != rag.StatusPending {
		t.Errorf("document row = %+v, %v; want pending with content hash %s", row, err, want)
	}
	stored, err := filepath.Glob(filepath.Join(r.dir, "objects", "sources", "acme", r.kb.ID, doc.ID, "source.md"))
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored source: %v %v (files: %v)", stored, err, r.files(t))
	}
	got, err := os.ReadFile(stored[0])
	if err != nil {
		t.Fatal(err)
	}
	if gs := sha256.Sum256(got); gs != sum || len(got) != len(data) {
		t.Errorf("stored %d bytes with SHA-256 %x, want %d bytes with %x", len(got), gs, len(data), sum)
	}
}

// A file over the limit is 413 with the limit's message, and leaves nothing: no document row, no stored
// source, no temporary file. The limit is exact: a file of exactly the limit goes in.
func TestUploadStreamedOverTheLimit(t *testing.T) {
	const limit = 1 << 20
	for _, tc := range []struct {
		name string
		size int
		want int
	}{
		{"one byte over", limit + 1, http.StatusRequestEntityTooLarge},
		{"twice the limit", 2 * limit, http.StatusRequestEntityTooLarge},
		{"exactly the limit", limit, http.StatusAccepted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newStreamRig(t, limit)
			body, ct := multipartFile(t, "big.md", manualText(tc.size))
			req := httptest.NewRequest(http.MethodPost, "/api/kbs/handbook/documents", body)
			req.Header.Set("Content-Type", ct)
			rec := httptest.NewRecorder()
			r.h.ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("upload of %d bytes = %d %s, want %d", tc.size, rec.Code, rec.Body, tc.want)
			}
			if tc.want != http.StatusRequestEntityTooLarge {
				return
			}
			if !strings.Contains(rec.Body.String(), "larger than the upload limit") {
				t.Errorf("body = %s, want the limit named", rec.Body)
			}
			r.noTrace(t)
		})
	}
}

// A client that goes away in the middle of the file leaves nothing: the partial file is removed, no
// document row is written (the row comes only once the whole file is stored), and the upload ends
// with an error rather than storing a truncated file.
func TestUploadStreamedAbortedMidway(t *testing.T) {
	r := newStreamRig(t, 64<<20)
	srv := httptest.NewServer(r.h)
	defer srv.Close()

	data := manualText(8 << 20)
	body, ct := multipartFile(t, "manual.md", data)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /api/kbs/handbook/documents HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		srv.Listener.Addr(), ct, body.Len())
	if _, err := conn.Write(body.Bytes()[:3<<20]); err != nil { // three of eight MB, then gone
		t.Fatal(err)
	}
	// the write path has the file part open before the client leaves: the partial file exists
	deadline := time.Now().Add(20 * time.Second)
	for len(r.files(t)) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(r.files(t)) == 0 {
		t.Fatal("no partial file appeared while the upload was in flight")
	}
	conn.Close()
	select {
	case err := <-r.done:
		if err == nil {
			t.Fatal("the cut upload returned no error: a truncated file was stored")
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the upload did not end after its client left")
	}
	r.noTrace(t)
}
