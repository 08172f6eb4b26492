// Package stores opens the cloud adapters every store-holding Lambda reads, from the configuration
// awsenv.Load returns: Aurora MySQL (with its keyword index, package aurora) and Milvus through the
// official client's adapter, which creates and loads the collections. The documents bucket is package
// bucket's and Redis httpfn's, so the functions without them (askstep; query has no S3) do not link their
// adapters; the embedded adapters never reach a binary (deptest). The query function does not import
// this package: it opens Aurora with package aurora and its collections Late (never creating them).
// migrate opens its single connection itself.
package stores

import (
	"context"

	"github.com/docmind/docmind/functions/internal/stores/aurora"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Cloud are the adapters a function opened.
type Cloud struct {
	SQL     *sqldb.DB
	Vectors *milvus.Index
}

// Open opens Aurora MySQL with the configured pool (DOCMIND_SQL_MAX_OPEN_CONNS per instance), then the
// chunks' Milvus collection, stopping at the first error. Neither dials: both connect at first use.
func Open(ctx context.Context, cfg config.Config) (Cloud, error) {
	db, err := aurora.Open(ctx, cfg)
	if err != nil {
		return Cloud{}, err
	}
	vec, err := milvus.Open(ctx, milvusOptions(cfg, cfg.Vector.Collection))
	if err != nil {
		return Cloud{}, err
	}
	db.SetMetadataMirror(vec.SetDocumentMeta) // rows keep their document's metadata (docs/metadata-filters.md)
	return Cloud{SQL: db, Vectors: vec}, nil
}

// Vectors opens (creating and loading when needed) the named collection: the opener httpfn.Open takes
// from the api function.
func Vectors(ctx context.Context, cfg config.Config, collection string) (store.VectorIndex, error) {
	ix, err := milvus.Open(ctx, milvusOptions(cfg, collection))
	if err != nil {
		return nil, err
	}
	return ix, nil
}

func milvusOptions(cfg config.Config, collection string) milvus.Options {
	v := cfg.Vector
	// Lazy: a cold start dials nothing; the first call connects and creates or loads the collection
	return milvus.Options{Addr: v.MilvusAddr, Token: v.MilvusToken, Collection: collection, Dim: v.Dim, CallTimeout: v.CallTimeout, Lazy: true}
}
