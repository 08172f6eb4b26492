package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/retrieve"
)

// Service is what the HTTP routes do, for a caller already identified, offered to edges that are not
// routes of their own: the MCP server over Streamable HTTP or stdio, the external knowledge API. Every
// method applies what the matching route applies (tenant scoping, knowledge-base roles, the limits
// before any model or embedding call, the tokens charged afterwards), and returns errors classified with
// rag kinds (a *LimitError when the limits refuse); PublicError says what a client may read of one.
type Service struct{ l *library }

// NewService returns the operations over d, as New would serve them (the same defaults).
func NewService(d Deps) *Service {
	d = d.withDefaults()
	return (&handler{d: d}).service()
}

func (h *handler) service() *Service {
	return &Service{l: &library{lib: h.d.Library, ing: h.d.Ingester, maxBytes: h.d.MaxUploadBytes, h: h}}
}

// Authenticate identifies the caller from an Authorization header value ("Bearer <key or token>").
// Errors: Unauthenticated, Unavailable; Unauthenticated when no authenticator is configured.
func (s *Service) Authenticate(ctx context.Context, authorization string) (rag.Principal, error) {
	if s.l.h.d.Auth == nil {
		return rag.Principal{}, rag.Errorf("httpapi", rag.KindUnauthenticated, "no authentication is configured")
	}
	return s.l.h.d.Auth.Authenticate(ctx, authorization)
}

// PublicError is the code and message a client may read of err, as the HTTP API writes them: the kind's
// name (RateLimited for a limit) and a message free of internal text.
func PublicError(err error) (code, message string) {
	var le *LimitError
	if errors.As(err, &le) {
		return "RateLimited", le.Message
	}
	return rag.KindOf(err).String(), publicMessage(err)
}

// KB is a knowledge base as its caller sees it: with the caller's role on it.
type KB struct {
	rag.KnowledgeBase
	Role string `json:"role"`
}

// KnowledgeBases lists the knowledge bases of the caller's tenant it may read, in the store's order.
func (s *Service) KnowledgeBases(ctx context.Context, p rag.Principal) ([]KB, error) {
	kbs, err := s.l.lib.ListKBs(ctx, p.Tenant)
	if err != nil {
		return nil, err
	}
	roles, err := s.l.h.roles(ctx, p)
	if err != nil {
		return nil, err
	}
	out := []KB{}
	for _, kb := range roles.Readable(kbs) {
		out = append(out, KB{KnowledgeBase: kb, Role: roles.Of(kb.ID).String()})
	}
	return out, nil
}

// KnowledgeBase resolves a knowledge base by id or name that the caller may read (NotFound otherwise,
// also for another tenant's).
func (s *Service) KnowledgeBase(ctx context.Context, p rag.Principal, key string) (rag.KnowledgeBase, error) {
	kb, err := s.l.resolveKB(ctx, p.Tenant, key)
	if err == nil {
		err = s.l.require(ctx, p, kb, rag.KBReader)
	}
	return kb, err
}

// Documents lists the documents of a knowledge base (id or name) the caller may read.
func (s *Service) Documents(ctx context.Context, p rag.Principal, kbKey string) ([]rag.Document, error) {
	kb, err := s.KnowledgeBase(ctx, p, kbKey)
	if err != nil {
		return nil, err
	}
	docs, err := s.l.lib.ListDocuments(ctx, p.Tenant, kb.ID, "")
	if err != nil {
		return nil, err
	}
	return s.l.readableDocs(ctx, p, kb.ID, docs) // their sources' access lists
}

// Document returns a document the caller may read (NotFound otherwise).
func (s *Service) Document(ctx context.Context, p rag.Principal, id string) (rag.Document, error) {
	return s.l.doc(ctx, p, id, rag.KBReader)
}

// DocumentChunks returns a readable document's chunks, parents and children, in the store's order.
func (s *Service) DocumentChunks(ctx context.Context, p rag.Principal, id string) ([]rag.Chunk, error) {
	d, err := s.Document(ctx, p, id)
	if err != nil {
		return nil, err
	}
	return s.l.lib.ListChunks(ctx, p.Tenant, d.ID)
}

// ChunkReader reads chunks by id within a tenant (the relational store). Chunk asks the Library for it
// rather than widening Library, which every route's fake implements: both stores have it.
type ChunkReader interface {
	GetChunks(ctx context.Context, tenant string, ids []string) ([]rag.Chunk, error)
}

// Chunk returns one chunk by id, with its heading path (Chapter) and page, when the caller may read its
// knowledge base: NotFound otherwise, like a missing one. Unavailable when the library cannot read
// chunks by id.
func (s *Service) Chunk(ctx context.Context, p rag.Principal, id string) (rag.Chunk, error) {
	cr, ok := s.l.lib.(ChunkReader)
	if !ok {
		return rag.Chunk{}, rag.Errorf("httpapi", rag.KindUnavailable, "chunks cannot be read by id here")
	}
	if err := rag.ValidateID("chunk", id); err != nil {
		return rag.Chunk{}, rag.Errorf("httpapi", rag.KindNotFound, "no chunk %q", id)
	}
	cs, err := cr.GetChunks(ctx, p.Tenant, []string{id})
	if err != nil {
		return rag.Chunk{}, err
	}
	if len(cs) == 0 {
		return rag.Chunk{}, rag.Errorf("httpapi", rag.KindNotFound, "no chunk %q", id)
	}
	c := cs[0]
	kb, err := s.l.lib.GetKB(ctx, p.Tenant, c.KBID)
	if err == nil {
		err = s.l.require(ctx, p, kb, rag.KBReader)
	}
	if err == nil { // a citation's chunk is its document's: the source's access list holds
		var d rag.Document
		if d, err = s.l.lib.GetDocument(ctx, p.Tenant, c.DocumentID); err == nil {
			err = s.l.checkReadable(ctx, p, d)
		}
	}
	if err != nil {
		return rag.Chunk{}, notFoundAs(err, "no chunk %q", id)
	}
	return c, nil
}

// Search runs the retrieval chain for the caller, as POST /api/search: kbs by id or name (none: every
// one the caller may read), filter a metadata filter (rag.MetaFilter's JSON form; empty: none), limits
// checked first, every stage's candidates and scores in the result.
func (s *Service) Search(ctx context.Context, p rag.Principal, query string, kbs []string, filter json.RawMessage) (*retrieve.Result, error) {
	if s.l.h.d.Search == nil {
		return nil, rag.Errorf("httpapi", rag.KindNotFound, "search is not enabled here")
	}
	q, err := s.l.searchQuery(ctx, p, searchRequest{Query: query, KBs: kbs})
	if err != nil {
		return nil, err
	}
	none, err := s.l.applyMetaFilter(ctx, p, filter, &q)
	if err != nil {
		return nil, err
	}
	degraded, err := s.l.h.allow(ctx, p)
	if err != nil {
		return nil, err
	}
	if none {
		return emptyResult(), nil
	}
	res, err := s.l.h.d.Search.Retrieve(ctx, q)
	if err != nil {
		return nil, err
	}
	if degraded {
		res.Degraded = append(res.Degraded, "limits")
	}
	return res, nil
}

// Ask answers a question for the caller, as POST /api/ask (nothing stored), calling emit with the
// pipeline's events while it runs (the timeline, tokens, warnings; never done). filter is a metadata
// filter as in Search (NotFound when no document passes it). The tokens used are charged to the
// caller whatever the outcome; the answer is bounded by the chat timeout.
func (s *Service) Ask(ctx context.Context, p rag.Principal, question string, kbs, documents []string, filter json.RawMessage, emit answer.Emit) (done *answer.Done, err error) {
	l := s.l
	if l.h.d.Chat == nil {
		return nil, rag.Errorf("httpapi", rag.KindNotFound, "questions are not enabled here")
	}
	req, err := l.question(ctx, p, question, kbs, documents)
	if err == nil {
		err = l.restrictKBs(ctx, p, &req)
	}
	if err == nil {
		err = l.restrictByFilter(ctx, p, filter, &req)
	}
	if err != nil {
		return nil, err
	}
	degraded, err := l.h.allow(ctx, p)
	if err != nil {
		return nil, err
	}
	meter := &llm.Meter{} // counts every model call made with ctx, as metered does for a request
	ctx = llm.WithMeter(ctx, meter)
	defer func() { l.h.charge(ctx, p, meter, done) }()
	ctx, cancel := context.WithTimeout(ctx, l.h.d.ChatTimeout)
	defer cancel()
	if emit == nil || l.h.d.Asker != nil {
		done, err = l.answer(ctx, req)
	} else {
		done, err = l.run(ctx, req, emit)
	}
	if err == nil && done == nil {
		err = rag.Errorf("httpapi.ask", rag.KindInternal, "no answer")
	}
	if err != nil {
		return nil, err
	}
	if degraded {
		addDegraded(done, "limits")
	}
	l.h.d.Logger.Info("ask", "tenant", p.Tenant, "path", done.Path, "band", done.Confidence.Band, "answerer", done.Answerer, "degraded", done.Degraded)
	return done, nil
}

// Ingest stores a file (name and bytes) in a knowledge base (id or name) the caller edits and queues its
// ingestion, as an upload to POST /api/kbs/{kb}/documents: NotFound when ingestion is not enabled here
// or the knowledge base is not readable, Permission without the editor role, Invalid for an empty or
// unnamed file, TooLarge (Invalid kind, its own message) over the upload limit.
func (s *Service) Ingest(ctx context.Context, p rag.Principal, kbKey, fileName string, data []byte) (rag.Document, error) {
	l := s.l
	if l.ing == nil {
		return rag.Document{}, rag.Errorf("httpapi", rag.KindNotFound, "uploads are not enabled here")
	}
	kb, err := l.resolveKB(ctx, p.Tenant, kbKey)
	if err == nil {
		err = l.require(ctx, p, kb, rag.KBEditor)
	}
	if err != nil {
		return rag.Document{}, err
	}
	name := ingest.CleanFileName(fileName)
	switch {
	case strings.TrimSpace(fileName) == "" || name == "":
		return rag.Document{}, rag.Errorf("httpapi", rag.KindInvalid, "the file needs a name")
	case len(data) == 0:
		return rag.Document{}, rag.Errorf("httpapi", rag.KindInvalid, "the file %q is empty", name)
	case int64(len(data)) > l.maxBytes:
		return rag.Document{}, rag.Errorf("httpapi", rag.KindInvalid, "the file is larger than the upload limit (%d bytes)", l.maxBytes)
	}
	doc, err := l.ing.Upload(ctx, p.Tenant, kb.ID, fileName, bytes.NewReader(data), nil)
	if err != nil {
		return rag.Document{}, err
	}
	l.h.audit(ctx, p, "document.upload", doc.ID, kb.ID)
	return doc, nil
}

// agentRoutes serves the routes made for other programs than the page: the MCP endpoint (when Deps.MCP
// is set), the protected resource metadata (JWT), and the external knowledge API.
func (h *handler) agentRoutes(mux *http.ServeMux) {
	identified := h.d.Tenant != nil || h.d.Auth != nil
	if h.d.Library == nil || !identified {
		return
	}
	svc := h.service()
	if h.d.MCP != nil {
		mux.Handle("/mcp", h.d.MCP(svc))
	}
	if h.d.OAuthIssuer != "" {
		mux.HandleFunc("GET /.well-known/oauth-protected-resource", h.protectedResource)
		mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", h.protectedResource)
	}
	if h.d.Search != nil {
		mux.HandleFunc("POST /retrieval", (&retrieval{svc: svc, log: h.d.Logger}).serve)
	}
}

// challenge is the WWW-Authenticate of a 401: with an authorization server configured it names the
// protected resource metadata, so that an MCP client can find where to get a token (RFC 9728 section 5.1).
func (h *handler) challenge(r *http.Request) string {
	if h.d.OAuthIssuer == "" {
		return `Bearer realm="docmind"`
	}
	return fmt.Sprintf(`Bearer realm="docmind", resource_metadata=%q`, publicBase(r)+"/.well-known/oauth-protected-resource")
}

// publicBase is the origin the caller reached: https unless the request came in plain HTTP directly
// (a proxy or the Function URL says X-Forwarded-Proto).
func publicBase(r *http.Request) string {
	scheme := "https"
	if fp := r.Header.Get("X-Forwarded-Proto"); fp == "http" || (fp == "" && r.TLS == nil) {
		scheme = "http"
	}
	return scheme + "://" + r.Host
}
