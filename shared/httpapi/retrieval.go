package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// The external knowledge API (Dify's "External Knowledge API", which other RAG front ends also call):
// POST /retrieval with a bearer key, a knowledge base and a query; the records are docmind's final
// evidence (after fusion, rerank, filtering and compression), each with its rerank score. Errors use that
// API's shape, {"error_code", "error_msg"}: 1001 no bearer credential, 1002 the credential is refused,
// 2001 no such knowledge base (or one the caller may not read); the other failures keep docmind's codes
// as text with the HTTP status of the kind.

const (
	difyBadAuthHeader = 1001
	difyAuthFailed    = 1002
	difyNoKnowledge   = 2001
)

// retrievalRequest is the body of POST /retrieval.
type retrievalRequest struct {
	KnowledgeID string `json:"knowledge_id"` // a knowledge base's id or name
	Query       string `json:"query"`
	Setting     struct {
		TopK           int     `json:"top_k"`
		ScoreThreshold float64 `json:"score_threshold"`
	} `json:"retrieval_setting"`
	// MetadataCondition is Dify's metadata filter; accepted and not applied (docmind filters by
	// knowledge base and document, not by arbitrary metadata).
	MetadataCondition json.RawMessage `json:"metadata_condition,omitempty"`
}

// RetrievalRecord is one passage of the answer to POST /retrieval.
type RetrievalRecord struct {
	Content  string         `json:"content"`
	Score    float64        `json:"score"`
	Title    string         `json:"title"`
	Metadata map[string]any `json:"metadata"`
}

// maxRetrievalTopK bounds top_k: more passages than the chain keeps cannot come back anyway.
const maxRetrievalTopK = 50

type retrieval struct {
	svc *Service
	log *slog.Logger
}

func (rt *retrieval) fail(w http.ResponseWriter, code int, status int, msg string) {
	WriteJSON(w, status, map[string]any{"error_code": code, "error_msg": msg})
}

func (rt *retrieval) serve(w http.ResponseWriter, r *http.Request) {
	h := rt.svc.l.h
	if h.d.Auth != nil {
		if f := strings.Fields(r.Header.Get("Authorization")); len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
			rt.fail(w, difyBadAuthHeader, http.StatusForbidden, "Invalid Authorization header format. Expected 'Bearer <api-key>' format.")
			return
		}
	}
	p, err := h.authenticate(r)
	if err != nil {
		if rag.Is(err, rag.KindUnauthenticated) {
			rt.fail(w, difyAuthFailed, http.StatusForbidden, "Authorization failed: "+publicMessage(err))
			return
		}
		WriteError(w, r, rt.log, err)
		return
	}
	var in retrievalRequest
	if err := decodeBody(w, r, &in, `{"knowledge_id": ..., "query": ..., "retrieval_setting": {"top_k": n, "score_threshold": x}}`); err != nil {
		WriteError(w, r, rt.log, err)
		return
	}
	if in.KnowledgeID == "" {
		WriteError(w, r, rt.log, rag.Errorf("httpapi", rag.KindInvalid, "knowledge_id is empty"))
		return
	}
	if in.Setting.TopK < 0 || in.Setting.TopK > maxRetrievalTopK {
		WriteError(w, r, rt.log, rag.Errorf("httpapi", rag.KindInvalid, "retrieval_setting.top_k must be between 1 and %d", maxRetrievalTopK))
		return
	}
	if _, err := rt.svc.KnowledgeBase(r.Context(), p, in.KnowledgeID); err != nil {
		if rag.Is(err, rag.KindNotFound) {
			rt.fail(w, difyNoKnowledge, http.StatusNotFound, "The knowledge does not exist.")
			return
		}
		WriteError(w, r, rt.log, err)
		return
	}
	res, err := rt.svc.Search(r.Context(), p, in.Query, []string{in.KnowledgeID}, nil)
	if err != nil {
		var le *LimitError
		if errors.As(err, &le) {
			h.admit(w, r, p) // the same 429 as the API (the limit is still reached)
			return
		}
		WriteError(w, r, rt.log, err)
		return
	}
	topK := in.Setting.TopK
	if topK == 0 {
		topK = 5
	}
	out := []RetrievalRecord{}
	for _, e := range res.Evidence {
		if len(out) == topK {
			break
		}
		if e.Score < in.Setting.ScoreThreshold {
			continue
		}
		md := map[string]any{"document_id": e.DocumentID, "kb_id": e.KBID, "chunk_id": e.ChunkID}
		if e.Chapter != "" {
			md["chapter"] = e.Chapter
		}
		if e.Page > 0 {
			md["page"] = e.Page
		}
		title := e.FileName
		if title == "" {
			title = e.DocumentID
		}
		out = append(out, RetrievalRecord{Content: e.Text, Score: e.Score, Title: title, Metadata: md})
	}
	WriteJSON(w, http.StatusOK, map[string]any{"records": out})
}

// protectedResource is the OAuth 2.0 protected resource metadata (RFC 9728) that an MCP client reads to
// find the authorization server its token must come from: the JWT issuer docmind accepts. Public, like
// any discovery document; the resource is the MCP endpoint when asked at the path-suffixed location.
func (h *handler) protectedResource(w http.ResponseWriter, r *http.Request) {
	resource := publicBase(r)
	if strings.HasSuffix(r.URL.Path, "/mcp") {
		resource += "/mcp"
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	WriteJSON(w, http.StatusOK, map[string]any{
		"resource":                 resource,
		"authorization_servers":    []string{h.d.OAuthIssuer},
		"bearer_methods_supported": []string{"header"},
		"resource_name":            "docmind",
	})
}
