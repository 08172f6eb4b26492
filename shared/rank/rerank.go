package rank

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// Reranker scores documents against a query: one score per document, in input order, higher is better
// (cross-encoder APIs return roughly 0..1).
type Reranker interface {
	Rerank(ctx context.Context, query string, docs []string) ([]float64, error)
}

// HTTPReranker calls a rerank API. Format "cohere" covers Cohere, Jina, Voyage, vLLM and SiliconFlow
// ({model, query, documents, top_n} -> {results:[{index, relevance_score}]}); "tei" is Hugging Face
// text-embeddings-inference ({query, texts} -> [{index, score}]); "dashscope" is Alibaba's
// ({model, input:{query, documents}, parameters:{top_n}} -> {output:{results:[...]}}).
type HTTPReranker struct {
	URL     string
	APIKey  string
	Model   string
	Format  string
	Batch   int // documents per request (default and maximum 64)
	Timeout time.Duration
	Backoff []time.Duration // default 1 s, 2 s, 4 s on 429, 5xx and timeouts
	Sleep   func(context.Context, time.Duration) error
	HTTP    *http.Client
}

func (h *HTTPReranker) defaults() {
	if h.Batch <= 0 || h.Batch > 64 {
		h.Batch = 64
	}
	if h.Timeout <= 0 {
		h.Timeout = 15 * time.Second
	}
	if h.Backoff == nil {
		h.Backoff = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	}
	if h.Sleep == nil {
		h.Sleep = rag.Wait
	}
	if h.HTTP == nil {
		h.HTTP = &http.Client{Timeout: h.Timeout}
	}
	if h.Format == "" {
		h.Format = "cohere"
	}
}

// Rerank implements Reranker, in batches of at most 64 documents.
func (h *HTTPReranker) Rerank(ctx context.Context, query string, docs []string) ([]float64, error) {
	h.defaults()
	out := make([]float64, len(docs))
	for start := 0; start < len(docs); start += h.Batch {
		end := min(start+h.Batch, len(docs))
		scores, err := h.batch(ctx, query, docs[start:end])
		if err != nil {
			return nil, err
		}
		copy(out[start:end], scores)
	}
	return out, nil
}

func (h *HTTPReranker) body(query string, docs []string) any {
	switch h.Format {
	case "tei":
		return map[string]any{"query": query, "texts": docs, "raw_scores": false}
	case "dashscope":
		return map[string]any{"model": h.Model, "input": map[string]any{"query": query, "documents": docs},
			"parameters": map[string]any{"top_n": len(docs), "return_documents": false}}
	}
	return map[string]any{"model": h.Model, "query": query, "documents": docs, "top_n": len(docs), "return_documents": false}
}

type rerankResult struct {
	Index          int      `json:"index"`
	RelevanceScore *float64 `json:"relevance_score"`
	Score          *float64 `json:"score"`
}

func (h *HTTPReranker) parse(b []byte, n int) ([]float64, error) {
	var results []rerankResult
	switch h.Format {
	case "tei":
		if err := json.Unmarshal(b, &results); err != nil {
			return nil, err
		}
	case "dashscope":
		var r struct {
			Output struct {
				Results []rerankResult `json:"results"`
			} `json:"output"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		results = r.Output.Results
	default:
		var r struct {
			Results []rerankResult `json:"results"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, err
		}
		results = r.Results
	}
	out := make([]float64, n)
	seen := make([]bool, n)
	for _, r := range results {
		if r.Index < 0 || r.Index >= n || seen[r.Index] {
			return nil, fmt.Errorf("result index %d out of range or repeated", r.Index)
		}
		seen[r.Index] = true
		switch {
		case r.RelevanceScore != nil:
			out[r.Index] = *r.RelevanceScore
		case r.Score != nil:
			out[r.Index] = *r.Score
		default:
			return nil, fmt.Errorf("result %d has no score", r.Index)
		}
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("no score for document %d", i)
		}
	}
	return out, nil
}

func (h *HTTPReranker) batch(ctx context.Context, query string, docs []string) ([]float64, error) {
	const op = "rank.HTTPReranker"
	payload, _ := json.Marshal(h.body(query, docs))
	for attempt := 0; ; attempt++ {
		scores, status, err := h.call(ctx, payload, len(docs))
		if err == nil {
			return scores, nil
		}
		retryable := status == http.StatusTooManyRequests || status >= 500 || status == 0
		if !retryable || attempt >= len(h.Backoff) || ctx.Err() != nil {
			kind := rag.KindUnavailable
			if status >= 400 && status < 500 && status != http.StatusTooManyRequests {
				kind = rag.KindInvalid
			}
			return nil, rag.E(op, kind, err)
		}
		if serr := h.Sleep(ctx, h.Backoff[attempt]); serr != nil {
			return nil, rag.E(op, rag.KindUnavailable, err)
		}
	}
}

func (h *HTTPReranker) call(ctx context.Context, payload []byte, n int) ([]float64, int, error) {
	rctx, cancel := context.WithTimeout(ctx, h.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, h.URL, bytes.NewReader(payload))
	if err != nil {
		return nil, 400, err
	}
	req.Header.Set("Content-Type", "application/json")
	if h.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+h.APIKey)
	}
	resp, err := h.HTTP.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("rerank request: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, fmt.Errorf("rerank API: HTTP %d", resp.StatusCode) // the body may echo the documents: not logged
	}
	scores, err := h.parse(b, n)
	if err != nil {
		return nil, 502, fmt.Errorf("rerank API response: %w", err)
	}
	return scores, 200, nil
}

// Lexical scores documents by the length-weighted coverage of the query's salient terms (the grader's
// second signal): the fallback when the rerank API fails, in [0,1].
type Lexical struct{}

// Rerank implements Reranker; it never fails.
func (Lexical) Rerank(_ context.Context, query string, docs []string) ([]float64, error) {
	terms := salient(query)
	out := make([]float64, len(docs))
	for i, d := range docs {
		out[i] = coverage(terms, d)
	}
	return out, nil
}

// RerankEvidence scores ev with r and returns it sorted best first; the rerank input is each item's
// child text (what was matched). When r is nil (no rerank model configured, the offline mode) the fused
// order is kept and each score becomes its fraction of the top fused score. When r fails, the same
// happens and degraded is set: lexical coverage used to stand in, and it ranks far worse than the fusion
// it replaced (SciFact dev nDCG@10 of the chain's ranking 0.702 -> 0.611, docs/eval/retrieval.md), so a
// broken rerank API now costs the rerank, not the ranking.
func RerankEvidence(ctx context.Context, r Reranker, query string, ev []Evidence) (out []Evidence, degraded bool, err error) {
	out = append([]Evidence(nil), ev...)
	relative := func() {
		if len(out) > 0 && out[0].Score > 0 {
			top := out[0].Score
			for i := range out {
				out[i].Score /= top
			}
		}
	}
	if r == nil {
		relative()
		return out, false, nil
	}
	docs := make([]string, len(ev))
	for i, e := range ev {
		docs[i] = e.ChildText
		if docs[i] == "" {
			docs[i] = e.Text
		}
	}
	scores, err := r.Rerank(ctx, query, docs)
	if err != nil {
		relative()
		return out, true, err
	}
	for i := range out {
		out[i].Score = scores[i]
	}
	sortEvidence(out)
	return out, degraded, err
}

func sortEvidence(ev []Evidence) {
	for i := 1; i < len(ev); i++ { // insertion sort: stable, lists are short
		for j := i; j > 0 && (ev[j].Score > ev[j-1].Score || ev[j].Score == ev[j-1].Score && ev[j].ChunkID < ev[j-1].ChunkID); j-- {
			ev[j], ev[j-1] = ev[j-1], ev[j]
		}
	}
}
