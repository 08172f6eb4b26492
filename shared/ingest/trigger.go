package ingest

import (
	"context"
	"encoding/json"
	"path"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Executions starts runs of the ingestion state machine.
type Executions interface {
	// Start starts an execution called name with input. started is false, with a nil error, when an
	// execution of that name exists already (Step Functions' ExecutionAlreadyExists): a replayed event.
	Start(ctx context.Context, name string, input []byte) (started bool, err error)
}

// SourceChange is one drop-folder object event (an S3 notification, decoded).
type SourceChange struct {
	Removed   bool
	Bucket    string
	Key       string // decoded: inbox/<kb>/<path>
	VersionID string
	Sequencer string
	Size      int64 // the object's size in bytes (a put's)
}

// Trigger turns drop-folder object events, and presigned uploads' objects (uploads/<tenant>/<kb id>/
// <document id>, presigned.go), into ingestion: the AWS twin of Watcher. It is idempotent
// under duplicate and reordered delivery (ING-01, ING-02): each event is first recorded against the
// source's newest sequencer with a conditional SQL write, so a stale event is dropped; an accepted put
// starts one execution whose name is derived from the object version, so a replay cannot start a
// second; a removal deletes the document everywhere under the source's lease.
type Trigger struct {
	Service    *Service
	Events     SourceEvents
	Leases     Leases
	Executions Executions
	Tenant     string
	// Name derives the execution name from a label and the identifying parts (awsrt.ExecutionName).
	Name     func(label string, parts ...string) string
	LeaseTTL time.Duration // a removal's hold on the source (default 5 min)
	// Users checks a presigned upload's uploader again when its object arrives (presigned.go).
	Users UploaderRoles
	// MaxUploadBytes refuses a larger presigned upload (default 64 MiB, the ingestion's file limit).
	MaxUploadBytes int64
}

// Trigger actions.
const (
	ActionStarted   = "started"   // an execution was started
	ActionDuplicate = "duplicate" // the execution exists already: a replayed event
	ActionStale     = "stale"     // a newer event for the source is recorded: dropped
	ActionDeleted   = "deleted"   // the document was deleted everywhere
	ActionIgnored   = "ignored"   // not a document to ingest (hidden, unsupported, outside inbox/ and the presigned uploads, a removal under uploads/)
)

// TriggerResult says what one event did.
type TriggerResult struct {
	Action     string `json:"action"`
	Execution  string `json:"execution,omitempty"`
	DocumentID string `json:"document_id,omitempty"`
	KB         string `json:"kb,omitempty"`
}

// SplitInboxKey parses "inbox/<kb>/<path>" into the knowledge base name and the path inside it; ok is
// false outside inbox/, for folder markers, and for hidden or temporary names (which includes the
// "inbox/.deleted-<kb>-<time>/" folders of deleted knowledge bases), exactly as the local watcher skips.
func SplitInboxKey(key string) (kb, rel string, ok bool) {
	rest, found := strings.CutPrefix(key, "inbox/")
	if !found || strings.HasSuffix(key, "/") {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 {
		return "", "", false
	}
	for _, p := range parts {
		if p == "" || strings.HasPrefix(p, ".") || strings.HasPrefix(p, "~$") || strings.HasSuffix(p, "~") {
			return "", "", false
		}
	}
	return parts[0], strings.Join(parts[1:], "/"), true
}

// Handle applies one event. Errors are classified: Invalid for an event that can never succeed (the
// message belongs in the dead-letter queue), Permission for a put into a knowledge base a member created or owns
// (OperatorKB: refused, audited, and dead-lettered after the queue's retries) and for a presigned upload
// whose uploader may no longer edit its knowledge base (refused and audited alike), Conflict while another
// ingestion holds the source (retry later), Unavailable for a dependency that is down.
func (t *Trigger) Handle(ctx context.Context, ch SourceChange) (TriggerResult, error) {
	const op = "ingest.Trigger"
	if strings.HasPrefix(ch.Key, PresignedPrefix) {
		return t.presigned(ctx, ch)
	}
	if main, ok := SidecarOf(ch.Key); ok && extract.Supported(main) {
		return t.sidecarEvent(ctx, ch, main) // a sidecar written, changed or removed: its file's metadata follows
	}
	kbName, rel, ok := SplitInboxKey(ch.Key)
	if !ok || (!ch.Removed && !extract.Supported(rel)) {
		return TriggerResult{Action: ActionIgnored}, nil
	}
	if ch.Sequencer == "" || ch.Bucket == "" {
		return TriggerResult{}, rag.Errorf(op, rag.KindInvalid, "event for %s lacks bucket or sequencer", ch.Key)
	}
	uri := SourceURI(kbName, rel)
	res := TriggerResult{KB: kbName}
	kb, err := t.kb(ctx, kbName, ch.Removed)
	if err != nil && !(ch.Removed && rag.Is(err, rag.KindNotFound)) {
		return res, err
	}
	kind := sqldb.SourcePut
	if ch.Removed {
		kind = sqldb.SourceDelete
	}
	order, err := t.Events.RecordSourceEvent(ctx, sqldb.SourceEvent{Tenant: t.Tenant, KBID: kb.ID, SourceURI: uri,
		Sequencer: ch.Sequencer, VersionID: ch.VersionID, Event: kind})
	if err != nil {
		return res, err
	}
	if order == sqldb.EventStale {
		res.Action = ActionStale
		return res, nil
	}
	if ch.Removed {
		return t.remove(ctx, kb, uri, ch, res)
	}
	doc, err := t.document(ctx, kb, uri, rel)
	if err != nil {
		return res, err
	}
	res.DocumentID = doc.ID
	name := t.Name("ingest", t.Tenant, ch.Bucket, ch.Key, ch.VersionID, ch.Sequencer)
	job := Job{Doc: Doc{Tenant: t.Tenant, KBID: kb.ID, DocumentID: doc.ID}, SourceURI: uri, Bucket: ch.Bucket, Key: ch.Key,
		VersionID: ch.VersionID, Sequencer: ch.Sequencer, FileName: path.Base(rel), Holder: name}
	return t.start(ctx, name, job, res)
}

// kb is the event's knowledge base: for a put, an operator channel's (created when missing, Permission
// when a member created or owns it: the message ends in the dead-letter queue; redriving it helps only once the knowledge
// base is the operator's); a removal only looks it up, so the operator's own earlier documents can still
// be removed.
func (t *Trigger) kb(ctx context.Context, name string, removed bool) (rag.KnowledgeBase, error) {
	if removed {
		return t.Service.KB(ctx, t.Tenant, name, false)
	}
	return t.Service.OperatorKB(ctx, t.Tenant, name, "s3")
}

// document finds or creates the source's document row (pending until its execution prepares it).
func (t *Trigger) document(ctx context.Context, kb rag.KnowledgeBase, uri, rel string) (rag.Document, error) {
	return t.Service.SourceDocument(ctx, t.Tenant, kb.ID, uri, path.Base(rel))
}

// SourceDocument finds or creates the document row of a source that a workflow execution will ingest
// (pending until its Prepare): the drop folder's trigger and the AWS connector sync. A row left
// deleted by an interrupted delete is deleted for good first, so the new version starts afresh.
func (s *Service) SourceDocument(ctx context.Context, tenant, kbID, uri, name string) (rag.Document, error) {
	recs := s.Runner.Stages.Records
	doc, err := recs.GetDocumentBySource(ctx, tenant, kbID, uri)
	if err == nil && doc.Status == rag.StatusDeleted {
		if err := s.Delete(ctx, tenant, doc.ID); err != nil && !rag.Is(err, rag.KindNotFound) {
			return doc, err
		}
		doc, err = recs.GetDocumentBySource(ctx, tenant, kbID, uri)
	}
	if err == nil || !rag.Is(err, rag.KindNotFound) {
		return doc, err
	}
	doc = rag.Document{Tenant: tenant, KBID: kbID, SourceURI: uri, FileName: truncateRunes(name, 255), FileType: fileType(name),
		Status: rag.StatusPending}
	if err := recs.CreateDocument(ctx, &doc); err != nil {
		if !rag.Is(err, rag.KindConflict) {
			return doc, err
		}
		return recs.GetDocumentBySource(ctx, tenant, kbID, uri) // a concurrent delivery created it
	}
	return doc, nil
}

// remove deletes the source's document under its lease; Conflict while an execution holds the lease
// (SQS redelivers the message after its visibility timeout).
func (t *Trigger) remove(ctx context.Context, kb rag.KnowledgeBase, uri string, ch SourceChange, res TriggerResult) (TriggerResult, error) {
	res.Action = ActionDeleted
	if kb.ID == "" {
		return res, nil // the knowledge base is gone; the tombstone is recorded
	}
	ttl := t.LeaseTTL
	if ttl <= 0 {
		ttl = 5 * time.Minute
	}
	lease, holder := LeaseName(t.Tenant, kb.ID, uri), "delete-"+ch.Sequencer
	ok, err := t.Leases.AcquireLease(ctx, lease, holder, ttl)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, rag.Errorf("ingest.Trigger", rag.KindConflict, "an ingestion of %s holds its lease", uri)
	}
	defer t.Leases.ReleaseLease(context.WithoutCancel(ctx), lease, holder)
	ctx = HoldingLease(ctx, lease) // the service's delete runs under this hold, not a second one
	doc, err := t.Service.Runner.Stages.Records.GetDocumentBySource(ctx, t.Tenant, kb.ID, uri)
	if rag.Is(err, rag.KindNotFound) {
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.DocumentID = doc.ID
	if err := t.Service.DeleteRemoved(ctx, t.Tenant, doc.ID); err != nil { // the object is gone: nothing to move aside
		return res, err
	}
	t.Service.AuditOperator(ctx, t.Tenant, "s3", "document.delete", doc.ID, uri)
	return res, nil
}

// start starts the ingestion state machine for job under the execution name (deterministic: a
// replayed event finds its execution and is reported a duplicate) and says which happened in res.
func (t *Trigger) start(ctx context.Context, name string, job Job, res TriggerResult) (TriggerResult, error) {
	input, err := json.Marshal(job)
	if err != nil {
		return res, rag.E("ingest.Trigger", rag.KindInternal, err)
	}
	started, err := t.Executions.Start(ctx, name, input)
	if err != nil {
		return res, err
	}
	res.Execution, res.Action = name, ActionDuplicate
	if started {
		res.Action = ActionStarted
	}
	return res, nil
}
