package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/docmind/docmind/shared/rag"
)

// Library is the relational store as the knowledge-base endpoints use it.
type Library interface {
	ListKBs(ctx context.Context, tenant string) ([]rag.KnowledgeBase, error)
	CreateKB(ctx context.Context, kb *rag.KnowledgeBase) error
	GetKB(ctx context.Context, tenant, id string) (rag.KnowledgeBase, error)
	GetKBByName(ctx context.Context, tenant, name string) (rag.KnowledgeBase, error)
	ListDocuments(ctx context.Context, tenant, kbID, status string) ([]rag.Document, error)
	GetDocument(ctx context.Context, tenant, id string) (rag.Document, error)
	ListChunks(ctx context.Context, tenant, docID string) ([]rag.Chunk, error)
}

// Ingester accepts uploads and deletes documents.
type Ingester interface {
	Upload(ctx context.Context, tenant, kbName, fileName string, data []byte) (rag.Document, error)
	Delete(ctx context.Context, tenant, docID string) error
	// Reprocess queues the document's stored source for ingestion again.
	Reprocess(ctx context.Context, tenant, docID string) (rag.Document, error)
}

// docView is a document as the API shows it: stage timings as a JSON object.
type docView struct {
	rag.Document
	StageMillis json.RawMessage `json:"stage_ms,omitempty"`
}

func viewDoc(d rag.Document) docView {
	v := docView{Document: d}
	if d.StageMillis != "" && json.Valid([]byte(d.StageMillis)) {
		v.StageMillis = json.RawMessage(d.StageMillis)
	}
	return v
}

type library struct {
	lib      Library
	ing      Ingester
	tenant   func(*http.Request) (string, error)
	maxBytes int64
	h        *handler
}

func (l *library) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/kbs", l.listKBs)
	if l.h.d.Chat != nil {
		mux.HandleFunc("POST /api/chat", l.chat)
		mux.HandleFunc("POST /api/search", l.search)
		mux.HandleFunc("POST /v1/chat/completions", l.chatCompletions)
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
			WriteJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
				map[string]any{"id": "docmind", "object": "model", "created": 0, "owned_by": "docmind"}}})
		})
		if l.h.d.Conversations != nil {
			mux.HandleFunc("GET /api/conversations", l.listConversations)
			mux.HandleFunc("GET /api/conversations/{id}/messages", l.listMessages)
			mux.HandleFunc("DELETE /api/conversations/{id}", l.deleteConversation)
		}
		if l.h.d.Memories != nil {
			mux.HandleFunc("GET /api/memories", l.listMemories)
			mux.HandleFunc("DELETE /api/memories/{id}", l.forgetMemory)
		}
	}
	mux.HandleFunc("POST /api/kbs", l.createKB)
	mux.HandleFunc("GET /api/kbs/{kb}", l.getKB)
	mux.HandleFunc("GET /api/kbs/{kb}/documents", l.listDocs)
	mux.HandleFunc("POST /api/kbs/{kb}/documents", l.upload)
	mux.HandleFunc("GET /api/documents/{id}", l.getDoc)
	mux.HandleFunc("GET /api/documents/{id}/chunks", l.chunks)
	mux.HandleFunc("DELETE /api/documents/{id}", l.deleteDoc)
	mux.HandleFunc("POST /api/documents/{id}/reprocess", l.reprocessDoc)
}

func (l *library) fail(w http.ResponseWriter, r *http.Request, err error) {
	WriteError(w, r, l.h.d.Logger, err)
}

// kb resolves {kb} as an id or a name within the caller's tenant.
func (l *library) kb(r *http.Request, tenant string) (rag.KnowledgeBase, error) {
	return l.resolveKB(r.Context(), tenant, r.PathValue("kb"))
}

// resolveKB finds a knowledge base by id or name within tenant.
func (l *library) resolveKB(ctx context.Context, tenant, key string) (rag.KnowledgeBase, error) {
	if strings.HasPrefix(key, "kb_") && rag.ValidateID("kb", key) == nil {
		if kb, err := l.lib.GetKB(ctx, tenant, key); err == nil || !rag.Is(err, rag.KindNotFound) {
			return kb, err
		}
	}
	kb, err := l.lib.GetKBByName(ctx, tenant, key)
	if rag.Is(err, rag.KindInvalid) {
		err = rag.Errorf("httpapi", rag.KindNotFound, "no knowledge base %q", key)
	}
	return kb, err
}

// decodeBody decodes a JSON body of at most 64 KiB with no unknown fields; shape names the expected form
// in the error.
func decodeBody(r *http.Request, v any, shape string) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return rag.Errorf("httpapi", rag.KindInvalid, "body must be %s: %v", shape, err)
	}
	return nil
}

// scope returns the caller's tenant, or writes the error and returns false.
func (l *library) scope(w http.ResponseWriter, r *http.Request) (string, bool) {
	tenant, err := l.tenant(r)
	if err != nil {
		l.fail(w, r, err)
		return "", false
	}
	return tenant, true
}

// kbScope returns the caller's tenant and the {kb} of the path, or writes the error and returns false.
func (l *library) kbScope(w http.ResponseWriter, r *http.Request) (string, rag.KnowledgeBase, bool) {
	tenant, ok := l.scope(w, r)
	if !ok {
		return "", rag.KnowledgeBase{}, false
	}
	kb, err := l.kb(r, tenant)
	if err != nil {
		l.fail(w, r, err)
		return "", rag.KnowledgeBase{}, false
	}
	return tenant, kb, true
}

func (l *library) listKBs(w http.ResponseWriter, r *http.Request) {
	tenant, ok := l.scope(w, r)
	if !ok {
		return
	}
	kbs, err := l.lib.ListKBs(r.Context(), tenant)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"knowledge_bases": kbs})
}

func (l *library) createKB(w http.ResponseWriter, r *http.Request) {
	tenant, ok := l.scope(w, r)
	if !ok {
		return
	}
	var in struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if err := decodeBody(r, &in, `{"name": ..., "description": ...}`); err != nil {
		l.fail(w, r, err)
		return
	}
	kb := rag.KnowledgeBase{Tenant: tenant, Name: in.Name, Description: in.Description}
	if err := l.lib.CreateKB(r.Context(), &kb); err != nil {
		if rag.Is(err, rag.KindConflict) {
			err = rag.Errorf("httpapi", rag.KindConflict, "a knowledge base named %q exists", in.Name)
		}
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusCreated, kb)
}

func (l *library) getKB(w http.ResponseWriter, r *http.Request) {
	tenant, kb, ok := l.kbScope(w, r)
	if !ok {
		return
	}
	docs, err := l.lib.ListDocuments(r.Context(), tenant, kb.ID, "")
	if err != nil {
		l.fail(w, r, err)
		return
	}
	counts := map[string]int{}
	chunks := 0
	for _, d := range docs {
		counts[d.Status]++
		chunks += d.ChunkCount
	}
	WriteJSON(w, http.StatusOK, map[string]any{"knowledge_base": kb, "documents": len(docs), "by_status": counts, "chunks": chunks})
}

func (l *library) listDocs(w http.ResponseWriter, r *http.Request) {
	tenant, kb, ok := l.kbScope(w, r)
	if !ok {
		return
	}
	docs, err := l.lib.ListDocuments(r.Context(), tenant, kb.ID, r.URL.Query().Get("status"))
	if err != nil {
		l.fail(w, r, err)
		return
	}
	out := make([]docView, len(docs))
	for i, d := range docs {
		out[i] = viewDoc(d)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"documents": out})
}

func (l *library) upload(w http.ResponseWriter, r *http.Request) {
	tenant, ok := l.scope(w, r)
	if !ok {
		return
	}
	if l.ing == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "uploads are not enabled here"))
		return
	}
	kb, err := l.kb(r, tenant)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, l.maxBytes+1<<20) // the file plus multipart framing
	mr, err := r.MultipartReader()
	if err != nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "send the file as multipart/form-data in a field named \"file\""))
		return
	}
	for {
		part, err := mr.NextPart()
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				l.tooLarge(w)
				return
			}
			l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "no \"file\" field in the upload"))
			return
		}
		if part.FormName() != "file" || part.FileName() == "" {
			part.Close()
			continue
		}
		data, err := io.ReadAll(io.LimitReader(part, l.maxBytes+1))
		part.Close()
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) || int64(len(data)) > l.maxBytes {
			l.tooLarge(w)
			return
		}
		if err != nil {
			l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "reading the upload: %v", err))
			return
		}
		doc, err := l.ing.Upload(r.Context(), tenant, kb.Name, part.FileName(), data)
		if err != nil {
			l.fail(w, r, err)
			return
		}
		WriteJSON(w, http.StatusAccepted, viewDoc(doc))
		return
	}
}

func (l *library) tooLarge(w http.ResponseWriter) {
	WriteJSON(w, http.StatusRequestEntityTooLarge, map[string]map[string]string{"error": {"code": "TooLarge", "message": "the file is larger than the upload limit"}})
}

func (l *library) getDoc(w http.ResponseWriter, r *http.Request) {
	tenant, ok := l.scope(w, r)
	if !ok {
		return
	}
	d, err := l.lib.GetDocument(r.Context(), tenant, r.PathValue("id"))
	if rag.Is(err, rag.KindInvalid) {
		err = rag.E("httpapi", rag.KindNotFound, nil)
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, viewDoc(d))
}

func (l *library) chunks(w http.ResponseWriter, r *http.Request) {
	tenant, ok := l.scope(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, err := l.lib.GetDocument(r.Context(), tenant, id); err != nil {
		if rag.Is(err, rag.KindInvalid) {
			err = rag.E("httpapi", rag.KindNotFound, nil)
		}
		l.fail(w, r, err)
		return
	}
	cs, err := l.lib.ListChunks(r.Context(), tenant, id)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"chunks": cs})
}

func (l *library) deleteDoc(w http.ResponseWriter, r *http.Request) {
	tenant, ok := l.scope(w, r)
	if !ok {
		return
	}
	if l.ing == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "deletes are not enabled here"))
		return
	}
	err := l.ing.Delete(r.Context(), tenant, r.PathValue("id"))
	if rag.Is(err, rag.KindInvalid) {
		err = rag.E("httpapi", rag.KindNotFound, nil)
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// reprocessDoc queues a document's stored source for ingestion again: 202 with the document as it is
// now (its status moves as the worker runs).
func (l *library) reprocessDoc(w http.ResponseWriter, r *http.Request) {
	tenant, ok := l.scope(w, r)
	if !ok {
		return
	}
	if l.ing == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "re-processing is not enabled here"))
		return
	}
	doc, err := l.ing.Reprocess(r.Context(), tenant, r.PathValue("id"))
	if rag.Is(err, rag.KindInvalid) && doc.ID == "" {
		err = rag.E("httpapi", rag.KindNotFound, nil) // a malformed id names no document
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusAccepted, viewDoc(doc))
}
