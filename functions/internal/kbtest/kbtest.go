// Package kbtest is an embedded knowledge base with one ingested document, for the tests of the
// handlers that read one (api, askstep, query). Tests only: it links the embedded adapters, which
// deptest keeps out of every binary (a main never imports it).
package kbtest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
	"github.com/docmind/docmind/shared/wire"
)

// Handbook is the document New ingests: the refund window ("30 days") is what the read-side tests
// ask for and expect cited from billing.md.
const Handbook = `# Refunds

Annual plans can be refunded within 30 days of purchase. Monthly plans are not refundable.

# Support

Support answers on weekdays from 9 to 17.
`

// Library is an embedded knowledge base as a handler under test reads it.
type Library struct {
	DB      *sqldb.DB // SQLite in the test's temp dir, migrated
	Keyword *bm25.Index
	Vectors *memvec.Index
	KB      rag.KnowledgeBase // "handbook", holding billing.md
}

// New ingests Handbook as billing.md (source inbox/handbook/billing.md) into the knowledge base
// "handbook" of cfg.Tenant, with cfg's embedder, BM25 parameters, vector dimension and chunking, as the
// ingestion functions would; it fails the test unless the document ends ready. The database is closed
// when the test ends.
func New(t testing.TB, cfg config.Config) *Library {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	r := cfg.Retrieval
	l := &Library{DB: db, Keyword: bm25.New(bm25.Params{K1: r.BM25K1, B: r.BM25B, TitleWeight: r.BM25TitleWeight, ContextWeight: r.BM25ContextWeight}),
		Vectors: memvec.New(cfg.Vector.Dim)}
	emb, err := wire.Embedder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := &ingest.Stages{Records: db, Vectors: l.Vectors, Blobs: memblob.New(), Staging: memblob.New(), Embedder: emb, Keyword: l.Keyword,
		Limits: extract.Limits{MaxFileBytes: 1 << 20}, Chunking: chunk.Options{ChildChars: cfg.Chunking.ChildChars, Overlap: cfg.Chunking.Overlap, ParentChars: cfg.Chunking.ParentChars}}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}}
	rep, err := svc.Ingest(ctx, cfg.Tenant, ingest.Source{KBName: "handbook", URI: "inbox/handbook/billing.md", Name: "billing.md", Data: []byte(Handbook)})
	if err != nil || rep.Status != rag.StatusReady {
		t.Fatalf("ingest: %+v %v", rep, err)
	}
	if l.KB, err = db.GetKBByName(ctx, cfg.Tenant, "handbook"); err != nil {
		t.Fatal(err)
	}
	return l
}
