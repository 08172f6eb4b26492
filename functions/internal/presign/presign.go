// Package presign issues the presigned S3 uploads of POST /api/kbs/{kb}/uploads on AWS, for both
// functions that answer it: the api function (management API) and the query function, which serves the
// page.
package presign

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
)

// PutPresigner is the one presigning call (*s3.PresignClient).
type PutPresigner interface {
	PresignPutObject(ctx context.Context, in *awss3.PutObjectInput, opts ...func(*awss3.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// DocumentCreator writes the pending document a URL is issued for (sqldb.DB).
type DocumentCreator interface {
	CreateDocument(ctx context.Context, d *rag.Document) error
	UpdateDocument(ctx context.Context, d *rag.Document) error
}

// presignExpiry is how long an upload URL may be used: long enough to start sending a large file on a
// slow line (S3 checks the expiry when the request starts, not when it ends), short enough that a URL
// copied from a log is soon worthless.
const presignExpiry = 15 * time.Minute

// S3 is httpapi.Presigner on AWS: an S3 presigned PUT, signed by the SDK's presign client with
// the function's own credentials (its role may s3:PutObject on uploads/<tenant>/* only), for the key
// uploads/<tenant>/<kb id>/<document id>, with the declared Content-Length and Content-Type signed: S3
// refuses a PUT of another size or type (SignatureDoesNotMatch). The bucket notifies the ingest queue of
// the object, and the ingest function's trigger ingests it as the requester's upload (ingest.Trigger).
type S3 struct {
	Docs    DocumentCreator
	S3      PutPresigner
	Bucket  string
	Expires time.Duration    // 0: 15 minutes
	Now     func() time.Time // nil: time.Now
}

// PresignUpload implements httpapi.Presigner.
func (p *S3) PresignUpload(ctx context.Context, req httpapi.PresignRequest) (httpapi.PresignedUpload, error) {
	const op = "presign.PresignUpload"
	doc, err := ingest.PresignedDocument(req.Tenant, req.KBID, req.UserID, req.FileName)
	if err != nil {
		return httpapi.PresignedUpload{}, err
	}
	expires := p.Expires
	if expires <= 0 {
		expires = presignExpiry
	}
	now := time.Now
	if p.Now != nil {
		now = p.Now
	}
	if err := p.Docs.CreateDocument(ctx, &doc); err != nil {
		if rag.Is(err, rag.KindNotFound) {
			err = rag.Errorf(op, rag.KindNotFound, "the knowledge base was deleted")
		}
		return httpapi.PresignedUpload{}, err
	}
	signedAt := now()
	out, err := p.S3.PresignPutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(p.Bucket), Key: aws.String(ingest.PresignedKey(req.Tenant, req.KBID, doc.ID)),
		ContentLength: aws.Int64(req.Size), ContentType: aws.String(req.ContentType)}, awss3.WithPresignExpires(expires))
	if err != nil {
		doc.Status, doc.Error = rag.StatusFailed, "no upload URL could be made; upload the file again"
		_ = p.Docs.UpdateDocument(context.WithoutCancel(ctx), &doc)
		return httpapi.PresignedUpload{}, rag.E(op, rag.KindUnavailable, fmt.Errorf("presign the upload: %w", err))
	}
	headers := map[string]string{}
	for k, v := range out.SignedHeader {
		// the client's HTTP stack sets Host from the URL; every other signed header must be sent as signed
		// (a browser sets Content-Length from the body itself)
		if k = http.CanonicalHeaderKey(k); k != "Host" && len(v) > 0 {
			headers[k] = v[0]
		}
	}
	return httpapi.PresignedUpload{DocumentID: doc.ID, URL: out.URL, Method: out.Method, Headers: headers,
		ExpiresAt: signedAt.Add(expires).UTC().Truncate(time.Second)}, nil
}

// Origin is where the presigned PUTs go (scheme and host, as https://bucket.s3.region.amazonaws.com or
// an endpoint override's), for the page's Content-Security-Policy: the URL of a key that is never used,
// signed locally (presigning makes no call).
func Origin(ctx context.Context, s3 PutPresigner, bucket string) (string, error) {
	out, err := s3.PresignPutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("uploads/origin")})
	if err != nil {
		return "", err
	}
	u, err := url.Parse(out.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("the presigned URL %q has no http(s) origin", out.URL)
	}
	return u.Scheme + "://" + u.Host, nil
}
