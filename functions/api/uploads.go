package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
)

// ObjectPutter is the one S3 call an upload makes (*s3.Client).
type ObjectPutter interface {
	PutObject(ctx context.Context, in *awss3.PutObjectInput, opts ...func(*awss3.Options)) (*awss3.PutObjectOutput, error)
}

// uploads is httpapi.Ingester on AWS: an upload is stored in S3 under a server-generated key
// (uploads/<tenant>/<document id>; the user's file name is metadata only, SR-12/SEC-08) and ingested by
// one execution of the ingestion state machine, exactly as a drop-folder object is. Deletes run in the
// request, as locally (rows, vectors and stored sources), each document under its source's SQL lease
// (ingestenv.Service sets Service.Leases): while an execution ingests the document the delete is 409
// Conflict, to be repeated; a knowledge-base delete too large for the API's 29 s is finished by a
// repeated DELETE or the scheduled consistency run (its deletion is recorded first).
type uploads struct {
	svc    *ingest.Service
	s3     ObjectPutter
	bucket string
	execs  ingest.Executions
}

// Upload reads the file, creates the document (pending) in the knowledge base kbID, stores the bytes and
// starts its ingestion. The body is read whole: it is already in the function's memory (the event holds
// it, at most API Gateway's 10 MB), and the SDK signs an in-memory body for a plain PutObject. Larger
// files take the presigned path (POST /api/kbs/{kb}/uploads). NotFound when the knowledge base is gone: the id is the one the uploader's role was checked
// on, never a name looked up again (a delete and re-create under the same name during the upload must
// not receive the file). A failure after the document exists marks it failed with a message the user can
// act on, and returns Unavailable.
func (u *uploads) Upload(ctx context.Context, tenant, kbID, fileName string, body io.Reader, admit func(context.Context) error) (rag.Document, error) {
	const op = "api.Upload"
	name := ingest.CleanFileName(fileName)
	if !extract.Supported(name) {
		return rag.Document{}, rag.Errorf(op, rag.KindInvalid, "%s: this file type is not supported", name)
	}
	data, err := io.ReadAll(body)
	if err != nil {
		return rag.Document{}, fmt.Errorf("read the upload: %w", err)
	}
	if admit != nil {
		if err := admit(ctx); err != nil {
			return rag.Document{}, err
		}
	}
	doc := rag.Document{Tenant: tenant, KBID: kbID, SourceURI: "upload/" + rag.NewID("up"), FileName: name, Status: rag.StatusPending}
	if err := u.svc.Runner.Stages.Records.CreateDocument(ctx, &doc); err != nil {
		if rag.Is(err, rag.KindNotFound) {
			err = rag.Errorf(op, rag.KindNotFound, "the knowledge base was deleted during the upload")
		}
		return rag.Document{}, err
	}
	if err := u.ingest(ctx, doc, data); err != nil {
		doc.Status, doc.Error = rag.StatusFailed, "the upload could not be queued for ingestion; upload it again"
		_ = u.svc.Runner.Stages.Records.UpdateDocument(context.WithoutCancel(ctx), &doc)
		return doc, err
	}
	return doc, nil
}

// Reprocess ingests the document's stored source again.
func (u *uploads) Reprocess(ctx context.Context, tenant, docID string) (rag.Document, error) {
	doc, src, err := u.svc.Stored(ctx, tenant, docID)
	if err != nil {
		return doc, err
	}
	return doc, u.ingest(ctx, doc, src.Data)
}

func (u *uploads) Delete(ctx context.Context, tenant, docID string) error {
	return u.svc.Delete(ctx, tenant, docID)
}

func (u *uploads) DeleteKB(ctx context.Context, tenant, kbID string) error {
	return u.svc.DeleteKB(ctx, tenant, kbID)
}

// ingest stores data as a new object version and starts the execution named after it (a retried
// request cannot start a second run of the same version).
func (u *uploads) ingest(ctx context.Context, doc rag.Document, data []byte) error {
	const op = "api.ingest"
	key := "uploads/" + doc.Tenant + "/" + doc.ID
	out, err := u.s3.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(u.bucket), Key: aws.String(key), Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data)))})
	if err != nil {
		return rag.E(op, rag.KindUnavailable, fmt.Errorf("store the upload: %w", err))
	}
	version := aws.ToString(out.VersionId)
	name := awsrt.ExecutionName("upload", doc.Tenant, doc.ID, version, aws.ToString(out.ETag))
	job := ingest.Job{Doc: ingest.Doc{Tenant: doc.Tenant, KBID: doc.KBID, DocumentID: doc.ID}, SourceURI: doc.SourceURI,
		Bucket: u.bucket, Key: key, VersionID: version, Sequencer: "0", FileName: doc.FileName, Holder: name}
	input, err := json.Marshal(job)
	if err != nil {
		return rag.E(op, rag.KindInternal, err)
	}
	if _, err := u.execs.Start(ctx, name, input); err != nil {
		return err
	}
	return nil
}
