package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// Deletion is two-phase so that anyone can finish it. The document is first marked deleted (status
// "deleted": retrieval serves only ready documents, so it disappears at once); then its vectors, keyword
// rows, source and staging blobs go, and the SQL row (with its chunks) goes last. A crash anywhere leaves
// the tombstone, which a repeated DELETE, an ingest of the same source, or `docmind reconcile --repair`
// finishes. (Before this, a kill during a large delete left the document ready, with every chunk row
// and no vectors, still found by keyword search, and nothing repaired it.)

// KBRemover deletes a knowledge base's SQL rows and records the delete while it runs, so that an
// interrupted one can be found and finished (sqldb.DB implements it).
type KBRemover interface {
	MarkKBDeleting(ctx context.Context, kb rag.KnowledgeBase) error
	ListKBDeletions(ctx context.Context, tenant string) ([]rag.KnowledgeBase, error)
	DeleteKB(ctx context.Context, tenant, id string) error
	UnmarkKBDeleting(ctx context.Context, tenant, kbID string) error
}

// DeletedInboxPrefix starts the name a deleted knowledge base's drop folder is renamed to:
// inbox/.deleted-<kb>-<UTC timestamp>/. The leading dot hides it from the watcher and the scan, so the
// knowledge base is not re-created from its own files.
const DeletedInboxPrefix = ".deleted-"

// Delete removes a document everywhere: a drop-folder document's file is moved aside first (see
// retireInboxFile), then the document is marked deleted, then vectors (verified gone with a strong
// count), keyword rows, source and staging blobs, and the SQL row go; the knowledge base version is
// bumped. Deleting a document whose delete was interrupted finishes it (its file was moved before the
// tombstone was written, so it is not moved again: a file uploaded since under the same path stays).
// NotFound when the document is not the tenant's.
func (s *Service) Delete(ctx context.Context, tenant, docID string) error {
	return s.delete(ctx, tenant, docID, true)
}

// DeleteRemoved is Delete for a document whose source object was removed (an S3 ObjectRemoved event):
// there is no drop-folder file to move aside, so none is looked for (the ingest function's role may not
// list inbox/ at all).
func (s *Service) DeleteRemoved(ctx context.Context, tenant, docID string) error {
	return s.delete(ctx, tenant, docID, false)
}

func (s *Service) delete(ctx context.Context, tenant, docID string, retire bool) error {
	doc, err := s.Runner.Stages.Records.GetDocument(ctx, tenant, docID)
	if err != nil {
		return err
	}
	unlock, err := s.lockSource(ctx, tenant, doc.KBID, doc.SourceURI)
	if err != nil {
		return err
	}
	defer unlock()
	if retire && doc.Status != rag.StatusDeleted {
		if err := s.retireInboxFile(ctx, doc); err != nil {
			return fmt.Errorf("move the drop-folder file of %s aside: %w", doc.ID, err)
		}
	}
	return s.purge(ctx, doc)
}

// retireInboxFile moves a drop-folder document's file (source uri inbox/<kb>/<path>), on disk and in the
// blob store, to inbox/.deleted-<kb>-<UTC timestamp>/<path>, as a knowledge-base delete does with the
// whole folder. Without it a deleted drop-folder document did not stay deleted: its file was still
// there, so the next scan, the serve ticker's reconcile (sources_without_document) and the scheduled
// AWS repair ingested it again. The move comes before the tombstone: a crash between the two leaves a
// ready document whose file is gone, which the watcher, the S3 removal event or reconcile
// (documents_without_source) deletes; and a tombstone always means the file was moved already, so
// whoever finishes it (a repeated delete, reconcile, a new upload of the same path) moves nothing. A
// file already gone (a removal being applied) is not an error. Other sources are left alone.
func (s *Service) retireInboxFile(ctx context.Context, doc rag.Document) error {
	kb, rel, ok := SplitInboxKey(doc.SourceURI)
	if !ok || (s.InboxTenant != "" && doc.Tenant != s.InboxTenant) {
		return nil
	}
	return s.moveInbox(ctx, kb, rel)
}

// markDeleted writes the tombstone. Caller holds the source's lock.
func (s *Service) markDeleted(ctx context.Context, doc *rag.Document) error {
	if doc.Status == rag.StatusDeleted {
		return nil
	}
	doc.Status = rag.StatusDeleted
	if err := s.Runner.Stages.Records.UpdateDocument(ctx, doc); err != nil {
		return fmt.Errorf("mark %s deleted: %w", doc.ID, err)
	}
	return nil
}

// purge marks the document deleted and removes all of it. Caller holds the source's lock.
func (s *Service) purge(ctx context.Context, doc rag.Document) error {
	st := s.Runner.Stages
	if err := s.markDeleted(ctx, &doc); err != nil {
		if rag.Is(err, rag.KindNotFound) {
			return nil // deleted meanwhile
		}
		return err
	}
	if err := st.Vectors.DeleteDocument(ctx, doc.Tenant, doc.KBID, doc.ID); err != nil {
		return fmt.Errorf("delete vectors: %w", err)
	}
	if err := st.Vectors.Flush(ctx); err != nil {
		return fmt.Errorf("flush vectors: %w", err)
	}
	n, err := st.Vectors.Count(ctx, rag.Filter{Tenant: doc.Tenant, KBIDs: []string{doc.KBID}, DocumentIDs: []string{doc.ID}})
	if err != nil {
		return fmt.Errorf("count vectors: %w", err)
	}
	if n != 0 {
		return rag.Errorf("ingest.Delete", rag.KindUnavailable, "%d vectors of the document are still visible after delete", n)
	}
	if st.Keyword != nil {
		st.Keyword.RemoveDocument(doc.Tenant, doc.ID)
	}
	if err := deletePrefix(ctx, st.Blobs, sourcePrefix(doc.Tenant, doc.KBID, doc.ID)); err != nil {
		return fmt.Errorf("delete source: %w", err)
	}
	if err := deletePrefix(ctx, st.staging(), StagingPrefix(doc.Tenant, doc.ID)); err != nil {
		return fmt.Errorf("delete staging: %w", err)
	}
	if err := st.Records.DeleteDocument(ctx, doc.Tenant, doc.ID); err != nil && !rag.Is(err, rag.KindNotFound) {
		return err
	}
	if _, err := st.Records.BumpKBVersion(ctx, doc.Tenant, doc.KBID); err != nil && !rag.Is(err, rag.KindNotFound) {
		return err
	}
	return nil
}

// SourcePrefix is the blob prefix of every stored source of a knowledge base ("" docID) or a document.
func SourcePrefix(tenant, kbID, docID string) string {
	if docID == "" {
		return "sources/" + tenant + "/" + kbID + "/"
	}
	return sourcePrefix(tenant, kbID, docID)
}

func sourcePrefix(tenant, kbID, docID string) string {
	return "sources/" + tenant + "/" + kbID + "/" + docID + "/"
}

// StagingPrefix is the blob prefix of a document's staging payloads (docID "" for the tenant's).
func StagingPrefix(tenant, docID string) string {
	if docID == "" {
		return "staging/" + tenant + "/"
	}
	return "staging/" + tenant + "/" + docID + "/"
}

func deletePrefix(ctx context.Context, b store.Blobs, prefix string) error {
	objs, err := b.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := b.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return nil
}

// DeleteKB removes a knowledge base from every store. Every document's source lease is taken first:
// Conflict, with nothing changed, while an ingestion or a delete holds one (before, the conflict came
// after the delete was recorded, the folder renamed and every document tombstoned, so the caller's 409
// described a delete that had mostly happened: review of #11). Then the delete is recorded (so an
// interrupted one is finished by repeating it or by `docmind reconcile --repair`), its drop folder is
// renamed (so no scan or event re-creates it meanwhile), every document is marked deleted (hidden at
// once) and purged, vectors no document owns any more and every blob under the knowledge base's source
// prefix go, and the SQL rows and the record go last. NotFound when the knowledge base is not the
// tenant's and no delete of it is unfinished.
func (s *Service) DeleteKB(ctx context.Context, tenant, kbID string) error {
	const op = "ingest.DeleteKB"
	rm, ok := s.Runner.Stages.Records.(KBRemover)
	if !ok {
		return rag.Errorf(op, rag.KindInternal, "the relational store cannot delete knowledge bases")
	}
	kb, err := s.Runner.Stages.Records.GetKB(ctx, tenant, kbID)
	resumed := kb.Retired()                       // the delete was recorded before, and its row renamed
	if resumed || rag.Is(err, rag.KindNotFound) { // or its rows went, but the delete did not finish
		pending, lerr := rm.ListKBDeletions(ctx, tenant)
		if lerr != nil {
			return lerr
		}
		i := slices.IndexFunc(pending, func(k rag.KnowledgeBase) bool { return k.ID == kbID })
		if i < 0 {
			if err == nil {
				err = rag.Errorf(op, rag.KindNotFound, "no knowledge base %s", kbID)
			}
			return err
		}
		kb, err, resumed = pending[i], nil, true // the record holds the name it had
	}
	if err != nil {
		return err
	}
	docs, err := s.Runner.Stages.Records.ListDocuments(ctx, kb.Tenant, kb.ID, "")
	if err != nil && !rag.Is(err, rag.KindNotFound) {
		return err
	}
	held, unlock, err := s.lockDocuments(ctx, docs)
	if err != nil {
		return err
	}
	defer unlock()
	if err := rm.MarkKBDeleting(ctx, kb); err != nil {
		return err
	}
	if err := s.retireInboxOf(ctx, kb, resumed); err != nil {
		return fmt.Errorf("retire the drop folder of %s: %w", kb.Name, err)
	}
	if err := s.purgeKB(ctx, kb, held); err != nil {
		return err
	}
	if err := rm.DeleteKB(ctx, tenant, kb.ID); err != nil && !rag.Is(err, rag.KindNotFound) {
		return err
	}
	return rm.UnmarkKBDeleting(ctx, tenant, kb.ID)
}

// lockDocuments takes the source lock of every document, in source order, without waiting for the
// in-process lock: a Conflict (409, nothing changed) when another call holds one, since two deletes of
// one knowledge base that each waited while holding locks could block each other for ever. It returns
// the renewal of each source held (by sourceLockKey) and the release of them all. On a Conflict (or any
// error) the locks taken so far are released.
func (s *Service) lockDocuments(ctx context.Context, docs []rag.Document) (map[string]func(context.Context) error, func(), error) {
	sorted := slices.Clone(docs)
	slices.SortFunc(sorted, func(a, b rag.Document) int { return strings.Compare(a.SourceURI, b.SourceURI) })
	held := map[string]func(context.Context) error{} // documents of one source share its lock
	var unlocks []func()
	release := func() {
		for i := len(unlocks) - 1; i >= 0; i-- {
			unlocks[i]()
		}
	}
	for _, d := range sorted {
		if key := sourceLockKey(d); held[key] == nil {
			h, err := s.takeSource(ctx, d.Tenant, d.KBID, d.SourceURI, false)
			if err != nil {
				release()
				return nil, nil, fmt.Errorf("delete %s: %w", d.FileName, err)
			}
			unlocks, held[key] = append(unlocks, h.release), h.renew
		}
	}
	return held, release, nil
}

// sourceLockKey names a document's source lock (lockSource) within the process.
func sourceLockKey(d rag.Document) string { return d.KBID + "\x00" + d.SourceURI }

// purgeKB removes every document, vector and source of the knowledge base, SQL rows of the knowledge
// base itself excepted. held renews the lease of each source whose lock the caller holds
// (sourceLockKey): every lease was taken up front with one TTL, so each is renewed just before its
// source is purged, however long the sources before it took. A document created since is locked here
// without waiting (the caller holds other locks); a Conflict then leaves the recorded delete to a
// repeated delete or to reconcile.
func (s *Service) purgeKB(ctx context.Context, kb rag.KnowledgeBase, held map[string]func(context.Context) error) error {
	st := s.Runner.Stages
	docs, err := st.Records.ListDocuments(ctx, kb.Tenant, kb.ID, "")
	if err != nil && !rag.Is(err, rag.KindNotFound) {
		return err
	}
	for i := range docs { // every tombstone before any purge: nothing of the knowledge base serves meanwhile
		if err := s.markDeleted(ctx, &docs[i]); err != nil && !rag.Is(err, rag.KindNotFound) {
			return err
		}
	}
	for _, d := range docs {
		if renew := held[sourceLockKey(d)]; renew != nil {
			err := renew(ctx)
			if err == nil {
				err = s.purge(ctx, d)
			}
			if err != nil {
				return fmt.Errorf("delete %s: %w", d.FileName, err)
			}
			continue
		}
		h, err := s.takeSource(ctx, d.Tenant, d.KBID, d.SourceURI, false)
		if err == nil {
			err = s.purge(ctx, d)
			h.release()
		}
		if err != nil {
			return fmt.Errorf("delete %s: %w", d.FileName, err)
		}
	}
	if l, ok := st.Vectors.(store.VectorLister); ok { // orphans of older crashes
		refs, err := l.ListVectors(ctx, rag.Filter{Tenant: kb.Tenant, KBIDs: []string{kb.ID}})
		if err != nil {
			return fmt.Errorf("list vectors: %w", err)
		}
		if len(refs) > 0 {
			ids := make([]string, len(refs))
			for i, r := range refs {
				ids[i] = r.ID
			}
			if err := st.Vectors.Delete(ctx, kb.Tenant, ids); err != nil {
				return fmt.Errorf("delete %d orphan vectors: %w", len(ids), err)
			}
			if err := st.Vectors.Flush(ctx); err != nil {
				return err
			}
		}
	}
	if err := deletePrefix(ctx, st.Blobs, SourcePrefix(kb.Tenant, kb.ID, "")); err != nil {
		return fmt.Errorf("delete sources: %w", err)
	}
	return nil
}

// DeletedInboxName is the name a deleted knowledge base's drop folder gets (before the suffix that
// makes it unique, see retiredName).
func DeletedInboxName(kb string, at time.Time) string {
	return DeletedInboxPrefix + kb + "-" + at.UTC().Format("20060102T150405Z")
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// retireInbox renames the knowledge base's drop folder, on disk (Service.Inbox) and in the blob store
// (objects under inbox/<kb>/, the S3 drop folder), to the hidden deleted name. Files are kept: deleting
// a knowledge base must not destroy the user's originals. The folders feed InboxTenant only: another
// tenant's knowledge base of the same name has none to rename.
// retireInboxOf is retireInbox for a delete, which frees the name when it is recorded: finishing an
// interrupted one, the folder inbox/<name> may already be a new knowledge base's of the same name, and
// is then left alone (the deleted one's folder was retired before its record could be left behind
// unfinished, except by a crash between the two: its files then stay, ingested into the new one).
func (s *Service) retireInboxOf(ctx context.Context, k rag.KnowledgeBase, resumed bool) error {
	if resumed {
		if live, err := s.Runner.Stages.Records.GetKBByName(ctx, k.Tenant, k.Name); err == nil && live.ID != k.ID {
			return nil
		} else if err != nil && !rag.Is(err, rag.KindNotFound) && !rag.Is(err, rag.KindInvalid) {
			return err
		}
	}
	return s.retireInbox(ctx, k)
}

func (s *Service) retireInbox(ctx context.Context, k rag.KnowledgeBase) error {
	if s.InboxTenant != "" && k.Tenant != s.InboxTenant {
		return nil
	}
	return s.moveInbox(ctx, k.Name, "")
}

// maxRetiredSuffix bounds the search for a free retired name: thousands of deletes of one knowledge
// base's files in one second are not a workload, a loop that never ends would be.
const maxRetiredSuffix = 1000

// retiredName is a retired name for inbox/<kb>/<rel> (the whole folder when rel is "") whose target is
// free on disk and in the blob store: DeletedInboxName, then -2, -3... The name has one-second
// resolution, and a document delete followed by its knowledge base's delete in the same second met the
// document's retired folder: the folder rename failed ("file exists") after the delete was recorded, and
// a single-file move onto an existing copy silently replaced the user's earlier file. (Review of #11.)
func (s *Service) retiredName(ctx context.Context, kb, rel string) (string, error) {
	base := DeletedInboxName(kb, s.now())
	for i := 1; i <= maxRetiredSuffix; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		taken, err := s.retiredTaken(ctx, name, rel)
		if err != nil {
			return "", err
		}
		if !taken {
			return name, nil
		}
	}
	return "", rag.Errorf("ingest.Delete", rag.KindConflict, "no free retired name for inbox/%s/%s after %d tries", kb, rel, maxRetiredSuffix)
}

// retiredTaken reports whether inbox/<name>/<rel> exists on disk or has an object (any object under it
// when rel is "").
func (s *Service) retiredTaken(ctx context.Context, name, rel string) (bool, error) {
	if s.Inbox != "" {
		_, err := os.Lstat(filepath.Join(s.Inbox, name, filepath.FromSlash(rel)))
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return false, rag.E("ingest.Delete", rag.KindUnavailable, err)
		}
	}
	key := "inbox/" + name + "/" + rel
	objs, err := s.Runner.Stages.Blobs.List(ctx, key)
	if err != nil {
		return false, err
	}
	for _, o := range objs {
		if rel == "" || o.Key == key {
			return true, nil
		}
	}
	return false, nil
}

// moveInbox moves inbox/<kb>/<rel> (the whole folder when rel is "") to inbox/<retired name>/<rel>,
// on disk and in the blob store; what is missing is skipped, and nothing already retired is overwritten
// (retiredName).
func (s *Service) moveInbox(ctx context.Context, kb, rel string) error {
	const op = "ingest.Delete"
	retired, err := s.retiredName(ctx, kb, rel)
	if err != nil {
		return err
	}
	if s.Inbox != "" {
		from := filepath.Join(s.Inbox, kb, filepath.FromSlash(rel))
		to := filepath.Join(s.Inbox, retired, filepath.FromSlash(rel))
		if st, err := os.Stat(from); err == nil && (rel != "" || st.IsDir()) {
			if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
				return rag.E(op, rag.KindUnavailable, err)
			}
			if err := os.Rename(from, to); err != nil {
				return rag.E(op, rag.KindUnavailable, err)
			}
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rag.E(op, rag.KindUnavailable, err)
		}
	}
	b := s.Runner.Stages.Blobs
	prefix := "inbox/" + kb + "/"
	objs, err := b.List(ctx, prefix+rel)
	if err != nil {
		return err
	}
	to := "inbox/" + retired + "/"
	for _, o := range objs {
		if rel != "" && o.Key != prefix+rel {
			continue // inbox/<kb>/a.md.bak when moving a.md
		}
		r, info, err := b.Get(ctx, o.Key)
		if err != nil {
			if rag.Is(err, rag.KindNotFound) {
				continue
			}
			return err
		}
		_, err = b.Put(ctx, to+strings.TrimPrefix(o.Key, prefix), r, info.ContentType)
		r.Close()
		if err != nil {
			return err
		}
		if err := b.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return nil
}
