// Package stores opens the cloud adapters the Lambdas share, from the configuration awsenv.Load returns:
// Aurora MySQL (with its keyword index), Milvus and S3. Each opener is its own function, so a function
// dials only what it uses; Redis is not here (only the HTTP functions hold a KV: see httpfn), and the
// embedded adapters never are (deptest). migrate opens its single connection itself.
package stores

import (
	"context"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/s3"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Cloud are the adapters a function opened.
type Cloud struct {
	SQL     *sqldb.DB
	Vectors *milvus.Index
	Blobs   *s3.Store // nil unless opened by OpenWithBlobs
}

// Open opens Aurora and the chunks' Milvus collection, in that order, stopping at the first error.
func Open(ctx context.Context, cfg config.Config) (Cloud, error) {
	db, err := SQL(ctx, cfg)
	if err != nil {
		return Cloud{}, err
	}
	vec, err := Vectors(ctx, cfg)
	if err != nil {
		return Cloud{}, err
	}
	return Cloud{SQL: db, Vectors: vec}, nil
}

// OpenWithBlobs opens what Open does and the documents bucket: the functions that write or delete
// stored sources and staging (stage, ingest, consistency).
func OpenWithBlobs(ctx context.Context, cfg config.Config) (Cloud, error) {
	c, err := Open(ctx, cfg)
	if err != nil {
		return Cloud{}, err
	}
	if c.Blobs, err = Blobs(ctx, cfg); err != nil {
		return Cloud{}, err
	}
	return c, nil
}

// SQL opens Aurora MySQL with the configured pool (DOCMIND_SQL_MAX_OPEN_CONNS per instance).
func SQL(ctx context.Context, cfg config.Config) (*sqldb.DB, error) {
	return mysql.Open(ctx, cfg.SQL.DSN, mysql.Options{MaxOpenConns: cfg.SQL.MaxOpenConns, ConnMaxLifetime: cfg.SQL.ConnMaxLifetime}, nil)
}

// Keyword is BM25 over the chunk rows in db, with the configured parameters.
func Keyword(db *sqldb.DB, cfg config.Config) *mysql.Keyword {
	return &mysql.Keyword{DB: db, Params: BM25Params(cfg)}
}

// BM25Params are the configured BM25 parameters (the embedded index in tests takes the same).
func BM25Params(cfg config.Config) bm25.Params {
	r := cfg.Retrieval
	return bm25.Params{K1: r.BM25K1, B: r.BM25B, TitleWeight: r.BM25TitleWeight, ContextWeight: r.BM25ContextWeight}
}

// Vectors opens the chunks' Milvus collection.
func Vectors(ctx context.Context, cfg config.Config) (*milvus.Index, error) {
	return milvus.Open(ctx, milvusOptions(cfg))
}

// Memories opens the long-term memories' collection, "<collection>_memories" next to the chunks'.
func Memories(ctx context.Context, cfg config.Config) (*milvus.Index, error) {
	o := milvusOptions(cfg)
	o.Collection += "_memories"
	return milvus.Open(ctx, o)
}

func milvusOptions(cfg config.Config) milvus.Options {
	v := cfg.Vector
	return milvus.Options{Addr: v.MilvusAddr, Token: v.MilvusToken, Collection: v.Collection, Dim: v.Dim, CallTimeout: v.CallTimeout}
}

// Blobs opens the documents bucket (stored sources and staging).
func Blobs(ctx context.Context, cfg config.Config) (*s3.Store, error) {
	b := cfg.Blob
	return s3.New(ctx, s3.Options{Bucket: b.Bucket, Region: b.Region, Endpoint: b.Endpoint, UsePathStyle: b.UsePathStyle})
}
