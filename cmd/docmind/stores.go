package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/fsblob"
	"github.com/docmind/docmind/shared/store/memkv"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/redis"
	"github.com/docmind/docmind/shared/store/s3"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// Stores are the opened storage adapters. The local binary defaults to the embedded ones; each can be
// switched to its cloud twin by configuration (e.g. a laptop against a shared MySQL).
type Stores struct {
	SQL     *sqldb.DB
	Vectors store.VectorIndex
	// Memories holds the vector copies of long-term memories: its own index (collection), so that a
	// memory can never be retrieved as a document passage.
	Memories store.VectorIndex
	KV       store.KV
	Blobs    store.Blobs
	Keyword  *bm25.Index // the embedded keyword index, loaded from its snapshot and SQL at open
	keywords *bm25.Saver // keeps Keyword's snapshot current (nil without a data directory)
	// KeywordLoad says whether Keyword came from its snapshot and what it re-indexed from SQL
	KeywordLoad bm25.LoadReport
	Migrated    []int // the schema migrations this open applied
	// Opened is how long each store took to open: sql (with migrations), then keyword (the BM25 index
	// read from its snapshot, or rebuilt from SQL) and vectors side by side, so the start-up takes sql
	// plus the longer of the two (start-up figures in docs/bench/million.md).
	Opened map[string]time.Duration
	cfg    config.Config
}

// OpenStores opens every store the config names and applies pending migrations.
func OpenStores(ctx context.Context, cfg config.Config) (s *Stores, err error) {
	s = &Stores{cfg: cfg, Opened: map[string]time.Duration{}}
	start := time.Now()
	opened := func(name string) { s.Opened[name] = time.Since(start); start = time.Now() }
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	switch cfg.SQL.Driver {
	case "mysql":
		s.SQL, err = mysql.Open(ctx, cfg.SQL.DSN, mysql.Options{MaxOpenConns: cfg.SQL.MaxOpenConns, ConnMaxLifetime: cfg.SQL.ConnMaxLifetime}, nil)
	default:
		s.SQL, err = sqlite.OpenWith(cfg.SQLitePath(), nil, sqlite.Options{MmapMB: cfg.SQL.MmapMB})
	}
	if err != nil {
		return s, fmt.Errorf("open %s store: %w", cfg.SQL.Driver, err)
	}
	if s.Migrated, err = s.SQL.Migrate(ctx); err != nil {
		return s, fmt.Errorf("migrate: %w", err)
	}
	opened("sql")
	if err = s.openIndexes(ctx); err != nil {
		return s, err
	}
	if mv, ok := s.Vectors.(*milvus.Index); ok { // rows keep their document's metadata (metadata-filters.md)
		s.SQL.SetMetadataMirror(mv.SetDocumentMeta)
	}
	if s.Memories, err = openVectors(ctx, cfg, "memories"); err != nil {
		return s, fmt.Errorf("open %s memory index: %w", cfg.Vector.Driver, err)
	}
	switch cfg.KV.Driver {
	case "redis":
		s.KV = redis.New(redis.Options{Addr: cfg.KV.RedisAddr, Password: cfg.KV.RedisPassword, DB: cfg.KV.RedisDB, TLS: cfg.KV.RedisTLS, Prefix: cfg.KV.Prefix})
	default:
		s.KV = memkv.New(nil, 0)
	}
	switch cfg.Blob.Driver {
	case "s3":
		s.Blobs, err = s3.New(ctx, s3.Options{Bucket: cfg.Blob.Bucket, Region: cfg.Blob.Region, Endpoint: cfg.Blob.Endpoint, UsePathStyle: cfg.Blob.UsePathStyle})
	default:
		s.Blobs, err = fsblob.New(cfg.BlobDir())
	}
	if err != nil {
		return s, fmt.Errorf("open %s blob store: %w", cfg.Blob.Driver, err)
	}
	return s, nil
}

// openIndexes opens the keyword index and the documents' vector index side by side: they share
// nothing, and at a million chunks each takes seconds of CPU (decoding the BM25 snapshot, rebuilding
// the vector index's postings), so a start-up on two cores takes about the longer of the two instead of
// their sum. A failure of either cancels the other's load from SQL; whatever opened is closed by the
// caller's Close.
func (s *Stores) openIndexes(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var kerr, verr error
	var kd, vd time.Duration
	var wg sync.WaitGroup
	wg.Go(func() {
		start := time.Now()
		if s.Keyword, s.keywords, s.KeywordLoad, kerr = openKeyword(ctx, s.cfg, s.SQL); kerr != nil {
			cancel()
		}
		kd = time.Since(start)
	})
	wg.Go(func() {
		start := time.Now()
		if s.Vectors, verr = openVectors(ctx, s.cfg, ""); verr != nil {
			cancel()
		}
		vd = time.Since(start)
	})
	wg.Wait()
	s.Opened["keyword"], s.Opened["vectors"] = kd, vd
	if verr != nil {
		return fmt.Errorf("open %s vector index: %w", s.cfg.Vector.Driver, verr)
	}
	if kerr != nil {
		return fmt.Errorf("build the keyword index: %w", kerr)
	}
	return nil
}

// openVectors opens the documents' vector index (name "") or a named one beside it: the file
// <name>.bin, or the collection <collection>_<name>. A failure returns a nil interface, never an
// interface holding a nil pointer (which Close would call).
func openVectors(ctx context.Context, cfg config.Config, name string) (store.VectorIndex, error) {
	if cfg.Vector.Driver == "milvus" {
		coll := cfg.Vector.Collection
		if name != "" {
			coll += "_" + name
		}
		ix, err := milvus.Open(ctx, milvus.Options{Addr: cfg.Vector.MilvusAddr, Token: cfg.Vector.MilvusToken,
			Collection: coll, Dim: cfg.Vector.Dim, CallTimeout: cfg.Vector.CallTimeout})
		if err != nil {
			return nil, err
		}
		return ix, nil
	}
	file := "vectors.bin"
	if name != "" {
		file = name + ".bin"
	}
	ix, err := memvec.OpenWith(filepath.Join(cfg.DataDir, file), cfg.Vector.Dim, memvec.Options{Quant: cfg.Vector.Quant, Rescore: cfg.Vector.Rescore, Logf: func(f string, a ...any) { slog.Warn(fmt.Sprintf(f, a...)) }})
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// Checks are the health probes of the stores.
func (s *Stores) Checks() []httpapi.Check {
	return []httpapi.Check{
		{Name: "sql", Driver: s.cfg.SQL.Driver, Probe: s.SQL.Ping},
		{Name: "vector", Driver: s.cfg.Vector.Driver, Probe: func(ctx context.Context) error {
			_, err := s.Vectors.Count(ctx, rag.Filter{Tenant: s.cfg.Tenant})
			return err
		}},
		{Name: "kv", Driver: s.cfg.KV.Driver, Probe: s.KV.Ping},
		{Name: "blob", Driver: s.cfg.Blob.Driver, Probe: func(ctx context.Context) error {
			_, err := s.Blobs.Stat(ctx, "healthz")
			if rag.Is(err, rag.KindNotFound) {
				return nil // reachable; the object need not exist
			}
			return err
		}},
	}
}

// Close flushes and closes every opened store.
func (s *Stores) Close() error {
	var errs []error
	if s.Vectors != nil {
		errs = append(errs, s.Vectors.Close())
	}
	if s.Memories != nil {
		errs = append(errs, s.Memories.Close())
	}
	if s.KV != nil {
		errs = append(errs, s.KV.Close())
	}
	closeKeyword(s.keywords) // reads SQL: before it closes
	if s.SQL != nil {
		errs = append(errs, s.SQL.Close())
	}
	return errors.Join(errs...)
}
