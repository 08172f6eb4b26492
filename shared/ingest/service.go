package ingest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// Service ingests and deletes whole documents: it finds or creates the knowledge base and the document
// row, stores the source under a generated key, skips unchanged content, and runs the stages.
type Service struct {
	Runner *Runner
	// Inbox is the local drop folder (<data>/inbox), renamed aside when its knowledge base is deleted;
	// "" when there is none.
	Inbox string
	// InboxTenant is the tenant the drop folders feed (the local folder and inbox/ in the blob store: the
	// watcher's and the S3 trigger's tenant). Deleting another tenant's knowledge base of the same name
	// leaves them alone. "" when every knowledge base's folder is its own (one tenant).
	InboxTenant string
	// Leases, when set, backs the in-process lock of a source with its SQL lease (LeaseName), the one the
	// state machine's executions, the S3 trigger and the consistency check take: on AWS an API delete, a
	// knowledge-base delete or a stuck document's retry runs on another instance than the execution
	// ingesting the same source, and the mutex alone cannot keep them apart. nil: the mutex only (one
	// process: `docmind serve`, the CLI).
	Leases Leases
	// LeaseTTL is the hold when the context has no deadline (default 15 min); with one (a Lambda
	// invocation) the hold lasts until the deadline plus a minute, so a killed instance blocks the source
	// briefly.
	LeaseTTL time.Duration
	// Now is the clock of the retired drop-folder names (nil: time.Now); tests fix it to make two
	// deletes meet in the same second.
	Now func() time.Time

	mu    sync.Mutex
	locks map[string]*keyLock // one ingestion at a time per (kb, source)
}

// Source is one file to ingest.
type Source struct {
	// KBID is the knowledge base when the caller resolved it (an upload, a re-processing): NotFound if it is
	// gone, never another of the same name. Setting it skips the operator rule (OperatorKB): only trusted
	// callers set it, having checked the caller's role on that id (an upload) or applied the rule
	// themselves (CheckOperator: the CLI, the restore). Empty: KBName, resolved as an operator channel
	// (OperatorKB: created on first use, refused when a member created or owns it).
	KBID   string
	KBName string
	URI    string // stable identity of the source (an inbox path, a file path, an upload id)
	Name   string // the user's file name: metadata only, never a storage key
	Data   []byte
	ETag   string
	// Force runs the stages even when the content is unchanged and ready (re-processing).
	Force bool
	// Sidecar is the file's <file>.metadata.json metadata (ReadSidecar), the top layer of its metadata;
	// part of the content hash, so that a changed sidecar re-ingests an unchanged file.
	Sidecar rag.Metadata
	// Object is the S3 object's user metadata and tags (the AWS drop folder), the layer under the
	// sidecar; part of the content hash too.
	Object rag.Metadata
}

// contentHash is the hash that decides whether a source changed: its bytes, and its sidecar.
func (src Source) contentHash() string {
	h := sha256.New()
	h.Write(src.Data)
	for i, m := range []rag.Metadata{src.Sidecar, src.Object} {
		if len(m) > 0 {
			b, _ := json.Marshal(m) // map keys sorted: the same metadata hashes the same
			h.Write([]byte{0, byte(i)})
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Report is one document's result.
type Report struct {
	File       string `json:"file"`
	DocumentID string `json:"document_id,omitempty"`
	Status     string `json:"status"`
	Skipped    bool   `json:"skipped,omitempty"` // unchanged since the last ingest
	Outcome
	Error string `json:"error,omitempty"`
}

// keyLock is one source's lock, counted so the map holds only keys in use: a million ingested
// documents must not leave a million mutexes behind.
type keyLock struct {
	mu   sync.Mutex
	refs int
}

func (s *Service) acquire(key string) *keyLock {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locks == nil {
		s.locks = map[string]*keyLock{}
	}
	l := s.locks[key]
	if l == nil {
		l = &keyLock{}
		s.locks[key] = l
	}
	l.refs++
	return l
}

func (s *Service) drop(key string, l *keyLock) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(s.locks, key)
	}
}

// lock waits for key's lock and returns its release.
func (s *Service) lock(key string) func() {
	l := s.acquire(key)
	l.mu.Lock()
	return func() { l.mu.Unlock(); s.drop(key, l) }
}

// tryLock takes key's lock if it is free. With Leases it never does: the caller falls back to
// Ingest, which takes the SQL lease as well.
func (s *Service) tryLock(key string) (func(), bool) {
	if s.Leases != nil {
		return nil, false
	}
	unlock := s.tryKey(key)
	return unlock, unlock != nil
}

// tryKey takes key's lock if it is free and returns its release; nil when another holds it.
func (s *Service) tryKey(key string) func() {
	l := s.acquire(key)
	if !l.mu.TryLock() {
		s.drop(key, l)
		return nil
	}
	return func() { l.mu.Unlock(); s.drop(key, l) }
}

type heldLeaseKey struct{ name string }

// HoldingLease marks ctx as running under the named source lease (LeaseName), taken by the caller: the
// Service's calls made with it do not try to take it again (they would meet the caller's own hold).
func HoldingLease(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, heldLeaseKey{name}, true)
}

// lockSource serialises work on one source: the in-process lock, then (Leases set, and the caller not
// holding it already) the source's SQL lease. Conflict when another holder has the lease: an execution
// ingesting the source, or another instance deleting it; the caller retries later (a repeated DELETE,
// the next consistency run, SQS's redelivery).
func (s *Service) lockSource(ctx context.Context, tenant, kbID, uri string) (func(), error) {
	h, err := s.takeSource(ctx, tenant, kbID, uri, true)
	if err != nil {
		return nil, err
	}
	return h.release, nil
}

// sourceHold is one source's lock as takeSource took it.
type sourceHold struct {
	release func()
	// renew extends the SQL lease by another leaseTTL (a no-op without one): a long knowledge-base
	// delete takes every lease up front and renews each just before it purges that source.
	renew func(ctx context.Context) error
}

// takeSource is lockSource; wait false takes the in-process lock only if it is free (Conflict
// otherwise). A caller that already holds other sources' locks must not wait for one more: two such
// callers (two deletes of one knowledge base, each meeting a document the other locked) would wait for
// each other for ever.
func (s *Service) takeSource(ctx context.Context, tenant, kbID, uri string, wait bool) (sourceHold, error) {
	key := kbID + "\x00" + uri
	var unlock func()
	if wait {
		unlock = s.lock(key)
	} else if unlock = s.tryKey(key); unlock == nil {
		return sourceHold{}, rag.Errorf("ingest.Service", rag.KindConflict, "%s is being ingested or deleted in this process; retry later", uri)
	}
	name := LeaseName(tenant, kbID, uri)
	if s.Leases == nil || ctx.Value(heldLeaseKey{name}) != nil {
		return sourceHold{release: unlock, renew: func(context.Context) error { return nil }}, nil
	}
	holder := newHolder("svc")
	ok, err := s.Leases.AcquireLease(ctx, name, holder, s.leaseTTL(ctx))
	if err != nil {
		unlock()
		return sourceHold{}, err
	}
	if !ok {
		unlock()
		return sourceHold{}, rag.Errorf("ingest.Service", rag.KindConflict, "%s is being ingested or deleted elsewhere (its lease is held); retry later", uri)
	}
	return sourceHold{
		release: func() {
			s.Leases.ReleaseLease(context.WithoutCancel(ctx), name, holder)
			unlock()
		},
		renew: func(ctx context.Context) error {
			ok, err := s.Leases.AcquireLease(ctx, name, holder, s.leaseTTL(ctx))
			if err == nil && !ok {
				err = rag.Errorf("ingest.Service", rag.KindConflict, "the lease of %s expired and another holder took it; retry later", uri)
			}
			return err
		},
	}, nil
}

func (s *Service) leaseTTL(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), 0) + time.Minute
	}
	if s.LeaseTTL > 0 {
		return s.LeaseTTL
	}
	return 15 * time.Minute
}

// newHolder is a lease holder name unique to one call.
func newHolder(prefix string) string {
	var b [8]byte
	rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// KB returns the tenant's knowledge base by name, creating it when create is set.
func (s *Service) KB(ctx context.Context, tenant, name string, create bool) (rag.KnowledgeBase, error) {
	rec := s.Runner.Stages.Records
	kb, err := rec.GetKBByName(ctx, tenant, name)
	if err == nil || !rag.Is(err, rag.KindNotFound) || !create {
		return kb, err
	}
	kb = rag.KnowledgeBase{Tenant: tenant, Name: name}
	if err := rec.CreateKB(ctx, &kb); err != nil {
		if rag.Is(err, rag.KindConflict) { // created meanwhile
			return rec.GetKBByName(ctx, tenant, name)
		}
		return kb, err
	}
	return kb, nil
}

func checkSupported(name string) error {
	if !extract.Supported(name) {
		return extract.Terminal("unsupported file type %q (supported: %s)", path.Ext(name), strings.Join(extract.Formats, " "))
	}
	return nil
}

func fileType(name string) string {
	return strings.TrimPrefix(strings.ToLower(path.Ext(name)), ".")
}

// Ingest stores and indexes one source. The error is also recorded on the document; Report carries
// both. Re-ingesting unchanged content does nothing (Skipped, Embedded 0).
func (s *Service) Ingest(ctx context.Context, tenant string, src Source) (Report, error) {
	rep := Report{File: src.Name, Status: rag.StatusFailed, Outcome: Outcome{StageMS: map[string]int64{}}}
	fail := func(err error) (Report, error) {
		rep.Error = err.Error()
		return rep, err
	}
	if err := checkSupported(src.Name); err != nil {
		return fail(err)
	}
	st := s.Runner.Stages
	kb, err := s.sourceKB(ctx, tenant, src)
	if err != nil {
		return fail(err)
	}
	unlock, err := s.lockSource(ctx, tenant, kb.ID, src.URI)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	hash := src.contentHash()

	doc, err := st.Records.GetDocumentBySource(ctx, tenant, kb.ID, src.URI)
	if err == nil && doc.Status == rag.StatusDeleted { // an interrupted delete: finish it, then ingest anew
		if err := s.purge(ctx, doc); err != nil {
			return fail(err)
		}
		doc, err = rag.Document{}, rag.E("ingest.Ingest", rag.KindNotFound, nil)
	}
	switch {
	case err == nil:
		rep.DocumentID = doc.ID
		if !src.Force && doc.ContentHash == hash && doc.Status == rag.StatusReady && doc.Error == "" {
			rep.Status, rep.Skipped, rep.Chunks, rep.Reused = doc.Status, true, doc.ChunkCount, doc.ChunkCount
			if rows, err := st.Records.ListChunks(ctx, tenant, doc.ID); err == nil {
				for _, c := range rows {
					if c.Level == rag.LevelParent {
						rep.Parents++
					}
				}
			}
			return rep, nil
		}
	case rag.Is(err, rag.KindNotFound):
		doc = rag.Document{Tenant: tenant, KBID: kb.ID, SourceURI: src.URI, FileName: truncateRunes(src.Name, 255), FileType: fileType(src.Name),
			SourceETag: src.ETag, Status: rag.StatusProcessing}
		if err := st.Records.CreateDocument(ctx, &doc); err != nil {
			if !rag.Is(err, rag.KindConflict) {
				return fail(err)
			}
			if doc, err = st.Records.GetDocumentBySource(ctx, tenant, kb.ID, src.URI); err != nil {
				return fail(err)
			}
		}
		rep.DocumentID = doc.ID
	default:
		return fail(err)
	}

	key := sourceKey(tenant, kb.ID, doc.ID, src.Name)
	if _, err := st.Blobs.Put(ctx, key, bytes.NewReader(src.Data), ""); err != nil {
		return fail(fmt.Errorf("store source: %w", err))
	}
	if doc.Status != rag.StatusReady {
		doc.Status = rag.StatusProcessing
	}
	doc.FileName, doc.FileType, doc.SourceETag = truncateRunes(src.Name, 255), fileType(src.Name), truncateRunes(src.ETag, 255)
	if err := st.Records.UpdateDocument(ctx, &doc); err != nil {
		return fail(err)
	}

	out, runErr := s.Runner.Run(ctx, ExtractIn{Doc: Doc{Tenant: tenant, KBID: kb.ID, DocumentID: doc.ID}, SourceKey: key, FileName: src.Name, Sidecar: src.Sidecar})
	rep.Outcome = out
	// record hash and timings on the row the stages left
	if cur, err := st.Records.GetDocument(ctx, tenant, doc.ID); err == nil {
		if runErr == nil {
			cur.ContentHash = hash
		}
		if b, err := json.Marshal(out.StageMS); err == nil {
			cur.StageMillis = string(b)
		}
		st.Records.UpdateDocument(ctx, &cur)
		rep.Status = cur.Status
	}
	if runErr != nil {
		return fail(runErr)
	}
	return rep, nil
}

// MaxReprocessBytes bounds a stored source read back for re-processing.
const MaxReprocessBytes = 512 << 20

// Stored returns a document's stored source, ready to ingest again (Force set): the way to re-process
// a failed document, or a ready one after a parser or chunking change. NotFound when the document is
// not the tenant's or its stored source is gone.
func (s *Service) Stored(ctx context.Context, tenant, docID string) (rag.Document, Source, error) {
	const op = "ingest.Stored"
	st := s.Runner.Stages
	doc, err := st.Records.GetDocument(ctx, tenant, docID)
	if err != nil {
		return doc, Source{}, err
	}
	if doc.Status == rag.StatusDeleted { // being deleted: re-processing would bring it back
		return doc, Source{}, rag.Errorf(op, rag.KindNotFound, "%s is being deleted", doc.FileName)
	}
	kb, err := st.Records.GetKB(ctx, tenant, doc.KBID)
	if err != nil {
		return doc, Source{}, err
	}
	r, info, err := st.Blobs.Get(ctx, sourceKey(tenant, doc.KBID, doc.ID, doc.FileName))
	if err != nil {
		if rag.Is(err, rag.KindNotFound) {
			return doc, Source{}, rag.Errorf(op, rag.KindNotFound, "the stored source of %s is gone; upload it again", doc.FileName)
		}
		return doc, Source{}, err
	}
	defer r.Close()
	if info.Size > MaxReprocessBytes {
		return doc, Source{}, rag.Errorf(op, rag.KindInvalid, "the stored source is larger than %d bytes", MaxReprocessBytes)
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxReprocessBytes+1))
	if err != nil {
		return doc, Source{}, rag.E(op, rag.KindUnavailable, err)
	}
	return doc, Source{KBID: kb.ID, KBName: kb.Name, URI: doc.SourceURI, Name: doc.FileName, Data: data, ETag: doc.SourceETag, Force: true}, nil
}

// sourceKey is the generated storage key of a source: the user's file name never becomes a path; only
// its extension is kept so the parser can be chosen.
func sourceKey(tenant, kbID, docID, name string) string {
	ext := strings.ToLower(path.Ext(name))
	if !extract.Supported("x" + ext) {
		ext = ""
	}
	return "sources/" + tenant + "/" + kbID + "/" + docID + "/source" + ext
}

// DeleteBySource deletes the document of a source, if there is one.
func (s *Service) DeleteBySource(ctx context.Context, tenant, kbName, uri string) (bool, error) {
	kb, err := s.KB(ctx, tenant, kbName, false)
	if rag.Is(err, rag.KindNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	doc, err := s.Runner.Stages.Records.GetDocumentBySource(ctx, tenant, kb.ID, uri)
	if rag.Is(err, rag.KindNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := s.Delete(ctx, tenant, doc.ID); err != nil {
		return false, err
	}
	return true, nil
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
