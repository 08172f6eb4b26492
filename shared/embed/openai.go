package embed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/time/rate"

	"github.com/docmind/docmind/shared/rag"
)

// OpenAIOptions configure the OpenAI-compatible client.
type OpenAIOptions struct {
	BaseURL     string // e.g. https://api.openai.com/v1 or https://dashscope.aliyuncs.com/compatible-mode/v1
	APIKey      string
	Model       string
	Dim         int // requested dimensions (models that support it); 0 leaves the model's default
	BatchSize   int // texts per request (DashScope allows 10)
	Concurrency int // requests in flight (default 4)
	// RequestsPerSecond is the shared rate limit (0: unlimited); Burst defaults to Concurrency.
	RequestsPerSecond float64
	Burst             int
	Timeout           time.Duration // per request (default 30 s)
	// Backoff is the wait before each retry (default 1 s, 2 s, 4 s: three retries); Sleep waits (tests
	// pass a recording fake).
	Backoff []time.Duration
	Sleep   func(ctx context.Context, d time.Duration) error
	HTTP    *http.Client
}

// OpenAI embeds through an OpenAI-compatible /embeddings endpoint.
type OpenAI struct {
	c   *openai.Client
	o   OpenAIOptions
	lim *rate.Limiter
	sem chan struct{} // shared by every Embed call: Concurrency bounds the client's requests in flight, not one call's
}

// NewOpenAI builds the client; it does not call the API.
func NewOpenAI(o OpenAIOptions) (*OpenAI, error) {
	if o.Model == "" {
		return nil, rag.Errorf("embed.NewOpenAI", rag.KindInvalid, "model is required")
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 10
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.Backoff == nil {
		o.Backoff = []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}
	}
	if o.Sleep == nil {
		o.Sleep = rag.Wait
	}
	cfg := openai.DefaultConfig(o.APIKey)
	if o.BaseURL != "" {
		cfg.BaseURL = o.BaseURL
	}
	if o.HTTP != nil {
		cfg.HTTPClient = o.HTTP
	} else {
		// as many idle connections as requests in flight (the default keeps 2, so 8 in flight re-dialled 6 per round)
		// (the endpoint is the operator's configuration and may be on a private network, e.g. vLLM or
		// Ollama, so this is not the SSRF-guarded client of shared/netx; it is its own transport, not the
		// process-wide default)
		tr := &http.Transport{Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true,
			DialContext:  (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns: 100, MaxIdleConnsPerHost: max(o.Concurrency, 2), IdleConnTimeout: 90 * time.Second,
			TLSHandshakeTimeout: 10 * time.Second, ExpectContinueTimeout: time.Second}
		cfg.HTTPClient = &http.Client{Timeout: o.Timeout, Transport: tr}
	}
	lim := rate.NewLimiter(rate.Inf, 1)
	if o.RequestsPerSecond > 0 {
		burst := o.Burst
		if burst <= 0 {
			burst = o.Concurrency
		}
		lim = rate.NewLimiter(rate.Limit(o.RequestsPerSecond), burst)
	}
	return &OpenAI{c: openai.NewClientWithConfig(cfg), o: o, lim: lim, sem: make(chan struct{}, o.Concurrency)}, nil
}

// BatchSize is how many texts one request carries: callers that group texts send multiples of it.
func (e *OpenAI) BatchSize() int { return e.o.BatchSize }

// Dim is the configured dimension.
func (e *OpenAI) Dim() int { return e.o.Dim }

// Name is the model name.
func (e *OpenAI) Name() string { return e.o.Model }

// Embed sends texts in batches, at most Concurrency at once, and returns vectors in input order. A
// batch is retried on 429, 5xx and timeouts (one retry layer: the SDK itself does not retry).
func (e *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := e.sem
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for start := 0; start < len(texts); start += e.o.BatchSize {
		end := min(start+e.o.BatchSize, len(texts))
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			vecs, err := e.batch(ctx, texts[start:end])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
					cancel()
				}
				return
			}
			copy(out[start:end], vecs)
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, rag.E("embed", rag.KindUnavailable, err)
	}
	return out, nil
}

func (e *OpenAI) batch(ctx context.Context, texts []string) ([][]float32, error) {
	const op = "embed.OpenAI"
	req := openai.EmbeddingRequest{Input: texts, Model: openai.EmbeddingModel(e.o.Model), Dimensions: e.o.Dim}
	for attempt := 0; ; attempt++ {
		if err := e.lim.Wait(ctx); err != nil {
			return nil, rag.E(op, rag.KindUnavailable, err)
		}
		rctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
		resp, err := e.c.CreateEmbeddings(rctx, req)
		cancel()
		if err == nil {
			return e.vectors(resp, len(texts))
		}
		if !retryable(err) || attempt >= len(e.o.Backoff) {
			return nil, classify(op, err)
		}
		wait := e.o.Backoff[attempt]
		var apiErr *openai.APIError
		if errors.As(err, &apiErr) && apiErr.HTTPStatusCode == http.StatusTooManyRequests {
			wait += time.Duration(rand.Int64N(int64(wait/4) + 1)) // jitter, so retries of parallel batches spread out
		}
		if err := e.o.Sleep(ctx, wait); err != nil {
			return nil, rag.E(op, rag.KindUnavailable, err)
		}
	}
}

func (e *OpenAI) vectors(resp openai.EmbeddingResponse, n int) ([][]float32, error) {
	if len(resp.Data) != n {
		return nil, rag.Errorf("embed.OpenAI", rag.KindInternal, "the API returned %d embeddings for %d texts", len(resp.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, rag.Errorf("embed.OpenAI", rag.KindInternal, "the API returned embedding index %d twice or out of range", d.Index)
		}
		if e.o.Dim > 0 && len(d.Embedding) != e.o.Dim {
			return nil, rag.Errorf("embed.OpenAI", rag.KindInvalid, "the model returned %d dimensions, configured %d", len(d.Embedding), e.o.Dim)
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}

func retryable(err error) bool {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode == http.StatusTooManyRequests || apiErr.HTTPStatusCode >= 500
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode == http.StatusTooManyRequests || reqErr.HTTPStatusCode >= 500
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

func classify(op string, err error) error {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		switch {
		case apiErr.HTTPStatusCode == 401 || apiErr.HTTPStatusCode == 403:
			return rag.Errorf(op, rag.KindPermission, "the embeddings API refused the key (HTTP %d)", apiErr.HTTPStatusCode)
		case apiErr.HTTPStatusCode == 400 || apiErr.HTTPStatusCode == 404 || apiErr.HTTPStatusCode == 413:
			return rag.Errorf(op, rag.KindInvalid, "the embeddings API rejected the request (HTTP %d): %s", apiErr.HTTPStatusCode, apiErr.Message)
		}
	}
	if retryable(err) {
		return rag.E(op, rag.KindUnavailable, fmt.Errorf("embeddings API: %w", err))
	}
	return rag.E(op, rag.KindUnavailable, fmt.Errorf("embeddings API: %w", err))
}
