package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/wire"
)

// openIngest opens the stores and wires the ingestion service over them, for the commands that ingest or
// repair (ingest, reconcile, connector): the caller closes the stores; on an error nothing stays open.
func openIngest(ctx context.Context, cfg config.Config, log *slog.Logger) (*Stores, *ingest.Service, error) {
	s, err := OpenStores(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	svc, err := ingestService(cfg, s, log)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, svc, nil
}

// ingestService wires the ingestion stages over the opened stores.
func ingestService(cfg config.Config, s *Stores, log *slog.Logger) (*ingest.Service, error) {
	emb, err := wire.Embedder(cfg)
	if err != nil {
		return nil, err
	}
	recognizer, err := ocrEngine(cfg, log)
	if err != nil {
		return nil, err
	}
	st := &ingest.Stages{Records: s.SQL, Vectors: s.Vectors, Blobs: s.Blobs, Staging: memblob.New(), Embedder: emb, Log: log, Keyword: s.Keyword,
		Limits: extract.Limits{MaxFileBytes: cfg.Server.MaxBodyBytes, PDFIdle: cfg.Server.PDFIdle,
			Budget: extract.NewBudget(cfg.Ingest.ExtractMemory), // one for the process: queue, watcher and batches share it
			OCR:    recognizer},
		Chunking: chunk.Options{ChildChars: cfg.Chunking.ChildChars, Overlap: cfg.Chunking.Overlap, ParentChars: cfg.Chunking.ParentChars}}
	return &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}, Inbox: filepath.Join(cfg.DataDir, "inbox"),
		InboxTenant: cfg.Tenant}, nil
}

// uploads adapts the queue and the service to the HTTP layer's Ingester.
type uploads struct {
	q *ingest.Queue
	s *ingest.Service
}

func (u uploads) Upload(ctx context.Context, tenant, kbID, name string, body io.Reader, admit func(context.Context) error) (rag.Document, error) {
	return u.q.UploadStream(ctx, tenant, kbID, name, body, admit)
}

func (u uploads) Delete(ctx context.Context, tenant, id string) error {
	return u.s.Delete(ctx, tenant, id)
}

func (u uploads) DeleteKB(ctx context.Context, tenant, kbID string) error {
	return u.s.DeleteKB(ctx, tenant, kbID)
}

func (u uploads) Reprocess(ctx context.Context, tenant, id string) (rag.Document, error) {
	return u.q.Reprocess(ctx, tenant, id)
}

// retriever wires the retrieval chain over the opened stores.
func retriever(cfg config.Config, s *Stores) (*retrieve.Retriever, error) {
	return wire.Retriever(cfg, s.Keyword, s.Vectors, s.SQL)
}
