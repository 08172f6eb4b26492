package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/docmind/docmind/shared/access"
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

// Ingester accepts uploads and deletes documents and knowledge bases.
type Ingester interface {
	// Upload stores the file read from body in the knowledge base kbID, the id the uploader's role was
	// checked on, and queues its ingestion; NotFound when that knowledge base is gone (never another of
	// the same name). body is the request's file part, read as it arrives: an error from it (too large,
	// the client gone) ends the upload with nothing kept and is returned wrapped. admit is called once the
	// body is read and before the document exists (the role read afresh); its error is returned as is.
	Upload(ctx context.Context, tenant, kbID, fileName string, body io.Reader, admit func(context.Context) error) (rag.Document, error)
	Delete(ctx context.Context, tenant, docID string) error
	// DeleteKB removes the knowledge base from every store (rows, vectors, keyword index, sources).
	DeleteKB(ctx context.Context, tenant, kbID string) error
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
	maxBytes int64
	h        *handler
}

func (l *library) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/kbs", l.listKBs)
	if l.h.d.Chat != nil {
		mux.HandleFunc("POST /api/chat", l.chat)
		mux.HandleFunc("POST /api/ask", l.ask)
		if l.h.d.Search != nil {
			mux.HandleFunc("POST /api/search", l.search)
		}
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
	mux.HandleFunc("DELETE /api/kbs/{kb}", l.deleteKB)
	mux.HandleFunc("GET /api/kbs/{kb}/documents", l.listDocs)
	mux.HandleFunc("GET /api/kbs/{kb}/metadata", l.kbMetadata)
	mux.HandleFunc("POST /api/kbs/{kb}/documents", l.upload)
	mux.HandleFunc("POST /api/kbs/{kb}/uploads", l.presignUpload)
	mux.HandleFunc("GET /api/documents/{id}", l.getDoc)
	mux.HandleFunc("GET /api/documents/{id}/chunks", l.chunks)
	mux.HandleFunc("DELETE /api/documents/{id}", l.deleteDoc)
	mux.HandleFunc("POST /api/documents/{id}/reprocess", l.reprocessDoc)
	mux.HandleFunc("PATCH /api/documents/{id}/metadata", l.patchDocMetadata)
	if l.h.d.Connectors != nil {
		l.connectorRoutes(mux)
	}
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
		kb, err := l.lib.GetKB(ctx, tenant, key)
		if err == nil && kb.Retired() { // its delete is recorded: gone for every caller
			err = rag.Errorf("httpapi", rag.KindNotFound, "no knowledge base %q", key)
		}
		if err == nil || !rag.Is(err, rag.KindNotFound) {
			return kb, err
		}
	}
	kb, err := l.lib.GetKBByName(ctx, tenant, key)
	if rag.Is(err, rag.KindInvalid) {
		err = rag.Errorf("httpapi", rag.KindNotFound, "no knowledge base %q", key)
	}
	return kb, err
}

// maxJSONBody bounds a JSON request body: a question, a search or a form is a few KB.
const maxJSONBody = 64 << 10

// decodeBody decodes a JSON body of at most 64 KiB with no unknown fields; shape names the expected form
// in the error. A larger body is TooLarge (413), never a confusing parse error: a declared length over the
// limit is refused before a byte is read, and a body without one (chunked) is read up to the limit before
// it is parsed, so that 10 MB of something that is not JSON is "too large", not "invalid character".
func decodeBody(w http.ResponseWriter, r *http.Request, v any, shape string) error {
	if r.ContentLength > maxJSONBody {
		return errTooLarge{limit: maxJSONBody}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errTooLarge{limit: mbe.Limit}
		}
		return rag.Errorf("httpapi", rag.KindInvalid, "body could not be read: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return rag.Errorf("httpapi", rag.KindInvalid, "body must be %s: %s", shape, jsonProblem(err))
	}
	return nil
}

// kbScope returns the caller's tenant and the {kb} of the path the caller may read, or writes the error
// and returns false.
func (l *library) kbScope(w http.ResponseWriter, r *http.Request) (string, rag.KnowledgeBase, bool) {
	p, kb, ok := l.kbAccess(w, r, rag.KBReader)
	return p.Tenant, kb, ok
}

// kbAccess resolves the path's {kb} within the caller's tenant and requires the role on it: a knowledge
// base the caller may not read is NotFound.
func (l *library) kbAccess(w http.ResponseWriter, r *http.Request, need rag.KBRole) (rag.Principal, rag.KnowledgeBase, bool) {
	p, ok := l.h.principal(w, r)
	if !ok {
		return p, rag.KnowledgeBase{}, false
	}
	kb, err := l.kb(r, p.Tenant)
	if err == nil {
		err = l.require(r.Context(), p, kb, need)
	}
	if err != nil {
		l.fail(w, r, err)
		return p, rag.KnowledgeBase{}, false
	}
	return p, kb, true
}

// require checks the principal's role on a knowledge base of its tenant.
func (l *library) require(ctx context.Context, p rag.Principal, kb rag.KnowledgeBase, need rag.KBRole) error {
	roles, err := l.h.roles(ctx, p)
	if err != nil {
		return err
	}
	return requireKB(roles, kb, need)
}

// recheck requires the role again with the principal's roles read afresh, not the request's memo.
func (l *library) recheck(ctx context.Context, p rag.Principal, kb rag.KnowledgeBase, need rag.KBRole) error {
	roles, err := l.h.roles(context.WithValue(ctx, rolesKey{}, (*rolesMemo)(nil)), p)
	if err != nil {
		return err
	}
	return requireKB(roles, kb, need)
}

// docAccess loads the path's {id} document of the caller's tenant and requires the role on its knowledge
// base: a document the caller may not read is NotFound, like a missing one.
func (l *library) docAccess(w http.ResponseWriter, r *http.Request, need rag.KBRole) (rag.Principal, rag.Document, bool) {
	return l.docAccessOf(w, r, need, false)
}

// docAccessOf is docAccess; a document marked deleted, or of a knowledge base whose delete is recorded,
// is NotFound unless tombstones is set (a repeated DELETE finishes an interrupted one).
func (l *library) docAccessOf(w http.ResponseWriter, r *http.Request, need rag.KBRole, tombstones bool) (rag.Principal, rag.Document, bool) {
	p, ok := l.h.principal(w, r)
	if !ok {
		return p, rag.Document{}, false
	}
	d, err := l.docOf(r.Context(), p, r.PathValue("id"), need, tombstones)
	if err != nil {
		l.fail(w, r, err)
		return p, rag.Document{}, false
	}
	return p, d, true
}

// doc loads a document of the caller's tenant and requires the role on its knowledge base: NotFound for a
// document the caller may not read, like a missing one, or one marked deleted; Permission for one it may
// read without the role.
func (l *library) doc(ctx context.Context, p rag.Principal, id string, need rag.KBRole) (rag.Document, error) {
	return l.docOf(ctx, p, id, need, false)
}

// docOf is doc; with tombstones a document marked deleted, or of a knowledge base whose delete is
// recorded, is returned too (a repeated DELETE finishes an interrupted one).
func (l *library) docOf(ctx context.Context, p rag.Principal, id string, need rag.KBRole, tombstones bool) (rag.Document, error) {
	d, err := l.lib.GetDocument(ctx, p.Tenant, id)
	if err == nil && d.Status == rag.StatusDeleted && !tombstones {
		err = rag.E("httpapi", rag.KindNotFound, nil)
	}
	if err == nil {
		var kb rag.KnowledgeBase
		if kb, err = l.lib.GetKB(ctx, p.Tenant, d.KBID); err == nil && kb.Retired() && !tombstones {
			err = rag.E("httpapi", rag.KindNotFound, nil)
		}
		if err == nil {
			err = l.require(ctx, p, kb, need)
		}
		if err == nil {
			err = l.checkReadable(ctx, p, d) // its source's access list, for every role
		}
	}
	if err != nil && !rag.Is(err, rag.KindPermission) {
		err = notFoundAs(err, "no document %q", id)
	}
	if err != nil {
		return rag.Document{}, err
	}
	return d, nil
}

// errTooLarge is a request body over its limit: 413 with "too large" in the message.
type errTooLarge struct{ limit int64 }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("the request body is too large (the limit is %d bytes)", e.limit)
}

// kbView is a knowledge base as a caller sees it: with the caller's role on it.
type kbView struct {
	rag.KnowledgeBase
	Role string `json:"role"`
	// Desc and Documents are always present in GET /api/kbs (kbsummary.go): the page lists both.
	Desc      string `json:"description"`
	Documents int    `json:"documents"`
}

// listKBs lists the knowledge bases the caller may read.
func (l *library) listKBs(w http.ResponseWriter, r *http.Request) {
	p, ok := l.h.principal(w, r)
	if !ok {
		return
	}
	kbs, err := l.lib.ListKBs(r.Context(), p.Tenant)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	roles, err := l.h.roles(r.Context(), p)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	out := kbList{KnowledgeBases: []kbView{}, Ingest: l.ing != nil, Upload: l.uploadMode(), Connectors: l.h.d.Connectors != nil}
	for _, kb := range roles.Readable(kbs) {
		out.KnowledgeBases = append(out.KnowledgeBases, kbView{KnowledgeBase: kb, Role: roles.Of(kb.ID).String()})
	}
	if err := l.countDocuments(r.Context(), p.Tenant, out.KnowledgeBases); err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, out)
}

// kbList is GET /api/kbs. Ingest says whether this server takes uploads, deletes and reprocessing: the
// AWS query function serves the page without an ingester (those go to the management API), and the
// page hides its controls for them instead of offering what answers "not enabled here".
type kbList struct {
	KnowledgeBases []kbView `json:"knowledge_bases"`
	Ingest         bool     `json:"ingest"`
	// Upload says how the page sends a file: "direct" to POST /api/kbs/{kb}/documents, or "presigned"
	// through POST /api/kbs/{kb}/uploads (AWS, where a direct upload is cut at 6 MB), and the largest.
	Upload uploadMode `json:"upload"`
	// Connectors says whether editors manage connectors here (GET /api/kbs/{kb}/connectors).
	Connectors bool `json:"connectors"`
}

// createKB creates a knowledge base owned by the caller.
func (l *library) createKB(w http.ResponseWriter, r *http.Request) {
	p, ok := l.h.principal(w, r)
	if !ok {
		return
	}
	tenant := p.Tenant
	var in struct {
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	if err := decodeBody(w, r, &in, `{"name": ..., "description": ...}`); err != nil {
		l.fail(w, r, err)
		return
	}
	kb := rag.KnowledgeBase{Tenant: tenant, Name: in.Name, Description: kbDescription(in.Description)}
	if err := l.create(r.Context(), p, &kb); err != nil {
		if rag.Is(err, rag.KindConflict) {
			err = rag.Errorf("httpapi", rag.KindConflict, "a knowledge base named %q exists", in.Name)
		}
		l.fail(w, r, err)
		return
	}
	l.h.audit(r.Context(), p, "kb.create", kb.ID, kb.Name)
	WriteJSON(w, http.StatusCreated, kbView{KnowledgeBase: kb, Role: rag.KBOwner.String(), Desc: kb.Description})
}

// ownedCreator creates a member's knowledge base with its owner and creator in one transaction (sqldb.DB).
type ownedCreator interface {
	CreateKBOwnedBy(ctx context.Context, kb *rag.KnowledgeBase, owner string) error
}

// create makes kb. A member's is written with the member as its owner and recorded creator, in one
// transaction (sqldb.CreateKBOwnedBy): operator channels refuse a knowledge base a member created
// (ingest.OperatorKB), and a member's new knowledge base without its owner for a moment looked like an
// operator's and could take what an operator ingested under its name. A tenant admin's, a JWT group
// admin's included (the token makes them admin; their SQL row may say member), records neither: an admin
// owns every knowledge base already, and an owner row whose SQL role is member made the S3 inbox refuse
// the admin's knowledge base (security review). An admin who later loses the role keeps no access to it
// unless granted. The local single user (auth mode none) has no user row either.
func (l *library) create(ctx context.Context, p rag.Principal, kb *rag.KnowledgeBase) error {
	if p.Method == "none" || p.IsAdmin() {
		return l.lib.CreateKB(ctx, kb)
	}
	if c, ok := l.h.d.Admin.(ownedCreator); ok {
		return c.CreateKBOwnedBy(ctx, kb, p.UserID)
	}
	// no identity store (Deps.Admin): no members to write the owner to
	return l.lib.CreateKB(ctx, kb)
}

// deleteKB removes a knowledge base from every store (owners): 204.
func (l *library) deleteKB(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := l.kbAccess(w, r, rag.KBOwner)
	if !ok {
		return
	}
	if l.ing == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "deletes are not enabled here"))
		return
	}
	if err := l.ing.DeleteKB(r.Context(), p.Tenant, kb.ID); err != nil {
		l.fail(w, r, err)
		return
	}
	l.h.audit(r.Context(), p, "kb.delete", kb.ID, kb.Name)
	w.WriteHeader(http.StatusNoContent)
}

func (l *library) getKB(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := l.kbAccess(w, r, rag.KBReader)
	if !ok {
		return
	}
	docs, err := l.lib.ListDocuments(r.Context(), p.Tenant, kb.ID, "")
	if err == nil {
		docs, err = l.readableDocs(r.Context(), p, kb.ID, docs) // the counts are of what the caller may read
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	docs = withoutDeleted(docs)
	counts := map[string]int{}
	chunks := 0
	for _, d := range docs {
		counts[d.Status]++
		chunks += d.ChunkCount
	}
	WriteJSON(w, http.StatusOK, map[string]any{"knowledge_base": kb, "documents": len(docs), "by_status": counts, "chunks": chunks})
}

func (l *library) listDocs(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := l.kbAccess(w, r, rag.KBReader)
	if !ok {
		return
	}
	docs, err := l.lib.ListDocuments(r.Context(), p.Tenant, kb.ID, r.URL.Query().Get("status"))
	if err == nil {
		docs, err = l.readableDocs(r.Context(), p, kb.ID, docs)
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	docs = withoutDeleted(docs)
	out := make([]docView, len(docs))
	for i, d := range docs {
		out[i] = viewDoc(d)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"documents": out})
}

func (l *library) upload(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := l.kbAccess(w, r, rag.KBEditor)
	if !ok {
		return
	}
	tenant := p.Tenant
	if l.ing == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "uploads are not enabled here"))
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
		// the file goes to storage as it arrives, never whole into memory (issue #24): an empty file is
		// refused before anything is stored, a larger one than the limit when its limit+1st byte arrives
		body := bufio.NewReaderSize(part, 512)
		if _, err := body.Peek(1); err == io.EOF { // refused here, not failed later with a parser's message about an empty text
			part.Close()
			l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "the file %q is empty (0 bytes): there is nothing in it to add", part.FileName()))
			return
		}
		// the role again, read afresh once the file is in: sending a large file takes minutes, and a role
		// revoked meanwhile must not let it in. By id: the knowledge base may have been deleted, and another
		// created under its name, while the file was read; the one the role was checked on is the only one
		// it may go to.
		admit := func(ctx context.Context) error { return l.recheck(ctx, p, kb, rag.KBEditor) }
		doc, err := l.ing.Upload(r.Context(), tenant, kb.ID, part.FileName(), &limitedBody{r: body, left: l.maxBytes, limit: l.maxBytes}, admit)
		part.Close()
		var mbe *http.MaxBytesError
		var big errFileTooLarge
		if errors.As(err, &mbe) || errors.As(err, &big) {
			l.tooLarge(w)
			return
		}
		var cut errBodyRead
		if errors.As(err, &cut) || (err != nil && r.Context().Err() != nil) { // the client is gone or the body cut
			l.fail(w, r, rag.Errorf("httpapi", rag.KindInvalid, "the upload ended before the file did: nothing was stored; send it again"))
			return
		}
		if err != nil {
			l.fail(w, r, err)
			return
		}
		l.h.audit(r.Context(), p, "document.upload", doc.ID, kb.ID)
		WriteJSON(w, http.StatusAccepted, viewDoc(doc))
		return
	}
}

// errFileTooLarge is limitedBody's error once the file passes the upload limit.
type errFileTooLarge struct{ limit int64 }

func (e errFileTooLarge) Error() string {
	return fmt.Sprintf("the file is larger than the upload limit (%d bytes)", e.limit)
}

// errBodyRead is a failed read of the file part: the client went away, or the multipart body is cut.
type errBodyRead struct{ err error }

func (e errBodyRead) Error() string { return "reading the upload: " + e.err.Error() }
func (e errBodyRead) Unwrap() error { return e.err }

// limitedBody reads an uploaded file and fails with errFileTooLarge on its limit+1st byte, so that the
// store it is streamed into discards it (io.LimitReader would end it quietly, truncated). Read errors
// other than the end come back as errBodyRead, told apart from the store's own failures.
type limitedBody struct {
	r     io.Reader
	left  int64 // bytes still allowed
	limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	if int64(n) > b.left {
		return 0, errFileTooLarge{limit: b.limit}
	}
	b.left -= int64(n)
	var mbe *http.MaxBytesError
	if err != nil && err != io.EOF && !errors.As(err, &mbe) {
		err = errBodyRead{err}
	}
	return n, err
}

func (l *library) tooLarge(w http.ResponseWriter) {
	WriteJSON(w, http.StatusRequestEntityTooLarge, map[string]map[string]string{"error": {"code": "TooLarge", "message": "the file is larger than the upload limit"}})
}

func (l *library) getDoc(w http.ResponseWriter, r *http.Request) {
	p, d, ok := l.docAccess(w, r, rag.KBReader)
	if !ok {
		return
	}
	WriteJSON(w, http.StatusOK, struct {
		docView
		Metadata rag.Metadata `json:"metadata"`
		// Access is who may read it at its source (a connector's document; absent for an upload)
		Access *access.Info `json:"access,omitempty"`
	}{viewDoc(d), l.docMetadata(r.Context(), p.Tenant, d.ID), l.accessInfo(r.Context(), p.Tenant, d)})
}

func (l *library) chunks(w http.ResponseWriter, r *http.Request) {
	p, d, ok := l.docAccess(w, r, rag.KBReader)
	if !ok {
		return
	}
	cs, err := l.lib.ListChunks(r.Context(), p.Tenant, d.ID)
	if err != nil {
		l.fail(w, r, err)
		return
	}
	WriteJSON(w, http.StatusOK, map[string]any{"chunks": cs})
}

// withoutDeleted drops the documents marked deleted: from the mark on, a delete is final for callers.
func withoutDeleted(docs []rag.Document) []rag.Document {
	out := docs[:0:0]
	for _, d := range docs {
		if d.Status != rag.StatusDeleted {
			out = append(out, d)
		}
	}
	return out
}

func (l *library) deleteDoc(w http.ResponseWriter, r *http.Request) {
	p, d, ok := l.docAccessOf(w, r, rag.KBEditor, true)
	if !ok {
		return
	}
	if l.ing == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "deletes are not enabled here"))
		return
	}
	if err := l.ing.Delete(r.Context(), p.Tenant, d.ID); err != nil {
		l.fail(w, r, notFoundAs(err, "no document %q", d.ID))
		return
	}
	l.h.audit(r.Context(), p, "document.delete", d.ID, d.FileName)
	w.WriteHeader(http.StatusNoContent)
}

// reprocessDoc queues a document's stored source for ingestion again: 202 with the document as it is
// now (its status moves as the worker runs).
func (l *library) reprocessDoc(w http.ResponseWriter, r *http.Request) {
	p, d, ok := l.docAccess(w, r, rag.KBEditor)
	if !ok {
		return
	}
	if l.ing == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "re-processing is not enabled here"))
		return
	}
	doc, err := l.ing.Reprocess(r.Context(), p.Tenant, d.ID)
	if rag.Is(err, rag.KindInvalid) && doc.ID == "" {
		err = rag.E("httpapi", rag.KindNotFound, nil) // a malformed id names no document
	}
	if err != nil {
		l.fail(w, r, err)
		return
	}
	l.h.audit(r.Context(), p, "document.reprocess", doc.ID, doc.FileName)
	WriteJSON(w, http.StatusAccepted, viewDoc(doc))
}
