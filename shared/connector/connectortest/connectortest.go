// Package connectortest builds a real embedded ingestion (SQLite in memory, a blob folder, the
// embedded vector index, the BM25 index and the offline embedder) for connector tests, so a sync is
// checked end to end: documents ready, chunks indexed, a query finding the new text.
package connectortest

import (
	"context"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/fsblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// Tenant is the tenant every Env works in.
const Tenant = "t1"

// Env is one knowledge base fed by one connector.
type Env struct {
	DB       *sqldb.DB
	Service  *ingest.Service
	Engine   *connector.Engine
	Keywords *bm25.Index
	KB       rag.KnowledgeBase
	Name     string // the connector's name
}

// New migrates a fresh database, creates knowledge base "kb" and a connector called name of type typ
// with config, and returns the engine wired to the real ingestion.
func New(t *testing.T, name, typ, config string) *Env {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	blobs, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kw := bm25.New(bm25.DefaultParams())
	st := &ingest.Stages{Records: db, Vectors: memvec.New(64), Blobs: blobs, Embedder: embed.NewOffline(64), Keyword: kw,
		Chunking: chunk.Options{ChildChars: 300, Overlap: 30, ParentChars: 1200}}
	pol := ingest.DefaultPolicy()
	pol.Sleep = func(context.Context, time.Duration) error { return nil }
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: pol}, Leases: db}
	kb := rag.KnowledgeBase{Tenant: Tenant, Name: "kb"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	c := rag.Connector{Tenant: Tenant, Name: name, KBID: kb.ID, Type: typ, Config: config}
	if err := db.CreateConnector(ctx, &c); err != nil {
		t.Fatal(err)
	}
	eng := &connector.Engine{Indexer: svc, Documents: db, State: db, Leases: db, Metadata: db, ProgressEvery: 2}
	return &Env{DB: db, Service: svc, Engine: eng, Keywords: kw, KB: kb, Name: name}
}

// Sync runs one sync of the connector and fails the test on an error.
func (e *Env) Sync(t *testing.T, src connector.Source, opt connector.Options) connector.Result {
	t.Helper()
	res, err := e.Engine.Sync(context.Background(), Tenant, e.Name, src, opt)
	if err != nil {
		t.Fatalf("sync: %v (result %+v)", err, res)
	}
	return res
}

// Docs returns the knowledge base's live documents by file name.
func (e *Env) Docs(t *testing.T) map[string]rag.Document {
	t.Helper()
	docs, err := e.DB.ListDocuments(context.Background(), Tenant, e.KB.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]rag.Document{}
	for _, d := range docs {
		if d.Status != rag.StatusDeleted {
			out[d.FileName] = d
		}
	}
	return out
}

// Text returns the concatenated chunk text of a document.
func (e *Env) Text(t *testing.T, docID string) string {
	t.Helper()
	rows, err := e.DB.ListChunks(context.Background(), Tenant, docID)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	for _, c := range rows {
		s += c.Content + "\n"
	}
	return s
}

// TopDocument is the document of the best BM25 hit for query in the knowledge base ("" when none):
// what an answer would cite first.
func (e *Env) TopDocument(t *testing.T, query string) string {
	t.Helper()
	hits, err := e.Keywords.Search(context.Background(), query, 1, rag.Filter{Tenant: Tenant, KBIDs: []string{e.KB.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 {
		return ""
	}
	return hits[0].DocumentID
}
