// Package s3 is the AWS blob store: objects in one bucket under an optional key prefix, through
// aws-sdk-go-v2. Endpoint and path-style options serve S3-compatible stores (MinIO, test servers).
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

var _ store.Blobs = (*Store)(nil)

// Options configure the store.
type Options struct {
	Bucket       string
	Prefix       string // prepended to every key, e.g. "tenant-a/"; List results have it removed
	Region       string
	Endpoint     string // S3-compatible endpoint URL; empty for AWS
	UsePathStyle bool
	// MaxBuffer bounds how much of a non-seekable Put body is buffered to learn its length (default 256 MiB).
	MaxBuffer int64
	// Credentials override the default chain (tests); nil uses the environment / Lambda role.
	Credentials aws.CredentialsProvider
}

// Store is a store.Blobs over S3.
type Store struct {
	c         *awss3.Client
	bucket    string
	prefix    string
	maxBuffer int64
}

// New builds the client from the default AWS configuration chain plus o. It does not call S3.
func New(ctx context.Context, o Options) (*Store, error) {
	if o.Bucket == "" {
		return nil, rag.Errorf("s3.New", rag.KindInvalid, "bucket is required")
	}
	if o.Prefix != "" {
		if err := store.ValidateBlobPrefix(o.Prefix); err != nil {
			return nil, err
		}
		if !strings.HasSuffix(o.Prefix, "/") {
			o.Prefix += "/"
		}
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(o.Region),
		// one retry layer per hop (SR-17): three attempts with capped backoff, bounded by ctx
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(so *retry.StandardOptions) { so.MaxAttempts = 3; so.MaxBackoff = 2 * time.Second })
		}),
	}
	if o.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(o.Credentials))
	}
	cfg, err := awsrt.LoadConfig(ctx, opts...)
	if err != nil {
		return nil, rag.E("s3.New", rag.KindInvalid, fmt.Errorf("load AWS config: %w", err))
	}
	c := awss3.NewFromConfig(cfg, func(so *awss3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.UsePathStyle
		// S3-compatible servers do not all understand streaming trailer checksums
		so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	if o.MaxBuffer <= 0 {
		o.MaxBuffer = 256 << 20
	}
	return &Store{c: c, bucket: o.Bucket, prefix: o.Prefix, maxBuffer: o.MaxBuffer}, nil
}

func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	if errors.As(err, &nsk) || errors.As(err, &nf) {
		return rag.E(op, rag.KindNotFound, nil)
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return rag.E(op, rag.KindNotFound, nil)
		case "NoSuchBucket":
			return rag.E(op, rag.KindInvalid, err)
		case "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch":
			return rag.E(op, rag.KindPermission, err)
		case "SlowDown", "ServiceUnavailable", "InternalError", "RequestTimeout":
			return rag.E(op, rag.KindUnavailable, err)
		}
		return rag.E(op, rag.KindInternal, err)
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "connection") || strings.Contains(err.Error(), "retry quota") {
		return rag.E(op, rag.KindUnavailable, err)
	}
	return rag.E(op, rag.KindInternal, err)
}

func etag(s *string) string { return strings.Trim(aws.ToString(s), `"`) }

// Put implements store.Blobs.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, contentType string) (store.BlobInfo, error) {
	const op = "s3.Put"
	if err := store.ValidateBlobKey(key); err != nil {
		return store.BlobInfo{}, err
	}
	body, ok := r.(io.ReadSeeker)
	if !ok {
		b, err := io.ReadAll(io.LimitReader(r, s.maxBuffer+1))
		if err != nil {
			return store.BlobInfo{}, rag.E(op, rag.KindUnavailable, err)
		}
		if int64(len(b)) > s.maxBuffer {
			return store.BlobInfo{}, rag.Errorf(op, rag.KindInvalid, "object larger than %d bytes", s.maxBuffer)
		}
		body = bytes.NewReader(b)
	}
	in := &awss3.PutObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key), Body: body}
	if contentType != "" {
		in.ContentType = aws.String(contentType)
	}
	if _, err := s.c.PutObject(ctx, in); err != nil {
		return store.BlobInfo{}, classify(op, err)
	}
	return s.Stat(ctx, key)
}

// Get implements store.Blobs.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, store.BlobInfo, error) {
	if err := store.ValidateBlobKey(key); err != nil {
		return nil, store.BlobInfo{}, err
	}
	out, err := s.c.GetObject(ctx, &awss3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)})
	if err != nil {
		return nil, store.BlobInfo{}, classify("s3.Get", err)
	}
	return out.Body, store.BlobInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: etag(out.ETag),
		ContentType: aws.ToString(out.ContentType), ModTime: aws.ToTime(out.LastModified).UTC()}, nil
}

// Stat implements store.Blobs.
func (s *Store) Stat(ctx context.Context, key string) (store.BlobInfo, error) {
	if err := store.ValidateBlobKey(key); err != nil {
		return store.BlobInfo{}, err
	}
	out, err := s.c.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)})
	if err != nil {
		return store.BlobInfo{}, classify("s3.Stat", err)
	}
	return store.BlobInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ETag: etag(out.ETag),
		ContentType: aws.ToString(out.ContentType), ModTime: aws.ToTime(out.LastModified).UTC()}, nil
}

// Delete implements store.Blobs.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := store.ValidateBlobKey(key); err != nil {
		return err
	}
	_, err := s.c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.prefix + key)})
	if rag.Is(classify("s3.Delete", err), rag.KindNotFound) {
		return nil
	}
	return classify("s3.Delete", err)
}

// List implements store.Blobs. S3 returns keys in UTF-8 binary order, the same as Go's string order.
func (s *Store) List(ctx context.Context, prefix string) ([]store.BlobInfo, error) {
	if err := store.ValidateBlobPrefix(prefix); err != nil {
		return nil, err
	}
	p := awss3.NewListObjectsV2Paginator(s.c, &awss3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix + prefix)})
	out := []store.BlobInfo{}
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, classify("s3.List", err)
		}
		for _, o := range page.Contents {
			out = append(out, store.BlobInfo{Key: strings.TrimPrefix(aws.ToString(o.Key), s.prefix), Size: aws.ToInt64(o.Size),
				ETag: etag(o.ETag), ModTime: aws.ToTime(o.LastModified).UTC()})
		}
	}
	return out, nil
}
