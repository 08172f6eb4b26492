package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

// Queue ingests uploads in the background with a fixed number of workers: an upload is acknowledged
// as soon as its source is stored and its document row exists, and its status moves pending ->
// processing -> ready | failed.
//
// The queue holds references (tenant and document id), never file bodies: the source is written to the
// blob store before Upload returns, and a worker reads it back when its turn comes. 64 queued uploads of
// 64 MiB used to pin 4 GiB of memory; now they pin a few hundred bytes. A worker takes whatever is queued,
// up to DefaultBatch uploads and queueBatchBytes of sources, and ingests them with one IngestBatch.
type Queue struct {
	Service *Service
	Workers int // default 2
	Size    int // pending uploads before Upload refuses with Unavailable (default 64)
	Log     *slog.Logger

	once sync.Once
	jobs chan job
}

// job is one queued ingestion: a reference to a stored source.
type job struct {
	tenant string
	docID  string
}

// queueBatchBytes bounds the sources one worker reads into memory for one batch.
const queueBatchBytes = 64 << 20

func (q *Queue) init() {
	q.once.Do(func() {
		if q.Size <= 0 {
			q.Size = 64
		}
		q.jobs = make(chan job, q.Size)
	})
}

// CleanFileName keeps a user's file name fit to show and store as metadata: the base name only, valid
// UTF-8, no control characters, at most 255 characters. It never becomes a storage key.
func CleanFileName(name string) string {
	name = strings.ReplaceAll(name, "\\", "/")
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	name = strings.ToValidUTF8(name, "")
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return -1
		}
		return r
	}, name)
	name = strings.TrimSpace(name)
	if r := []rune(name); len(r) > 255 {
		name = string(r[len(r)-255:]) // keep the end: the extension chooses the parser
	}
	if name == "" || name == "." || name == ".." {
		name = "upload"
	}
	return name
}

// Upload is UploadStream of bytes already in memory, with no admission check (the CLI and tests).
func (q *Queue) Upload(ctx context.Context, tenant, kbID, fileName string, data []byte) (rag.Document, error) {
	return q.UploadStream(ctx, tenant, kbID, fileName, bytes.NewReader(data), nil)
}

// UploadStream stores the source read from body in the knowledge base kbID, creates the document (status
// pending) and queues its ingestion. NotFound when the knowledge base is gone; Unavailable when the queue
// is full (the document is then failed with that reason; its stored source can be re-processed).
//
// The body is streamed to the blob store (fsblob writes a temporary file and renames it into place) with
// its SHA-256 computed on the way, never held in memory: an upload in flight holds a copy buffer, not the
// file (an upload used to be read whole first, 160-210 MB of resident memory per large upload, issue
// #24). A body that fails (too large, the client gone, a read error) ends the upload with nothing kept:
// the source is written before the document row exists, and removed again when admit or the row fails,
// so an aborted upload leaves neither a stored source nor a pending row. The error is body's, wrapped.
//
// admit, when set, is called once the body is stored and before the document exists: the HTTP layer
// reads the uploader's role afresh there (sending a large file takes minutes, and a role revoked
// meanwhile must not let it in).
//
// The knowledge base is the id the caller checked the uploader's role on, carried to the document row,
// the storage key and the queued job; never a name looked up again. An upload used to be checked by id
// and stored by name, so deleting the knowledge base and creating another of the same name while the
// file was sent put it into the new one, whoever owned that (security review). The document row is
// created only if the knowledge base still exists (sqldb checks it in the insert's transaction), and the
// worker ingests by the document's own knowledge-base id.
func (q *Queue) UploadStream(ctx context.Context, tenant, kbID, fileName string, body io.Reader, admit func(context.Context) error) (rag.Document, error) {
	q.init()
	const op = "ingest.Upload"
	name := CleanFileName(fileName)
	if err := checkSupported(name); err != nil {
		return rag.Document{}, rag.E(op, rag.KindInvalid, err)
	}
	st := q.Service.Runner.Stages
	doc := rag.Document{ID: rag.NewID("doc"), Tenant: tenant, KBID: kbID, SourceURI: "upload/" + rag.NewID("up"), FileName: name,
		FileType: fileType(name), Status: rag.StatusPending}
	key := sourceKey(tenant, doc.KBID, doc.ID, name)
	h := sha256.New()
	if _, err := st.Blobs.Put(ctx, key, io.TeeReader(body, h), ""); err != nil {
		// the store removes its partial write; a store that may have kept one loses it here
		st.Blobs.Delete(context.WithoutCancel(ctx), key)
		return rag.Document{}, fmt.Errorf("store upload: %w", err)
	}
	doc.ContentHash = hex.EncodeToString(h.Sum(nil))
	drop := func(err error) (rag.Document, error) {
		st.Blobs.Delete(context.WithoutCancel(ctx), key)
		return rag.Document{}, err
	}
	if admit != nil {
		if err := admit(ctx); err != nil {
			return drop(err)
		}
	}
	if err := st.Records.CreateDocument(ctx, &doc); err != nil {
		if rag.Is(err, rag.KindNotFound) {
			err = rag.Errorf(op, rag.KindNotFound, "the knowledge base was deleted during the upload")
		}
		return drop(err)
	}
	select {
	case q.jobs <- job{tenant, doc.ID}:
		return doc, nil
	default:
		doc.Status, doc.Error = rag.StatusFailed, "the ingestion queue is full; upload again later"
		st.Records.UpdateDocument(ctx, &doc)
		return doc, rag.Errorf(op, rag.KindUnavailable, "the ingestion queue is full")
	}
}

// Reprocess queues a document's stored source for ingestion again and returns the document as it is
// now: the worker moves a failed one to processing and then ready or failed, and a ready one keeps
// serving its current chunks until the new ones replace them. NotFound when the document or its stored
// source is gone; Unavailable when the queue is full.
func (q *Queue) Reprocess(ctx context.Context, tenant, docID string) (rag.Document, error) {
	q.init()
	doc, err := q.Service.Runner.Stages.Records.GetDocument(ctx, tenant, docID)
	if err != nil {
		return doc, err
	}
	if doc.Status == rag.StatusDeleted {
		return doc, rag.Errorf("ingest.Reprocess", rag.KindNotFound, "%s is being deleted", doc.FileName)
	}
	if _, err := q.Service.Runner.Stages.Blobs.Stat(ctx, sourceKey(tenant, doc.KBID, doc.ID, doc.FileName)); err != nil {
		if rag.Is(err, rag.KindNotFound) {
			return doc, rag.Errorf("ingest.Reprocess", rag.KindNotFound, "the stored source of %s is gone; upload it again", doc.FileName)
		}
		return doc, err
	}
	select {
	case q.jobs <- job{tenant, doc.ID}:
		return doc, nil
	default:
		return doc, rag.Errorf("ingest.Reprocess", rag.KindUnavailable, "the ingestion queue is full")
	}
}

// Run processes uploads until ctx ends; uploads still queued then stay pending.
func (q *Queue) Run(ctx context.Context) {
	q.init()
	n := q.Workers
	if n <= 0 {
		n = 2
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-q.jobs:
					q.ingest(ctx, append([]job{j}, q.drain(DefaultBatch-1)...))
				}
			}
		})
	}
	wg.Wait()
}

// drain takes up to n more queued jobs without waiting.
func (q *Queue) drain(n int) []job {
	var out []job
	for len(out) < n {
		select {
		case j := <-q.jobs:
			out = append(out, j)
		default:
			return out
		}
	}
	return out
}

// ingest reads the jobs' stored sources and ingests them in batches of one tenant and at most
// queueBatchBytes.
func (q *Queue) ingest(ctx context.Context, jobs []job) {
	var batch []Source
	tenant, size := "", int64(0)
	flush := func() {
		if len(batch) == 0 {
			return
		}
		for _, rep := range q.Service.IngestBatch(ctx, tenant, batch) {
			if rep.Error != "" && q.Log != nil {
				q.Log.Warn("upload ingestion failed", "file", rep.File, "err", rep.Error)
			}
		}
		batch, size = nil, 0
	}
	for _, j := range jobs {
		_, src, err := q.Service.Stored(ctx, j.tenant, j.docID)
		if err != nil { // deleted meanwhile, or its source is gone or unreadable
			if q.Log != nil {
				q.Log.Warn("queued ingestion skipped", "document", j.docID, "err", err)
			}
			q.failUnread(ctx, j, err)
			continue
		}
		if len(batch) > 0 && (j.tenant != tenant || size+int64(len(src.Data)) > queueBatchBytes) {
			flush()
		}
		tenant = j.tenant
		batch = append(batch, src)
		size += int64(len(src.Data))
	}
	flush()
}

// failUnread marks a queued document whose stored source could not be read as failed, so it does not
// stay pending for ever (a deleted document is left alone).
func (q *Queue) failUnread(ctx context.Context, j job, cause error) {
	rec := q.Service.Runner.Stages.Records
	doc, err := rec.GetDocument(ctx, j.tenant, j.docID)
	if err != nil || doc.Status == rag.StatusDeleted || doc.Status == rag.StatusReady {
		return
	}
	doc.Status, doc.Error = rag.StatusFailed, truncate("reading the stored upload failed: "+cause.Error(), 2000)
	rec.UpdateDocument(ctx, &doc)
}
