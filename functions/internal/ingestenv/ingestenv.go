// Package ingestenv builds the ingestion stages the way every function that runs them does: the stage
// function (each Task of the ingestion state machine), consistency (a stuck document retried in process)
// and api (deletes and reprocessing in the request). It links the embedding client, so the functions
// that never embed (ingest, query, the answer workflow's) do not import it.
package ingestenv

import (
	"log/slog"
	"time"

	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/store"
)

// Embedder is the configured provider: an OpenAI-compatible API, or the offline embedder.
func Embedder(cfg config.Config) (ingest.Embedder, error) {
	if cfg.Embeddings.Provider == "openai" {
		return embed.NewOpenAI(embed.OpenAIOptions{BaseURL: cfg.Embeddings.BaseURL, APIKey: cfg.Embeddings.APIKey,
			Model: cfg.Embeddings.Model, Dim: cfg.Vector.Dim, BatchSize: cfg.Embeddings.BatchSize})
	}
	return embed.NewOffline(cfg.Vector.Dim), nil
}

// Stores are the adapters the stages write.
type Stores struct {
	Records ingest.Records
	Vectors store.VectorIndex
	Blobs   store.Blobs
}

// lambdaPDFIdle is how long a Lambda instance keeps the PDF engine after its last PDF.
const lambdaPDFIdle = 5 * time.Minute

// Stages are the ingestion stages over s with the configured limits and chunking. Staging is Blobs (a
// Lambda shares its payloads through S3) and there is no in-memory keyword index (MySQL's FULLTEXT
// follows the chunk rows).
func Stages(cfg config.Config, s Stores, emb ingest.Embedder, log *slog.Logger) *ingest.Stages {
	return &ingest.Stages{Records: s.Records, Vectors: s.Vectors, Blobs: s.Blobs, Embedder: emb, Log: log,
		// the budget refuses a file whose extraction alone would need more memory than configured,
		// before the instance runs out of it (one document per instance: nothing else waits on it)
		// The PDF engine is kept 5 minutes, not the server's 15 s: a frozen instance's memory costs
		// nothing, and a warm invocation would otherwise wait seconds for the engine to start again.
		Limits: extract.Limits{MaxFileBytes: cfg.Server.MaxBodyBytes, Budget: extract.NewBudget(cfg.Ingest.ExtractMemory),
			PDFIdle: lambdaPDFIdle},
		Chunking: chunk.Options{ChildChars: cfg.Chunking.ChildChars, Overlap: cfg.Chunking.Overlap, ParentChars: cfg.Chunking.ParentChars}}
}

// Service is the document service over st with the local runner's retry policy. The bucket's inbox/
// feeds DOCMIND_TENANT (the ingest function's tenant), so only its knowledge bases' drop folders are
// renamed when they are deleted. Its deletes and retries take the source's SQL lease (the relational
// store's, sqldb.DB): they run on other instances than the executions ingesting the same sources.
func Service(cfg config.Config, st *ingest.Stages) *ingest.Service {
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}, InboxTenant: cfg.Tenant}
	if l, ok := st.Records.(ingest.Leases); ok {
		svc.Leases = l
	}
	return svc
}
