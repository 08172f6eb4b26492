package main

import (
	"log/slog"
	"net/http"

	"github.com/docmind/docmind/functions/internal/httpfn"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/identity"
	"github.com/docmind/docmind/shared/mcp"
	"github.com/docmind/docmind/shared/obs"
	"github.com/docmind/docmind/shared/streamcap"
	"github.com/docmind/docmind/shared/wire"
)

// newHandler wires the chat exactly as `docmind serve` does (cmd/docmind/server.go), with the Lambda's
// differences: no loopback guard (the Function URL is public or behind CloudFront), the caller's token in
// X-Docmind-Authorization behind CloudFront OAC, the stream caps, tracing, and rerank and grade through
// their functions when off names them.
func newHandler(cfg config.Config, c caps, s httpfn.Stores, off offload, up uploads, tr *obs.Tracing, log *slog.Logger) (http.Handler, error) {
	chain, err := wire.Retriever(cfg, s.Keyword, s.Vectors, s.SQL)
	if err != nil {
		return nil, err
	}
	if off.Reranker != nil {
		// a failed invoke is a failed reranker: lexical scores, "rerank" in degraded
		chain.Reranker = off.Reranker
	}
	// a failed invoke is a failed grader: the in-process grade, "grade" in degraded
	chain.Grader = off.Grader
	chat := wire.Chat(cfg, chain, s.SQL, s.KV)
	chat.MaxTokens = c.MaxTokens
	if chat.LLM != nil {
		traced := &obs.Streamer{Next: chat.LLM, Tracer: tr.Tracer(), PriceIn: cfg.Chat.PriceInputPerMTok, PriceOut: cfg.Chat.PriceOutputPerMTok}
		chat.LLM = &streamcap.IdleGap{Next: traced, Gap: c.IdleGap}
		if chat.Understander != nil {
			chat.Understander.LLM = chat.LLM
		}
		if chat.Agent != nil && chat.Agent.LLM != nil {
			chat.Agent.LLM = &obs.ToolCaller{Next: chat.Agent.LLM, Tracer: tr.Tracer(), PriceIn: cfg.Chat.PriceInputPerMTok, PriceOut: cfg.Chat.PriceOutputPerMTok}
		}
	}
	deps := httpapi.Deps{Version: version, Logger: log, Checks: httpfn.Checks(cfg, s), Library: s.SQL, Chat: chat,
		Conversations: s.SQL, ChatTimeout: c.StreamMax, MaxUploadBytes: cfg.Server.MaxBodyBytes,
		// the page this function serves uploads files straight to S3 through URLs it signs
		Presigner: up.Presigner, UploadOrigin: up.Origin,
		MCP: mcp.Handler(mcp.Options{Version: version, Logger: log})}
	if off.Connectors != nil {
		deps.Connectors = off.Connectors
	}
	// DOCMIND_AUTH=none was refused at start whatever the Function URL's AuthType (requireAuth)
	if _, err := httpfn.Identity(cfg, s, &deps, log); err != nil {
		return nil, err
	}
	httpfn.Memory(cfg, s, chain.Embedder, chat, &deps)
	var h http.Handler = httpapi.New(deps)
	h = http.MaxBytesHandler(h, cfg.Server.MaxBodyBytes)
	h = streamcap.Reserve(c.Reserve, h)
	if c.URLAuth == authIAM {
		h = oacToken(h)
	}
	return tr.Middleware(h), nil
}

// TokenHeader carries the caller's API key or JWT behind CloudFront with origin access control: OAC signs
// the origin request with SigV4 in Authorization, so the application's credential cannot travel there.
const TokenHeader = "X-Docmind-Authorization"

// oacToken replaces the SigV4 Authorization header (already verified by Lambda's AWS_IAM auth) with the
// application's credential from TokenHeader, or removes it: a SigV4 signature is never an app token.
func oacToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("Authorization")
		if v := r.Header.Get(TokenHeader); v != "" {
			r.Header.Set("Authorization", v)
		}
		next.ServeHTTP(w, r)
	})
}

// requireAuth refuses DOCMIND_AUTH=none on the chat function whatever the Function URL's AuthType: with
// NONE the URL is public, and with AWS_IAM behind CloudFront OAC the signature only proves the request came
// through CloudFront, not who sent it; in both cases every caller would be the tenant's admin. urlAuth is
// kept for the message.
func requireAuth(mode, urlAuth string) error {
	m, err := identity.ParseMode(mode)
	if err != nil {
		return err
	}
	if m.None() {
		return &config.ValidationError{Problems: []string{"DOCMIND_AUTH=none on the chat function (Function URL AuthType " + urlAuth +
			") would make every caller the tenant's admin, also behind CloudFront (AWS_IAM only proves the request came through it): " +
			"set DOCMIND_AUTH to keys, jwt or keys,jwt"}}
	}
	return nil
}

func kvError(driver string) error {
	return &config.ValidationError{Problems: []string{"DOCMIND_KV_DRIVER must be redis in the query function (limits, cache, memory), got " + driver}}
}
