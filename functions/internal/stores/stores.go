// Package stores opens the cloud adapters every store-holding Lambda reads, from the configuration
// awsenv.Load returns: Aurora MySQL (with its keyword index) and Milvus. The documents bucket is
// package bucket's and Redis httpfn's, so the functions without them (askstep; query has no S3) do not
// link their adapters; the embedded adapters never reach a binary (deptest). migrate opens its single
// connection itself.
package stores

import (
	"context"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Cloud are the adapters a function opened.
type Cloud struct {
	SQL     *sqldb.DB
	Vectors *milvus.Index
}

// Open opens Aurora MySQL with the configured pool (DOCMIND_SQL_MAX_OPEN_CONNS per instance), then the
// chunks' Milvus collection, stopping at the first error.
func Open(ctx context.Context, cfg config.Config) (Cloud, error) {
	db, err := mysql.Open(ctx, cfg.SQL.DSN, mysql.Options{MaxOpenConns: cfg.SQL.MaxOpenConns, ConnMaxLifetime: cfg.SQL.ConnMaxLifetime}, nil)
	if err != nil {
		return Cloud{}, err
	}
	vec, err := milvus.Open(ctx, milvusOptions(cfg))
	if err != nil {
		return Cloud{}, err
	}
	return Cloud{SQL: db, Vectors: vec}, nil
}

// Keyword is BM25 over the chunk rows in db, with the configured parameters.
func Keyword(db *sqldb.DB, cfg config.Config) *mysql.Keyword {
	r := cfg.Retrieval
	return &mysql.Keyword{DB: db, Params: bm25.Params{K1: r.BM25K1, B: r.BM25B, TitleWeight: r.BM25TitleWeight, ContextWeight: r.BM25ContextWeight}}
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
