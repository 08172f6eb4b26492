// Package httpapi is docmind's HTTP interface, written against http.Handler so that `docmind serve`
// (net/http) and the Lambda Function URL (aws-lambda-go/lambdaurl) serve the same handler. Errors are
// JSON, {"error":{"code","message"}}, with the status derived from the error kind; internal error text
// never reaches a client.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/rag"
)

// Check probes one dependency for GET /healthz.
type Check struct {
	Name   string
	Driver string
	Probe  func(ctx context.Context) error
}

// Deps are what the handler needs.
type Deps struct {
	Version string
	Logger  *slog.Logger
	Checks  []Check
	// CheckTimeout bounds each health probe (default 2 s).
	CheckTimeout time.Duration

	// Library enables the knowledge-base and document endpoints; Ingester enables uploads and deletes.
	Library  Library
	Ingester Ingester
	// Tenant returns the caller's tenant. Until authentication exists the local server answers with its
	// single configured tenant (and listens on loopback only).
	Tenant func(*http.Request) (string, error)
	// MaxUploadBytes bounds one uploaded file (default 64 MiB), sent directly or through a presigned URL.
	MaxUploadBytes int64
	// Presigner, when set, serves POST /api/kbs/{kb}/uploads (a URL to send the file straight to storage),
	// and GET /api/kbs tells the page to use it ("upload": {"mode": "presigned"}).
	Presigner Presigner
	// UploadOrigin is where presigned uploads go (the upload bucket's https://bucket.s3.region.amazonaws.com,
	// named by whoever answers POST /api/kbs/{kb}/uploads): the page's Content-Security-Policy lets it
	// send the file there and nowhere else; "" (no presigned uploads): same origin only.
	UploadOrigin string
	// Chat enables POST /api/chat (needs Library and Tenant); ChatTimeout bounds one stream (default
	// 2 min): Lambda keeps streaming after the client leaves, so the server ends it.
	Chat        Chatter
	ChatTimeout time.Duration
	// Search enables POST /api/search (with Chat); nil: Chat's own retrieval chain when Chat also
	// searches (answer.Pipeline does), so that the test and the answer retrieve alike.
	Search Searcher
	// Asker, when set, answers POST /api/ask (the answer state machine on AWS); nil runs Chat.
	Asker Asker
	// Conversations stores chat threads (needs Chat); User names the caller within the tenant (default
	// "local" until authentication exists).
	Conversations Conversations
	User          func(*http.Request) (string, error)
	// Memories enables GET /api/memories and DELETE /api/memories/{id}: the caller's own long-term
	// memories (the chat pipeline's Memory writes and recalls them).
	Memories Memories

	// Auth identifies every /api/ and /v1/ caller; nil: every request acts for Tenant and User (the
	// local single-user mode, which also needs Guard.LoopbackOnly). AuthMode names the mode for
	// GET /api/me ("none", "keys", "jwt", "keys,jwt").
	Auth     Authenticator
	AuthMode string
	// Members reads knowledge-base roles; nil: every caller owns every knowledge base of its tenant.
	Members MemberRoles
	// Admin enables the identity endpoints (users, keys, members, audit); Audit records deletions and
	// grants (usually the same store).
	Admin Admin
	Audit Auditor
	// Limits, when set, is checked before chat and search run (429 when refused) and charged with the
	// tokens an answer used.
	Limits Limiter
	// Guard configures the browser-origin checks.
	Guard GuardOptions

	// Connectors, when set (with Library), serves a knowledge base's connectors to its editors
	// (connectors.go): `docmind serve`; on AWS connectors are managed with the CLI.
	Connectors Connectors

	// AccessMap grants docmind identities the principals of sources that do not name people by email
	// (DOCMIND_ACCESS_MAP, shared/access). Per-document access lists are enforced wherever the Library
	// keeps connectors (access.Store); the map only widens whom a list names.
	AccessMap access.Map

	// MCP, when set, serves the Model Context Protocol at /mcp (mcp.Handler in shared/mcp): it is given
	// the operations behind these routes (Service), for a caller identified as on every /api/ route.
	MCP func(*Service) http.Handler
	// OAuthIssuer, with JWT authentication, is the authorization server that the OAuth 2.0 protected
	// resource metadata (RFC 9728) at /.well-known/oauth-protected-resource names, and every 401 points at
	// that document (the MCP authorization spec); empty: no metadata is published.
	OAuthIssuer string
}

// Chatter answers one question (answer.Pipeline): Check rejects a bad request before the stream
// starts, Run emits the answer's events and returns the final Done, which the handler stores and then
// sends as done.
type Chatter interface {
	Check(req answer.Request) error
	Run(ctx context.Context, req answer.Request, emit answer.Emit) (*answer.Done, error)
}

// Memories is long-term memory as its endpoints use it (memory.Store).
type Memories interface {
	List(ctx context.Context, tenant, user string) ([]rag.Memory, error)
	Forget(ctx context.Context, tenant, user, id string) error
}

// Conversations is the relational store as chat history uses it.
type Conversations interface {
	CreateConversation(ctx context.Context, c *rag.Conversation) error
	GetConversation(ctx context.Context, tenant, user, id string) (rag.Conversation, error)
	ListConversations(ctx context.Context, tenant, user string, limit int) ([]rag.Conversation, error)
	AppendMessage(ctx context.Context, m *rag.Message) error
	ListMessages(ctx context.Context, tenant, conversationID string, limit int) ([]rag.Message, error)
	SetConversationSummary(ctx context.Context, tenant, user, id, summary string, upto time.Time) error
}

// New returns the handler.
func New(d Deps) http.Handler {
	d = d.withDefaults()
	mux := http.NewServeMux()
	h := &handler{d: d}
	mux.HandleFunc("GET /healthz", h.health)
	identified := d.Tenant != nil || d.Auth != nil
	if d.Library != nil && identified {
		(&library{lib: d.Library, ing: d.Ingester, maxBytes: d.MaxUploadBytes, h: h}).routes(mux)
	}
	if d.Chat != nil && d.Library != nil && identified {
		serveWeb(mux, d.UploadOrigin) // the page needs the knowledge-base and chat endpoints
	}
	if identified {
		mux.HandleFunc("GET /api/me", h.me)
	}
	if d.Admin != nil {
		(&admin{store: d.Admin, h: h, lib: d.Library}).routes(mux)
	}
	h.agentRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, d.Logger, rag.Errorf("httpapi", rag.KindNotFound, "no route for %s %s", r.Method, r.URL.Path))
	})
	return h.guard(h.authn(mux))
}

// withDefaults fills what was left unset.
func (d Deps) withDefaults() Deps {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.CheckTimeout <= 0 {
		d.CheckTimeout = 2 * time.Second
	}
	if d.MaxUploadBytes <= 0 {
		d.MaxUploadBytes = 64 << 20
	}
	if d.User == nil {
		d.User = func(*http.Request) (string, error) { return "local", nil }
	}
	if d.ChatTimeout <= 0 {
		d.ChatTimeout = 2 * time.Minute
	}
	if d.Search == nil {
		d.Search, _ = d.Chat.(Searcher)
	}
	return d
}

type handler struct{ d Deps }

// StoreStatus is one dependency in the health report.
type StoreStatus struct {
	OK     bool   `json:"ok"`
	Driver string `json:"driver,omitempty"`
	Error  string `json:"error,omitempty"` // the error kind only: never internal text
	Millis int64  `json:"ms"`
}

// Health is the body of GET /healthz.
type Health struct {
	Status  string                 `json:"status"` // "ok" or "degraded"
	Version string                 `json:"version"`
	Stores  map[string]StoreStatus `json:"stores"`
}

func (h *handler) health(w http.ResponseWriter, r *http.Request) {
	out := Health{Status: "ok", Version: h.d.Version, Stores: map[string]StoreStatus{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range h.d.Checks {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(r.Context(), h.d.CheckTimeout)
			defer cancel()
			start := time.Now()
			err := c.Probe(ctx)
			st := StoreStatus{OK: err == nil, Driver: c.Driver, Millis: time.Since(start).Milliseconds()}
			if err != nil {
				st.Error = rag.KindOf(err).String()
				h.d.Logger.Warn("health check failed", "check", c.Name, "err", err)
			}
			mu.Lock()
			out.Stores[c.Name] = st
			if err != nil {
				out.Status = "degraded"
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	code := http.StatusOK
	if out.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	WriteJSON(w, code, out)
}

// WriteJSON writes v with the status code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	enc.Encode(v)
}

// Status maps an error kind to an HTTP status.
func Status(kind rag.Kind) int {
	switch kind {
	case rag.KindInvalid, rag.KindTerminal:
		return http.StatusBadRequest
	case rag.KindNotFound:
		return http.StatusNotFound
	case rag.KindConflict:
		return http.StatusConflict
	case rag.KindPermission:
		return http.StatusForbidden
	case rag.KindUnauthenticated:
		return http.StatusUnauthorized
	case rag.KindUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// publicMessage is what a client may read: validation messages (they describe the client's own input)
// and messages this package wrote; a fixed sentence for everything else, so driver and dependency text
// never reaches a client.
func publicMessage(err error) string {
	kind := rag.KindOf(err)
	var e *rag.Error
	if errors.As(err, &e) && e.Err != nil && (kind == rag.KindInvalid || e.Op == "httpapi" || e.Op == "identity") {
		return callerText(e.Err)
	}
	switch kind {
	case rag.KindNotFound:
		return "not found"
	case rag.KindConflict:
		return "conflicts with an existing resource"
	case rag.KindInvalid, rag.KindTerminal:
		return "invalid request"
	case rag.KindUnavailable:
		return "a dependency is unavailable; retry later"
	case rag.KindPermission:
		return "not allowed"
	case rag.KindUnauthenticated:
		return "authentication required"
	}
	return "internal error"
}

// WriteError writes err as {"error":{"code","message"}} and logs server-side failures once.
func WriteError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	var tl errTooLarge
	if errors.As(err, &tl) {
		WriteJSON(w, http.StatusRequestEntityTooLarge, map[string]map[string]string{"error": {"code": "TooLarge", "message": tl.Error()}})
		return
	}
	kind := rag.KindOf(err)
	code := Status(kind)
	if code >= 500 {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "kind", kind.String(), "err", err)
	}
	type body struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	WriteJSON(w, code, map[string]body{"error": {Code: kind.String(), Message: publicMessage(err)}})
}
