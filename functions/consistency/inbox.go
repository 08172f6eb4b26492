package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// s3Inbox is the documents bucket's drop folder, inbox/<kb>/<path>, as the consistency check sees it
// (reconcile.Inbox): the AWS twin of the local binary's localInbox. It finds the objects whose S3
// notification never produced a document (a dropped or undeliverable event, RELIABILITY ING-08) and
// repairs them through the same ingest.Trigger the ingest function runs for an S3 event, so the
// repair starts one execution of the ingestion state machine with the same input payload.
//
// A listing cannot see an object's S3 sequencer, so the repair cannot take the name of the event it
// stands in for. It records, through the trigger, a sequencer just above the source's recorded event
// (repairSequencer): above the event it follows, so the repair is accepted, and below every later real
// event for the key (those are above the missed one, which is itself above the recorded one), so a
// later upload or removal still supersedes it. The execution name is derived from the same parts as
// the S3 path's (tenant, bucket, key, version, sequencer) under the label "repair": a replayed repair
// derives the same name and Step Functions answers ExecutionAlreadyExists, which counts as done.
type s3Inbox struct {
	Bucket string
	// Tenant owns the drop folder (DOCMIND_TENANT): a stack's bucket serves one tenant.
	Tenant  string
	Objects objectLister // the bucket (*s3.Store)
	Heads   objectHeads  // the S3 client: the object's current version
	Events  sourceEvents // the newest recorded S3 event per source (sqldb.DB)
	Trigger trigger      // *ingest.Trigger with repairName
	// Restore re-stores the source of a document that exists (documents_without_source), which the
	// state machine would skip as unchanged; nil refuses that repair.
	Restore restorer
	// MinAge skips objects younger than this: their notification may still be in the queue, and the
	// S3 path, not the repair, should ingest them (default 10 min, the checker's own Grace).
	MinAge time.Duration
	Now    func() time.Time
	Log    *slog.Logger
}

var (
	_ reconcile.Inbox          = (*s3Inbox)(nil)
	_ reconcile.InboxPresence  = (*s3Inbox)(nil)
	_ reconcile.SourceVersions = (*s3Inbox)(nil)
)

type objectLister interface {
	List(ctx context.Context, prefix string) ([]store.BlobInfo, error)
}

type objectHeads interface {
	HeadObject(ctx context.Context, in *awss3.HeadObjectInput, opts ...func(*awss3.Options)) (*awss3.HeadObjectOutput, error)
}

type sourceEvents interface {
	GetSourceEvent(ctx context.Context, tenant, sourceURI string) (sqldb.SourceEvent, error)
}

type trigger interface {
	Handle(ctx context.Context, ch ingest.SourceChange) (ingest.TriggerResult, error)
}

// restorer ingests one object version again into its existing document.
type restorer interface {
	Restore(ctx context.Context, tenant string, ch ingest.SourceChange) (restored bool, err error)
}

// repairName is the trigger's execution name for a repair: the S3 path's parts under another label, so
// a repair of a version whose S3 event was recorded (its document deleted since) never collides with
// that event's finished execution and counts as done while ingesting nothing.
func repairName(_ string, parts ...string) string { return awsrt.ExecutionName("repair", parts...) }

// Files returns the source uris ("inbox/<kb>/<path>", the form the trigger records on documents) of
// the tenant's drop-folder objects that the S3 path would ingest, sorted by key. Skipped: another
// tenant's request (nil), what ingest.SplitInboxKey refuses (folder markers, hidden and temporary
// names, the inbox/.deleted-<kb>-<time>/ folders of deleted knowledge bases), unsupported formats,
// and objects younger than MinAge.
func (in *s3Inbox) Files(ctx context.Context, tenant string) ([]string, error) {
	if tenant != in.Tenant {
		return nil, nil
	}
	objs, err := in.Objects.List(ctx, "inbox/")
	if err != nil {
		return nil, fmt.Errorf("list s3://%s/inbox/: %w", in.Bucket, err)
	}
	young := in.now().Add(-in.minAge())
	var out []string
	for _, o := range objs {
		kb, rel, ok := ingest.SplitInboxKey(o.Key)
		if !ok || !extract.Supported(rel) || o.ModTime.After(young) {
			continue
		}
		out = append(out, ingest.SourceURI(kb, rel))
	}
	return out, nil
}

// Present returns the source uris of every drop-folder object of the tenant's that ingest.SplitInboxKey
// accepts, however young and whatever its format. With it the check finds a ready document whose object
// is gone: an ObjectRemoved notification that was never delivered, or that was dead-lettered (a removal
// that kept meeting an ingestion's lease). The listing is strongly consistent, so an absent object was
// removed; an upload after the removal makes it present again, and an execution still running for an
// older upload keeps its document processing, which the check leaves alone. serves is false for another
// tenant: the bucket's drop folder feeds Tenant only.
func (in *s3Inbox) Present(ctx context.Context, tenant string) ([]string, bool, error) {
	if tenant != in.Tenant {
		return nil, false, nil
	}
	objs, err := in.Objects.List(ctx, "inbox/")
	if err != nil {
		return nil, false, fmt.Errorf("list s3://%s/inbox/: %w", in.Bucket, err)
	}
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		if kb, rel, ok := ingest.SplitInboxKey(o.Key); ok {
			out = append(out, ingest.SourceURI(kb, rel))
		}
	}
	return out, true, nil
}

// Ingest repairs one drop-folder object: it reads the source's recorded event, then the object's
// current version (in that order, so a removal recorded before the read is seen as a missing object),
// and hands the trigger a put event with repairSequencer's sequencer. A document that exists already
// (the documents_without_source repair) is re-stored by Restore instead. Errors: Invalid for a uri
// that is not this tenant's drop folder, NotFound when the object is gone, Conflict when another
// ingestion holds the source, and the trigger's own.
func (in *s3Inbox) Ingest(ctx context.Context, tenant, uri string) error {
	const op = "consistency.inbox"
	kb, rel, ok := ingest.SplitInboxKey(uri)
	if !ok || tenant != in.Tenant {
		return rag.Errorf(op, rag.KindInvalid, "not a drop-folder source of tenant %s: %s", in.Tenant, uri)
	}
	key := ingest.SourceURI(kb, rel) // the object key is the uri
	rec, err := in.Events.GetSourceEvent(ctx, tenant, uri)
	recorded := err == nil
	if err != nil && !rag.Is(err, rag.KindNotFound) {
		return err
	}
	version, err := in.head(ctx, key)
	if err != nil {
		return err
	}
	seq, err := repairSequencer(rec, recorded, version)
	if err != nil {
		return err
	}
	ch := ingest.SourceChange{Bucket: in.Bucket, Key: key, VersionID: version, Sequencer: seq}
	if in.Restore != nil {
		if done, err := in.Restore.Restore(ctx, tenant, ch); done || err != nil {
			return err
		}
	}
	res, err := in.Trigger.Handle(ctx, ch)
	if err != nil {
		return err
	}
	switch res.Action {
	case ingest.ActionStarted, ingest.ActionDuplicate:
		// duplicate: a replayed repair; the execution of that name exists already
	case ingest.ActionStale:
		// a newer S3 event was recorded since the read: the event path owns the source now
	default:
		return rag.Errorf(op, rag.KindInternal, "the trigger answered %q for %s", res.Action, uri)
	}
	in.log().Info("drop-folder repair", "uri", uri, "action", res.Action, "execution", res.Execution, "document", res.DocumentID, "sequencer", seq)
	return nil
}

// NewerPut reports whether the newest event recorded for the source is a put above sequencer (a
// document's SourceSequencer, as its execution's Prepare stored it). Sequencers compare as
// sqldb.SequencerKey pads them.
func (in *s3Inbox) NewerPut(ctx context.Context, tenant, uri, sequencer string) (bool, error) {
	if tenant != in.Tenant || sequencer == "" {
		return false, nil
	}
	ev, err := in.Events.GetSourceEvent(ctx, tenant, uri)
	if rag.Is(err, rag.KindNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	mine, err := sqldb.SequencerKey(sequencer)
	if err != nil {
		return false, nil // not an S3 sequencer: the document was not prepared by an execution
	}
	return ev.Event == sqldb.SourcePut && ev.Sequencer > mine, nil
}

// IngestNewest hands the trigger the source's newest recorded put again (its version and sequencer),
// under the repair label: the execution it starts prepares that version, which the workflow accepts
// because its sequencer is the recorded one. A removal recorded since is left to the event path
// (nothing to do). ExecutionAlreadyExists (ActionDuplicate) is an error: that put's execution ran and
// the document is still behind it, so the finding is not repaired.
func (in *s3Inbox) IngestNewest(ctx context.Context, tenant, uri string) error {
	const op = "consistency.inbox"
	kb, rel, ok := ingest.SplitInboxKey(uri)
	if !ok || tenant != in.Tenant {
		return rag.Errorf(op, rag.KindInvalid, "not a drop-folder source of tenant %s: %s", in.Tenant, uri)
	}
	ev, err := in.Events.GetSourceEvent(ctx, tenant, uri)
	if err != nil {
		return err
	}
	if ev.Event != sqldb.SourcePut {
		return nil
	}
	seq := strings.ToUpper(strings.TrimLeft(ev.Sequencer, "0")) // one spelling, as repairSequencer's
	if seq == "" {
		seq = "0"
	}
	ch := ingest.SourceChange{Bucket: in.Bucket, Key: ingest.SourceURI(kb, rel), VersionID: ev.VersionID, Sequencer: seq}
	res, err := in.Trigger.Handle(ctx, ch)
	if err != nil {
		return err
	}
	switch res.Action {
	case ingest.ActionStarted, ingest.ActionStale:
	case ingest.ActionDuplicate:
		// the execution for this put ran already and the document still lags it: starting it again
		// repairs nothing, so the finding stays (an error here leaves it in Remaining, not Repaired)
		return rag.Errorf(op, rag.KindConflict, "%s: the execution for put %s (%s) exists already and the document still lags it", uri, seq, res.Execution)
	default:
		return rag.Errorf(op, rag.KindInternal, "the trigger answered %q for %s", res.Action, uri)
	}
	in.log().Info("stale version repair", "uri", uri, "action", res.Action, "execution", res.Execution, "document", res.DocumentID, "sequencer", seq)
	return nil
}

// head returns the object's current version id ("" on an unversioned bucket); NotFound when it is gone.
func (in *s3Inbox) head(ctx context.Context, key string) (string, error) {
	const op = "consistency.inbox.head"
	out, err := in.Heads.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(in.Bucket), Key: aws.String(key)})
	if err == nil {
		return aws.ToString(out.VersionId), nil
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NotFound", "NoSuchKey", "NoSuchVersion", "MethodNotAllowed": // HEAD of a delete marker is 405
			return "", rag.E(op, rag.KindNotFound, fmt.Errorf("s3://%s/%s: %w", in.Bucket, key, err))
		case "AccessDenied", "Forbidden":
			// also what a missing key answers when s3:ListBucket does not cover it: the role's is
			// conditioned on prefixes, which a HEAD does not send; either way the object is not repaired
			return "", rag.E(op, rag.KindPermission, err)
		}
	}
	return "", rag.E(op, rag.KindUnavailable, err)
}

// repairSequencer is the sequencer a repair records for an object whose current version is version.
// With no event recorded it is 1. When the recorded event is a put of that same version, it is the
// recorded sequencer: the S3 path accepted this version already (its document went since), and the
// workflow's Prepare runs only the execution whose sequencer is the recorded one. Otherwise (a removal
// recorded, or a put of an older version) the object changed after the recorded event and that
// change's notification was missed: one above the recorded sequencer. Any later real event for the key
// is above the missed one, so above the repair's too. The result is upper-case hex without leading zeros.
func repairSequencer(rec sqldb.SourceEvent, recorded bool, version string) (string, error) {
	if !recorded {
		return "1", nil
	}
	n, ok := new(big.Int).SetString(rec.Sequencer, 16)
	if !ok {
		return "", rag.Errorf("consistency.repairSequencer", rag.KindInternal, "recorded sequencer %q is not hex", rec.Sequencer)
	}
	if !(rec.Event == sqldb.SourcePut && version != "" && rec.VersionID == version) {
		n.Add(n, big.NewInt(1))
	}
	// one spelling (the store returns it padded to 64 digits): the execution name hashes the string,
	// and a replay must derive the same name
	return strings.ToUpper(n.Text(16)), nil
}

func (in *s3Inbox) minAge() time.Duration {
	if in.MinAge > 0 {
		return in.MinAge
	}
	return 10 * time.Minute
}

func (in *s3Inbox) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

func (in *s3Inbox) log() *slog.Logger {
	if in.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return in.Log
}
