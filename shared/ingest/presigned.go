package ingest

import (
	"context"
	"fmt"
	"strings"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Presigned uploads (AWS): the API issues a URL for one S3 PUT of one file to
// uploads/<tenant>/<kb id>/<document id> and creates that document, pending, when it does; the bucket
// notifies the ingest queue of the object, and the trigger ingests it as the requesting user's upload.
// It is not the drop folder: inbox/<kb name>/ is an operator channel, which refuses a knowledge base a
// member created or owns (OperatorKB), and every knowledge base made through the API is one. The key
// carries ids, never names, so a knowledge base deleted and re-created under its name meanwhile cannot
// receive the file, and the document row, not the key, says who asked for it.
//
// Who asked is recorded in the document's source URI, presigned/<user id>/<upload id>: the documents
// table has no owner column, and the source URI is the row's own identity of its source (unique in the
// knowledge base, shown to readers as where the document came from). The trigger reads the user's role
// on the knowledge base again from SQL when the object arrives: a role revoked between the URL and the
// PUT refuses the file.

// PresignedPrefix is the key prefix of presigned uploads; the direct API uploads of functions/api use
// uploads/<tenant>/<document id>, one level less, and start their own executions.
const PresignedPrefix = "uploads/"

// PresignedKey is the object key a presigned PUT writes.
func PresignedKey(tenant, kbID, docID string) string {
	return PresignedPrefix + tenant + "/" + kbID + "/" + docID
}

// presignedURIPrefix starts the source URI of a presigned upload's document.
const presignedURIPrefix = "presigned/"

// PresignedDocument is the pending document a presigned URL is issued for: fileName cleaned, its type
// supported (Invalid otherwise), its uploader userID recorded in the source URI. The caller creates it.
func PresignedDocument(tenant, kbID, userID, fileName string) (rag.Document, error) {
	const op = "ingest.PresignedDocument"
	if err := rag.ValidateID("user id", userID); err != nil {
		return rag.Document{}, rag.E(op, rag.KindInvalid, err)
	}
	name := CleanFileName(fileName)
	if err := checkSupported(name); err != nil {
		return rag.Document{}, rag.E(op, rag.KindInvalid, err)
	}
	return rag.Document{ID: rag.NewID("doc"), Tenant: tenant, KBID: kbID, SourceURI: presignedURIPrefix + userID + "/" + rag.NewID("up"),
		FileName: truncateRunes(name, 255), FileType: fileType(name), Status: rag.StatusPending}, nil
}

// Uploader returns the user who asked for a presigned upload's document; ok is false for any other
// document (a direct upload, a drop-folder file).
func Uploader(d rag.Document) (userID string, ok bool) {
	rest, found := strings.CutPrefix(d.SourceURI, presignedURIPrefix)
	if !found {
		return "", false
	}
	userID, _, found = strings.Cut(rest, "/")
	return userID, found && rag.ValidateID("user id", userID) == nil
}

// splitPresignedKey parses uploads/<tenant>/<kb id>/<document id>. direct is true for a direct API
// upload's uploads/<tenant>/<document id>; ok is false for anything else.
func splitPresignedKey(key string) (tenant, kbID, docID string, direct, ok bool) {
	parts := strings.Split(strings.TrimPrefix(key, PresignedPrefix), "/")
	switch {
	case len(parts) == 2 && rag.ValidateID("tenant", parts[0]) == nil && rag.ValidateID("document", parts[1]) == nil:
		return parts[0], "", parts[1], true, true
	case len(parts) != 3:
		return "", "", "", false, false
	}
	for _, p := range parts {
		if rag.ValidateID("id", p) != nil {
			return "", "", "", false, false
		}
	}
	return parts[0], parts[1], parts[2], false, true
}

// UploaderRoles reads what a presigned upload's role check needs (sqldb.DB).
type UploaderRoles interface {
	GetUser(ctx context.Context, tenant, id string) (rag.User, error)
	MemberRoles(ctx context.Context, tenant, userID string) (map[string]rag.KBRole, error)
}

var _ UploaderRoles = (*sqldb.DB)(nil)

// ActionRefused is a presigned upload the trigger would not ingest (the error says why).
const ActionRefused = "refused"

// presigned handles an object event under uploads/. A removal, and a direct API upload's object, are
// ignored (the API starts that one's execution itself). A put is ingested as its document's uploader's
// upload when the document is a presigned one of this knowledge base, not deleted, the object is within
// the limit, the knowledge base is still there and the uploader still edits it; otherwise it is refused
// (Invalid or Permission: audited, and dead-lettered after the queue's retries, like every event that
// can never succeed), and a document that was waiting for it is marked failed with the reason.
func (t *Trigger) presigned(ctx context.Context, ch SourceChange) (TriggerResult, error) {
	const op = "ingest.Trigger"
	tenant, kbID, docID, direct, ok := splitPresignedKey(ch.Key)
	if ch.Removed || direct {
		return TriggerResult{Action: ActionIgnored}, nil
	}
	res := TriggerResult{Action: ActionRefused, DocumentID: docID, KB: kbID}
	refuse := func(kind rag.Kind, doc *rag.Document, format string, args ...any) (TriggerResult, error) {
		why := fmt.Sprintf(format, args...)
		t.Service.AuditOperator(ctx, t.Tenant, "s3", "upload.refused", docID, ch.Key+": "+why)
		if doc != nil && doc.Status == rag.StatusPending {
			doc.Status, doc.Error = rag.StatusFailed, why
			_ = t.Service.Runner.Stages.Records.UpdateDocument(context.WithoutCancel(ctx), doc)
		}
		return res, rag.Errorf(op, kind, "presigned upload %s refused: %s", ch.Key, why)
	}
	if !ok {
		return refuse(rag.KindInvalid, nil, "the key is not uploads/<tenant>/<knowledge base id>/<document id>")
	}
	if tenant != t.Tenant {
		return refuse(rag.KindPermission, nil, "tenant %q is not this stack's", tenant)
	}
	if ch.Sequencer == "" || ch.Bucket == "" {
		return res, rag.Errorf(op, rag.KindInvalid, "event for %s lacks bucket or sequencer", ch.Key)
	}
	recs := t.Service.Runner.Stages.Records
	doc, err := recs.GetDocument(ctx, tenant, docID)
	switch {
	case rag.Is(err, rag.KindNotFound):
		return refuse(rag.KindInvalid, nil, "no document %s: no URL was issued for it, or it was deleted", docID)
	case err != nil:
		return res, err
	case doc.Status == rag.StatusDeleted:
		return refuse(rag.KindInvalid, nil, "document %s was deleted", docID)
	case doc.KBID != kbID:
		return refuse(rag.KindInvalid, nil, "document %s is not in knowledge base %s", docID, kbID)
	}
	user, isPresigned := Uploader(doc)
	if !isPresigned {
		return refuse(rag.KindInvalid, nil, "document %s was not created for a presigned upload", docID)
	}
	if limit := t.maxUpload(); ch.Size > limit {
		return refuse(rag.KindInvalid, &doc, "the file is %d bytes, larger than the upload limit of %d bytes", ch.Size, limit)
	}
	if ch.Size == 0 {
		return refuse(rag.KindInvalid, &doc, "the file is empty (0 bytes): there is nothing in it to add")
	}
	kb, err := recs.GetKB(ctx, tenant, kbID)
	if rag.Is(err, rag.KindNotFound) || (err == nil && kb.Retired()) {
		return refuse(rag.KindInvalid, &doc, "the knowledge base was deleted")
	}
	if err != nil {
		return res, err
	}
	if err := t.mayEdit(ctx, tenant, kbID, user); err != nil {
		if !rag.Is(err, rag.KindPermission) {
			return res, err
		}
		return refuse(rag.KindPermission, &doc, "%v", err)
	}
	order, err := t.Events.RecordSourceEvent(ctx, sqldb.SourceEvent{Tenant: tenant, KBID: kbID, SourceURI: doc.SourceURI,
		Sequencer: ch.Sequencer, VersionID: ch.VersionID, Event: sqldb.SourcePut})
	if err != nil {
		return res, err
	}
	if order == sqldb.EventStale {
		res.Action = ActionStale
		return res, nil
	}
	name := t.Name("upload", tenant, ch.Bucket, ch.Key, ch.VersionID, ch.Sequencer)
	job := Job{Doc: Doc{Tenant: tenant, KBID: kbID, DocumentID: doc.ID}, SourceURI: doc.SourceURI, Bucket: ch.Bucket, Key: ch.Key,
		VersionID: ch.VersionID, Sequencer: ch.Sequencer, FileName: doc.FileName, Holder: name}
	return t.start(ctx, name, job, res)
}

// mayEdit requires the editor role on the knowledge base of the user, as SQL records it now: a tenant
// admin (a JWT admin group's members are written as admins at sign-in), or an editor or owner member.
// Permission otherwise, the user's row being gone included.
func (t *Trigger) mayEdit(ctx context.Context, tenant, kbID, userID string) error {
	const op = "ingest.Trigger"
	if t.Users == nil {
		return rag.Errorf(op, rag.KindPermission, "no user store to check the uploader's role in")
	}
	u, err := t.Users.GetUser(ctx, tenant, userID)
	if rag.Is(err, rag.KindNotFound) {
		return rag.Errorf(op, rag.KindPermission, "the uploader %s no longer exists", userID)
	}
	if err != nil {
		return err
	}
	if u.Role == rag.RoleAdmin {
		return nil
	}
	roles, err := t.Users.MemberRoles(ctx, tenant, userID)
	if err != nil {
		return err
	}
	if roles[kbID] < rag.KBEditor {
		return rag.Errorf(op, rag.KindPermission, "the uploader %s no longer has the editor role on the knowledge base", u.Email)
	}
	return nil
}

func (t *Trigger) maxUpload() int64 {
	if t.MaxUploadBytes > 0 {
		return t.MaxUploadBytes
	}
	return 64 << 20
}
