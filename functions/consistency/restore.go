package main

import (
	"context"
	"path"
	"time"

	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
)

// sourceRestore re-ingests a ready document from its drop-folder object, in process: the repair of
// documents_without_source (a document whose stored source is gone while its object is still in
// inbox/). The state machine cannot do it: its Prepare skips a ready document whose content is
// unchanged, and that skip would leave the stored source missing. It holds the source's SQL lease (ingest.LeaseName,
// the one Prepare and a removal take) so it never overlaps an execution or a delete of the same source.
type sourceRestore struct {
	Service restoreService
	Records interface {
		GetDocumentBySource(ctx context.Context, tenant, kbID, sourceURI string) (rag.Document, error)
	}
	Leases  ingest.Leases
	Objects ingest.ObjectSource
	// MaxBytes refuses a larger object (the stages' own limit; default 64 MiB).
	MaxBytes int64
	// TTL bounds a restore that dies holding the lease (default 15 min, this function's timeout).
	TTL time.Duration
}

// restoreService is what the restore calls on ingest.Service.
type restoreService interface {
	KB(ctx context.Context, tenant, name string, create bool) (rag.KnowledgeBase, error)
	CheckOperator(ctx context.Context, kb rag.KnowledgeBase, channel string) error
	Ingest(ctx context.Context, tenant string, src ingest.Source) (ingest.Report, error)
}

// Restore reports false, with a nil error, unless the source's document is ready: the trigger path
// creates a missing one, runs a failed one again and meets a pending one's execution (a replay). Otherwise it reads ch's object version and ingests it with Force, which stores the
// source again; Conflict while another ingestion of the source holds the lease; Permission when a member
// created or owns the knowledge base (ingest.CheckOperator: the restore is an operator channel, and it
// ingests by the id it leased, which skips the service's own check).
func (r *sourceRestore) Restore(ctx context.Context, tenant string, ch ingest.SourceChange) (bool, error) {
	const op = "consistency.restore"
	kbName, rel, ok := ingest.SplitInboxKey(ch.Key)
	if !ok {
		return false, rag.Errorf(op, rag.KindInvalid, "not a drop-folder key: %s", ch.Key)
	}
	uri := ingest.SourceURI(kbName, rel)
	kb, err := r.Service.KB(ctx, tenant, kbName, false)
	if rag.Is(err, rag.KindNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	doc, err := r.Records.GetDocumentBySource(ctx, tenant, kb.ID, uri)
	if rag.Is(err, rag.KindNotFound) || (err == nil && doc.Status != rag.StatusReady) {
		return false, nil // a failed document runs again through the state machine, which does not skip it
	}
	if err != nil {
		return false, err
	}
	ttl := r.TTL
	if ttl <= 0 {
		ttl = 15 * time.Minute
	}
	lease, holder := ingest.LeaseName(tenant, kb.ID, uri), "restore-"+doc.ID
	got, err := r.Leases.AcquireLease(ctx, lease, holder, ttl)
	if err != nil {
		return true, err
	}
	if !got {
		return true, rag.Errorf(op, rag.KindConflict, "an ingestion of %s holds its lease", uri)
	}
	defer r.Leases.ReleaseLease(context.WithoutCancel(ctx), lease, holder)
	ctx = ingest.HoldingLease(ctx, lease) // Service.Ingest runs under this hold (it takes the lease otherwise)
	// the rule before the download: a refused knowledge base costs a few queries, not the object
	if err := r.Service.CheckOperator(ctx, kb, "restore"); err != nil {
		return true, err
	}
	limit := r.MaxBytes
	if limit <= 0 {
		limit = 64 << 20
	}
	data, err := r.Objects.GetObject(ctx, ch.Bucket, ch.Key, ch.VersionID, limit)
	if err != nil {
		return true, err
	}
	// by id: looked up by name again, a delete and re-create of the name since the lease was taken would
	// send the object into the new knowledge base
	_, err = r.Service.Ingest(ctx, tenant, ingest.Source{KBID: kb.ID, KBName: kbName, URI: uri, Name: path.Base(rel), Data: data, Force: true})
	return true, err
}
