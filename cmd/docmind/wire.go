package main

import (
	"context"

	openai "github.com/sashabaranov/go-openai"
	"log/slog"
	"net/http"

	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store/memblob"
)

// newEmbedder picks the embeddings provider: an OpenAI-compatible API when configured, else offline.
func newEmbedder(cfg config.Config) (ingest.Embedder, error) {
	if cfg.Embeddings.Provider == "openai" {
		return embed.NewOpenAI(embed.OpenAIOptions{BaseURL: cfg.Embeddings.BaseURL, APIKey: cfg.Embeddings.APIKey,
			Model: cfg.Embeddings.Model, Dim: cfg.Vector.Dim, BatchSize: cfg.Embeddings.BatchSize})
	}
	return embed.NewOffline(cfg.Vector.Dim), nil
}

// ingestService wires the ingestion stages over the opened stores.
func ingestService(cfg config.Config, s *Stores, log *slog.Logger) (*ingest.Service, error) {
	emb, err := newEmbedder(cfg)
	if err != nil {
		return nil, err
	}
	st := &ingest.Stages{Records: s.SQL, Vectors: s.Vectors, Blobs: s.Blobs, Staging: memblob.New(), Embedder: emb, Log: log, Keyword: s.Keyword,
		Limits:   extract.Limits{MaxFileBytes: cfg.Server.MaxBodyBytes},
		Chunking: chunk.Options{ChildChars: cfg.Chunking.ChildChars, Overlap: cfg.Chunking.Overlap, ParentChars: cfg.Chunking.ParentChars}}
	return &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}}, nil
}

// uploads adapts the queue and the service to the HTTP layer's Ingester.
type uploads struct {
	q *ingest.Queue
	s *ingest.Service
}

func (u uploads) Upload(ctx context.Context, tenant, kb, name string, data []byte) (rag.Document, error) {
	return u.q.Upload(ctx, tenant, kb, name, data)
}

func (u uploads) Delete(ctx context.Context, tenant, id string) error {
	return u.s.Delete(ctx, tenant, id)
}

// localTenant is the identity of every request to the local server until authentication exists; the
// server refuses non-loopback addresses meanwhile.
func localTenant(cfg config.Config) func(*http.Request) (string, error) {
	return func(*http.Request) (string, error) { return cfg.Tenant, nil }
}

// retriever wires the retrieval chain over the opened stores.
func retriever(cfg config.Config, s *Stores) (*retrieve.Retriever, error) {
	emb, err := newEmbedder(cfg)
	if err != nil {
		return nil, err
	}
	o := retrieve.DefaultOptions()
	o.SemanticVectors = cfg.Embeddings.Provider != "offline"
	rc := cfg.Retrieval
	o.Filter = rank.FilterOptions{Floor: rc.FilterFloor, Drop: rc.FilterDrop}
	o.MMRLambda = rc.MMRLambda // clamped by rank.MMR
	o.Grade = rank.GradeOptions{RerankHigh: rc.GradeRerankHigh, RerankLow: rc.GradeRerankLow, CoverHigh: rc.GradeCoverHigh, CoverLow: rc.GradeCoverLow, MinSalient: 1}
	return &retrieve.Retriever{Keyword: s.Keyword, Vectors: s.Vectors, Embedder: emb, Chunks: s.SQL, Reranker: newReranker(cfg), Options: o}, nil
}

// newReranker picks the reranker; nil keeps the fused order.
func newReranker(cfg config.Config) rank.Reranker {
	switch cfg.Rerank.Provider {
	case "http":
		return &rank.HTTPReranker{URL: cfg.Rerank.URL, APIKey: cfg.Rerank.APIKey, Model: cfg.Rerank.Model, Format: cfg.Rerank.Format}
	case "llm":
		c := openai.DefaultConfig(cfg.Chat.APIKey)
		if cfg.Chat.BaseURL != "" {
			c.BaseURL = cfg.Chat.BaseURL
		}
		model := cfg.Chat.SmallModel
		if model == "" {
			model = cfg.Chat.MainModel
		}
		return &rank.LLMReranker{Client: openai.NewClientWithConfig(c), Model: model}
	}
	return nil
}
