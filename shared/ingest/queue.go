package ingest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
)

// Queue ingests uploads in the background with a fixed number of workers: an upload is acknowledged
// as soon as its document row exists, and its status moves pending -> processing -> ready | failed.
type Queue struct {
	Service *Service
	Workers int // default 2
	Size    int // pending uploads before Upload refuses with Unavailable (default 64)
	Log     *slog.Logger

	once sync.Once
	jobs chan job
}

type job struct {
	tenant string
	src    Source
}

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

// Upload creates the document (status pending) and queues its ingestion. Unavailable when the queue is full.
func (q *Queue) Upload(ctx context.Context, tenant, kbName, fileName string, data []byte) (rag.Document, error) {
	q.init()
	const op = "ingest.Upload"
	name := CleanFileName(fileName)
	if err := checkSupported(name); err != nil {
		return rag.Document{}, rag.E(op, rag.KindInvalid, err)
	}
	kb, err := q.Service.KB(ctx, tenant, kbName, true)
	if err != nil {
		return rag.Document{}, err
	}
	doc := rag.Document{Tenant: tenant, KBID: kb.ID, SourceURI: "upload/" + rag.NewID("up"), FileName: name, FileType: fileType(name), Status: rag.StatusPending}
	if err := q.Service.Runner.Stages.Records.CreateDocument(ctx, &doc); err != nil {
		return rag.Document{}, err
	}
	select {
	case q.jobs <- job{tenant, Source{KBName: kbName, URI: doc.SourceURI, Name: name, Data: data}}:
		return doc, nil
	default:
		doc.Status, doc.Error = rag.StatusFailed, "the ingestion queue is full; upload again later"
		q.Service.Runner.Stages.Records.UpdateDocument(ctx, &doc)
		return doc, rag.Errorf(op, rag.KindUnavailable, "the ingestion queue is full")
	}
}

// Reprocess queues a document's stored source for ingestion again and returns the document as it is
// now: the worker moves a failed one to processing and then ready or failed, and a ready one keeps
// serving its current chunks until the new ones replace them. Unavailable when the queue is full.
func (q *Queue) Reprocess(ctx context.Context, tenant, docID string) (rag.Document, error) {
	q.init()
	doc, src, err := q.Service.Stored(ctx, tenant, docID)
	if err != nil {
		return doc, err
	}
	select {
	case q.jobs <- job{tenant, src}:
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
					if _, err := q.Service.Ingest(ctx, j.tenant, j.src); err != nil && q.Log != nil {
						q.Log.Warn("upload ingestion failed", "file", j.src.Name, "err", err)
					}
				}
			}
		})
	}
	wg.Wait()
}
