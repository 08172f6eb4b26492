// Package milvustest is a knowledge base laid out as on AWS, for the tests of the question paths'
// vector leg: documents ingested by the ingest stages into a Milvus collection served by the
// in-process Milvus server (fakemilvus), their metadata mirrored onto the rows as the deployed stores
// do, with the SQL record on SQLite and BM25 for the keyword leg. Tests only: it links the embedded
// adapters, which deptest keeps out of every binary.
package milvustest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
	"github.com/docmind/docmind/shared/wire"
)

// Collection is the collection New ingests into.
const Collection = "docmind_chunks"

// Doc is one file to ingest: its name (markdown) and text, front matter included.
type Doc struct {
	Name, Text string
}

// KB is the knowledge base "handbook" of cfg.Tenant over the fake Milvus.
type KB struct {
	DB      *sqldb.DB
	Keyword *bm25.Index
	// Vectors is the ingest side's index (it created the collection with the metadata field); the
	// question paths under test may open their own on Server's address.
	Vectors *milvus.Index
	Server  *fakemilvus.Server
	KB      rag.KnowledgeBase
	// IDs maps each file's name to its document id.
	IDs map[string]string
	svc *ingest.Service
}

// New ingests docs into the knowledge base "handbook" with cfg's embedder, BM25 parameters, vector
// dimension and chunking, as the ingestion functions would (metadata mirrored onto the rows by the
// commit's metadata write); it fails the test unless every document ends ready. Everything is closed
// when the test ends.
func New(t testing.TB, cfg config.Config, docs []Doc) *KB {
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
	srv := fakemilvus.Start(t)
	ix, err := milvus.Open(ctx, milvus.Options{Addr: srv.Addr(), Collection: Collection, Dim: cfg.Vector.Dim, StrongSearch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	if !ix.KeepsMetadata() {
		t.Fatal("the new collection keeps no metadata")
	}
	db.SetMetadataMirror(ix.SetDocumentMeta)
	r := cfg.Retrieval
	kb := &KB{DB: db, Vectors: ix, Server: srv, IDs: map[string]string{},
		Keyword: bm25.New(bm25.Params{K1: r.BM25K1, B: r.BM25B, TitleWeight: r.BM25TitleWeight, ContextWeight: r.BM25ContextWeight})}
	emb, err := wire.Embedder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := &ingest.Stages{Records: db, Vectors: ix, Blobs: memblob.New(), Staging: memblob.New(), Embedder: emb, Keyword: kb.Keyword,
		Limits: extract.Limits{MaxFileBytes: 1 << 20}, Chunking: chunk.Options{ChildChars: cfg.Chunking.ChildChars, Overlap: cfg.Chunking.Overlap, ParentChars: cfg.Chunking.ParentChars}}
	kb.svc = &ingest.Service{Runner: &ingest.Runner{Stages: st, Policy: ingest.DefaultPolicy()}}
	for _, d := range docs {
		kb.IDs[d.Name] = kb.Ingest(t, cfg.Tenant, d)
	}
	if kb.KB, err = db.GetKBByName(ctx, cfg.Tenant, "handbook"); err != nil {
		t.Fatal(err)
	}
	if err := ix.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	return kb
}

// Ingest adds d to the knowledge base "handbook" of tenant (another tenant's, to check scoping) and
// returns its document id; it fails the test unless the document ends ready.
func (kb *KB) Ingest(t testing.TB, tenant string, d Doc) string {
	t.Helper()
	rep, err := kb.svc.Ingest(context.Background(), tenant, ingest.Source{KBName: "handbook", URI: "inbox/handbook/" + d.Name, Name: d.Name, Data: []byte(d.Text)})
	if err != nil || rep.Status != rag.StatusReady {
		t.Fatalf("ingest %s: %+v %v", d.Name, rep, err)
	}
	return rep.DocumentID
}

// Searches returns the filter expressions of the searches Milvus received since the last call, and
// forgets them.
func (kb *KB) Searches() []string {
	var out []string
	for _, c := range kb.Server.Calls("Search") {
		out = append(out, c.Expr)
	}
	kb.Server.ResetCalls()
	return out
}

// TravelDocs are two policies alike but for their year (front matter) and amount (travel-2024.md: 100
// euros, travel-2025.md: 140 euros), and four documents about other things: a question about the
// allowance finds both policies equally, so only a filter decides which one is cited.
func TravelDocs() []Doc {
	policy := func(year, amount int) string {
		return fmt.Sprintf("---\nyear: %d\ndept: finance\n---\n# Travel allowance\n\nThe daily travel allowance for business trips is %d euros per day.\n", year, amount)
	}
	docs := []Doc{{Name: "travel-2024.md", Text: policy(2024, 100)}, {Name: "travel-2025.md", Text: policy(2025, 140)}}
	for i, topic := range []string{"Support answers on weekdays from 9 to 17.", "Laptops are replaced every four years.",
		"Parental leave is sixteen weeks.", "Expense reports are filed within a month."} {
		docs = append(docs, Doc{Name: fmt.Sprintf("other-%d.md", i),
			Text: fmt.Sprintf("---\nyear: %d\ndept: ops\n---\n# Note %d\n\n%s\n", 2024+i%2, i, topic)})
	}
	return docs
}
