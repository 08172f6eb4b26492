// Package bucket opens the documents bucket (shared/store/s3) next to the stores every function holds:
// the functions that write or delete stored sources and staging (stage, ingest, consistency) and api
// (uploads). The others never import it, so they do not link the S3 adapter.
package bucket

import (
	"context"

	"github.com/docmind/docmind/functions/internal/stores"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/store/s3"
)

// Stores are Aurora, Milvus and the bucket.
type Stores struct {
	stores.Cloud
	Blobs *s3.Store
}

// Open opens Aurora and Milvus (stores.Open), then the bucket, stopping at the first error.
func Open(ctx context.Context, cfg config.Config) (Stores, error) {
	c, err := stores.Open(ctx, cfg)
	if err != nil {
		return Stores{}, err
	}
	blobs, err := Blobs(ctx, cfg)
	if err != nil {
		return Stores{}, err
	}
	return Stores{Cloud: c, Blobs: blobs}, nil
}

// Blobs opens the documents bucket (stored sources and staging).
func Blobs(ctx context.Context, cfg config.Config) (*s3.Store, error) {
	b := cfg.Blob
	return s3.New(ctx, s3.Options{Bucket: b.Bucket, Region: b.Region, Endpoint: b.Endpoint, UsePathStyle: b.UsePathStyle})
}
