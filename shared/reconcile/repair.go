package reconcile

import (
	"context"
	"fmt"
	"slices"

	"github.com/docmind/docmind/shared/rag"
)

// repair fixes each finding in turn and returns the findings still counted as drift: a finding whose
// document changed since the scan is dropped (it was in flux, and the next run looks again).
func (c *Checker) repair(ctx context.Context, fs []Finding, rep *Report) []Finding {
	var out []Finding
	for _, f := range fs {
		if ctx.Err() != nil {
			out = append(out, f)
			continue
		}
		if f.DocumentID != "" && !f.seen.IsZero() {
			cur, err := c.Records.GetDocument(ctx, f.Tenant, f.DocumentID)
			if rag.Is(err, rag.KindNotFound) || (err == nil && (!cur.UpdatedAt.Equal(f.seen) || cur.Status != f.Status)) {
				continue
			}
		}
		out = append(out, f)
		if err := c.fix(ctx, f); err != nil {
			c.log().Warn("reconcile repair failed", "class", f.Class, "tenant", f.Tenant, "document", f.DocumentID, "err", err)
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s %s/%s: %v", f.Class, f.Tenant, f.DocumentID, err))
			continue
		}
		rep.Repaired[f.Class] += f.n
		c.auditRepair(ctx, f)
	}
	return out
}

// auditRepair records a repair that removed or restored a knowledge base or a document in the audit log,
// when the relational store keeps one (sqldb.DB): deletions leave a trace whoever makes them.
func (c *Checker) auditRepair(ctx context.Context, f Finding) {
	a, ok := c.Records.(interface {
		AppendAudit(ctx context.Context, e *rag.AuditEntry) error
	})
	target := f.DocumentID
	if f.Class == DeletedKnowledgeBases {
		target = f.KBID
	}
	if !ok || target == "" || (f.Class != DeletedKnowledgeBases && f.Class != DeletedDocuments && f.Class != DocumentsWithoutSource) {
		return
	}
	_ = a.AppendAudit(context.WithoutCancel(ctx), &rag.AuditEntry{Tenant: f.Tenant, Actor: "operator:reconcile", Action: "reconcile.repair",
		Target: target, Detail: f.Class + " " + f.Status})
}

func (c *Checker) fix(ctx context.Context, f Finding) error {
	switch f.Class {
	case DeletedKnowledgeBases:
		return c.Documents.DeleteKB(ctx, f.Tenant, f.KBID)
	case ReadyWithoutVectors:
		return c.reembed(ctx, f)
	case VectorsWithoutRows:
		if err := c.Vectors.Delete(ctx, f.Tenant, f.IDs); err != nil {
			return err
		}
		return c.Vectors.Flush(ctx)
	case DeletedDocuments:
		if f.Status == StatusChunkOrphans {
			_, err := c.Records.(ChunkOrphanRecords).DeleteChunkOrphans(ctx, f.Tenant, f.DocumentID)
			return err
		}
		return c.Documents.Delete(ctx, f.Tenant, f.DocumentID)
	case StuckDocuments:
		return c.retry(ctx, f)
	case SourcesWithoutDocument:
		if f.Status == StatusInbox {
			return c.Inbox.Ingest(ctx, f.Tenant, f.IDs[0])
		}
		return c.deleteBlobs(ctx, f.IDs)
	case DocumentsWithoutSource:
		return c.restoreOrDelete(ctx, f)
	case StaleVersions:
		return c.Inbox.(SourceVersions).IngestNewest(ctx, f.Tenant, f.IDs[0])
	case StagingLeftovers:
		return c.deleteBlobs(ctx, f.IDs)
	}
	return rag.Errorf("reconcile.repair", rag.KindInternal, "unknown class %q", f.Class)
}

func (c *Checker) deleteBlobs(ctx context.Context, keys []string) error {
	for _, k := range keys {
		if err := c.Blobs.Delete(ctx, k); err != nil {
			return err
		}
	}
	return nil
}

// reembed embeds the stored text of the children whose vectors are missing and upserts them: cheaper
// than re-running the stages, and it needs no source.
func (c *Checker) reembed(ctx context.Context, f Finding) error {
	rows, err := c.Records.ListChunks(ctx, f.Tenant, f.DocumentID)
	if err != nil {
		return err
	}
	missing := map[string]bool{}
	for _, id := range f.IDs {
		missing[id] = true
	}
	var todo []rag.Chunk
	for _, r := range rows {
		if r.Level == rag.LevelChild && missing[r.VectorID] {
			todo = append(todo, r)
			delete(missing, r.VectorID) // children sharing a vector id (same text) embed once
		}
	}
	batch := c.EmbedBatch
	if batch <= 0 {
		batch = 64
	}
	for start := 0; start < len(todo); start += batch {
		part := todo[start:min(start+batch, len(todo))]
		texts := make([]string, len(part))
		for i, r := range part {
			texts[i] = r.Content
		}
		vecs, err := c.Embedder.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embed %d chunks: %w", len(texts), err)
		}
		if len(vecs) != len(texts) {
			return rag.Errorf("reconcile.reembed", rag.KindInternal, "embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
		recs := make([]rag.VectorRecord, len(part))
		for i, r := range part {
			recs[i] = rag.VectorRecord{ID: r.VectorID, Tenant: r.Tenant, KBID: r.KBID, DocumentID: r.DocumentID, ChunkID: r.ID, Tags: r.Tags, Vector: vecs[i]}
		}
		if err := c.Vectors.Upsert(ctx, recs); err != nil {
			return err
		}
	}
	return c.Vectors.Flush(ctx)
}

// retry runs a stuck document's stages again; one whose source is gone can never finish and is marked
// failed with the reason. A retry that fails leaves the document failed (the runner's rollback), which is
// no longer stuck: either way the drift is resolved.
func (c *Checker) retry(ctx context.Context, f Finding) error {
	err := c.Documents.Retry(ctx, f.Tenant, f.DocumentID)
	if !rag.Is(err, rag.KindNotFound) {
		if err != nil {
			if d, gerr := c.Records.GetDocument(ctx, f.Tenant, f.DocumentID); gerr == nil && d.Status == rag.StatusFailed {
				return nil
			}
		}
		return err
	}
	d, err := c.Records.GetDocument(ctx, f.Tenant, f.DocumentID)
	if err != nil {
		return err
	}
	d.Status, d.Error = rag.StatusFailed, fmt.Sprintf("stuck in %s since %s and its stored source is gone; upload it again", f.Status, f.seen.UTC().Format("2006-01-02 15:04:05Z"))
	return c.Records.UpdateDocument(ctx, &d)
}

// restoreOrDelete re-ingests a document from its drop-folder file or its original (a file:// path)
// when that is still there, which stores its source again, and otherwise deletes it: its source was
// removed and the removal missed. (A CLI-ingested document whose stored copy was lost was deleted
// although its file was still on disk: the review of issue #11.) A drop-folder document found without
// its file (IDs holds its uri) whose file is back, too recent to ingest here, is left to the watcher or
// the S3 event (Conflict: the next run looks again).
func (c *Checker) restoreOrDelete(ctx context.Context, f Finding) error {
	if c.Originals != nil && len(f.IDs) == 0 {
		d, err := c.Records.GetDocument(ctx, f.Tenant, f.DocumentID)
		if err != nil {
			return err
		}
		if err := c.Originals.Reingest(ctx, d); !rag.Is(err, rag.KindNotFound) {
			return err
		}
	}
	if c.Inbox != nil {
		d, err := c.Records.GetDocument(ctx, f.Tenant, f.DocumentID)
		if err != nil {
			return err
		}
		files, err := c.Inbox.Files(ctx, f.Tenant)
		if err != nil {
			return err
		}
		if slices.Contains(files, d.SourceURI) {
			return c.Inbox.Ingest(ctx, f.Tenant, d.SourceURI)
		}
		if p, ok := c.Inbox.(InboxPresence); ok && len(f.IDs) > 0 {
			uris, serves, err := p.Present(ctx, f.Tenant)
			if err != nil {
				return err
			}
			if serves && slices.Contains(uris, d.SourceURI) {
				return rag.Errorf("reconcile.repair", rag.KindConflict, "%s is back in the drop folder; its watcher or event ingests it", d.SourceURI)
			}
		}
	}
	return c.Documents.Delete(ctx, f.Tenant, f.DocumentID)
}
