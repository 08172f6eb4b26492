// Package wire builds the providers and the query chain from configuration, once, for both runtimes:
// `docmind serve` / `docmind search` / `docmind eval` and the query Lambda.
package wire

import (
	"context"

	openai "github.com/sashabaranov/go-openai"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/mcpclient"
	"github.com/docmind/docmind/shared/memory"
	"github.com/docmind/docmind/shared/netx"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/rank/llmrank"
	"github.com/docmind/docmind/shared/retrieve"
	"github.com/docmind/docmind/shared/store"
)

// Embeddings is what both the ingestion stages and the query chain need of an embeddings provider. It is
// declared here, not taken from shared/ingest, so the query side does not link the extractors (and the PDF
// engine's WebAssembly runtime) through this package.
type Embeddings interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dim() int
}

// Embedder picks the embeddings provider: an OpenAI-compatible API when configured, else offline.
func Embedder(cfg config.Config) (Embeddings, error) {
	if cfg.Embeddings.Provider == "openai" {
		return embed.NewOpenAI(embed.OpenAIOptions{BaseURL: cfg.Embeddings.BaseURL, APIKey: cfg.Embeddings.APIKey,
			Model: cfg.Embeddings.Model, Dim: cfg.Vector.Dim, BatchSize: cfg.Embeddings.BatchSize})
	}
	return embed.NewOffline(cfg.Vector.Dim), nil
}

// Reranker picks the reranker; nil keeps the fused order (lexical scores, not degraded).
func Reranker(cfg config.Config) rank.Reranker {
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
		return &llmrank.Reranker{Client: openai.NewClientWithConfig(c), Model: model}
	}
	return nil
}

// Retriever wires the retrieval chain over a keyword leg, a vector leg and the chunk records.
func Retriever(cfg config.Config, kw retrieve.Keyword, vec retrieve.Vectors, chunks retrieve.Chunks) (*retrieve.Retriever, error) {
	emb, err := Embedder(cfg)
	if err != nil {
		return nil, err
	}
	o := retrieve.DefaultOptions()
	o.SemanticVectors = cfg.Embeddings.Provider != "offline"
	rc := cfg.Retrieval
	o.Filter = rank.FilterOptions{Floor: rc.FilterFloor, Drop: rc.FilterDrop}
	o.MMRLambda = rc.MMRLambda // clamped by rank.MMR
	o.Grade = rank.GradeOptions{RerankHigh: rc.GradeRerankHigh, RerankLow: rc.GradeRerankLow, CoverHigh: rc.GradeCoverHigh, CoverLow: rc.GradeCoverLow, MinSalient: 1}
	return &retrieve.Retriever{Keyword: kw, Vectors: vec, Embedder: emb, Chunks: chunks, Reranker: Reranker(cfg), Options: o}, nil
}

// Chat wires the answer pipeline over a retriever: the configured chat model writes answers, or the
// extractive answerer when the provider is offline; catalog answers questions about the knowledge
// bases themselves; kv holds the semantic cache.
func Chat(cfg config.Config, r *retrieve.Retriever, catalog answer.Catalog, kv store.KV) *answer.Pipeline {
	p := &answer.Pipeline{Retriever: r, RerankKnown: r.Reranker != nil, Catalog: catalog,
		Guard: answer.Guard{Phrases: answer.ParsePhrases(cfg.Chat.EmergencyPhrases), Answer: cfg.Chat.EmergencyAnswer}}
	if d, ok := r.Chunks.(answer.Documents); ok { // the SQL record: summaries read selected documents in order
		p.Documents = d
	}
	if mc, ok := catalog.(answer.MetaCatalog); ok && cfg.Chat.InferFilters { // the SQL record keeps the metadata
		p.Infer = mc
	}
	if cfg.Chat.WebSearchAPIKey != "" {
		p.Web = &answer.WebSearch{URL: cfg.Chat.WebSearchURL, APIKey: cfg.Chat.WebSearchAPIKey, Client: netx.NewClient(netx.Options{})}
	}
	if cfg.Chat.CacheEnabled && kv != nil && catalog != nil {
		p.Cache = &answer.SemanticCache{KV: kv, Embedder: r.Embedder, Catalog: catalog, Threshold: cfg.Chat.CacheThreshold, TTL: cfg.Chat.CacheTTL}
	}
	if cfg.Chat.Provider == "openai" {
		model := llm.NewOpenAI(cfg.Chat.BaseURL, cfg.Chat.APIKey, nil)
		p.LLM = model
		p.Model = cfg.Chat.MainModel
		small := cfg.Chat.SmallModel
		if small == "" {
			small = cfg.Chat.MainModel
		}
		p.Understander = &answer.Understander{LLM: p.LLM, Model: small}
		if cfg.Chat.AgentRounds > 0 {
			p.Agent = &answer.Agent{LLM: model, Model: cfg.Chat.MainModel, MaxRounds: cfg.Chat.AgentRounds}
			// validated with the config; sessions open on the agent's first use and live with the process
			if servers, err := config.ParseMCPServers(cfg.Chat.MCPServers); err == nil && len(servers) > 0 {
				p.Agent.Remote = mcpclient.New(servers, mcpclient.Options{})
			}
		}
		p.PriceIn, p.PriceOut = cfg.Chat.PriceInputPerMTok, cfg.Chat.PriceOutputPerMTok
	}
	return p
}

// Memory returns long-term memory over the SQL record, the memory vector index and the key-value cache,
// or nil when the config switches it off.
func Memory(cfg config.Config, records memory.Records, vectors store.VectorIndex, emb memory.Embedder, kv store.KV) *memory.Store {
	if !cfg.Chat.MemoryEnabled || records == nil || vectors == nil || emb == nil {
		return nil
	}
	return &memory.Store{Records: records, Vectors: vectors, Embedder: emb, KV: kv, Max: cfg.Chat.MemoryMax}
}
