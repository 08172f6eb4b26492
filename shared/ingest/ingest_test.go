package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/fsblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

const tenant = "t1"

// countingEmbedder counts texts sent and can fail the next n calls.
type countingEmbedder struct {
	*embed.Offline
	texts atomic.Int64
	calls atomic.Int64
	fail  atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls.Add(1)
	if c.fail.Load() > 0 {
		c.fail.Add(-1)
		return nil, rag.E("fake", rag.KindUnavailable, errors.New("429 rate limited"))
	}
	c.texts.Add(int64(len(texts)))
	return c.Offline.Embed(ctx, texts)
}

// faultyVectors wraps an index and fails chosen calls.
type faultyVectors struct {
	store.VectorIndex
	mu         sync.Mutex
	failUpsert int // fail the next n upserts
	failAlways bool
	upserts    int
}

func (f *faultyVectors) Upsert(ctx context.Context, recs []rag.VectorRecord) error {
	f.mu.Lock()
	f.upserts++
	fail := f.failAlways || f.failUpsert > 0
	if f.failUpsert > 0 {
		f.failUpsert--
	}
	f.mu.Unlock()
	if fail {
		// half the batch lands before the failure: the worst case for cleanup
		f.VectorIndex.Upsert(ctx, recs[:len(recs)/2])
		return rag.E("fake", rag.KindUnavailable, errors.New("vector store connection reset"))
	}
	return f.VectorIndex.Upsert(ctx, recs)
}

// faultyRecords fails chosen relational calls once.
type faultyRecords struct {
	*sqldb.DB
	failApply  atomic.Int64
	failUpdate atomic.Int64
}

func (f *faultyRecords) ApplyChunks(ctx context.Context, tenant, docID string, add []rag.Chunk, remove []string) error {
	if f.failApply.Load() > 0 {
		f.failApply.Add(-1)
		return rag.E("fake", rag.KindUnavailable, errors.New("crash after vector upsert, before the SQL commit"))
	}
	return f.DB.ApplyChunks(ctx, tenant, docID, add, remove)
}

func (f *faultyRecords) UpdateDocument(ctx context.Context, d *rag.Document) error {
	if d.Status == rag.StatusReady && f.failUpdate.Load() > 0 {
		f.failUpdate.Add(-1)
		return rag.E("fake", rag.KindUnavailable, errors.New("crash after the SQL commit, before the status update"))
	}
	return f.DB.UpdateDocument(ctx, d)
}

type env struct {
	svc  *Service
	db   *faultyRecords
	vec  *faultyVectors
	emb  *countingEmbedder
	tick []time.Duration
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	blobs, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: &faultyRecords{DB: db}, vec: &faultyVectors{VectorIndex: memvec.New(64)}, emb: &countingEmbedder{Offline: embed.NewOffline(64)}}
	st := &Stages{Records: e.db, Vectors: e.vec, Blobs: blobs, Embedder: e.emb, Chunking: chunk.Options{ChildChars: 120, Overlap: 20, ParentChars: 400}}
	pol := DefaultPolicy()
	pol.Sleep = func(ctx context.Context, d time.Duration) error { e.tick = append(e.tick, d); return nil }
	e.svc = &Service{Runner: &Runner{Stages: st, Policy: pol}}
	return e
}

func (e *env) state(t *testing.T, docID string) (rows, vectors int) {
	t.Helper()
	ctx := context.Background()
	cs, err := e.db.ListChunks(ctx, tenant, docID)
	if err != nil {
		t.Fatal(err)
	}
	n, err := e.vec.Count(ctx, rag.Filter{Tenant: tenant, DocumentIDs: []string{docID}})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs), n
}

// consistent checks that every child row has its vector and no vector lacks a row (0 orphans, 0 missing).
func (e *env) consistent(t *testing.T, docID string) {
	t.Helper()
	ctx := context.Background()
	cs, _ := e.db.ListChunks(ctx, tenant, docID)
	children := 0
	for _, c := range cs {
		if c.Level == rag.LevelChild {
			children++
		}
	}
	n, _ := e.vec.Count(ctx, rag.Filter{Tenant: tenant, DocumentIDs: []string{docID}})
	if n != children {
		t.Fatalf("document %s: %d child rows, %d vectors (orphans or missing)", docID, children, n)
	}
}

func manual(paragraph2 string) []byte {
	var b strings.Builder
	b.WriteString("# Product A\n\n## Installation\n\n")
	for i := range 6 {
		fmt.Fprintf(&b, "Step %d: run the installer with option %d and wait for it to finish. ", i, i)
	}
	b.WriteString("\n\n## Limits\n\n" + paragraph2 + "\n\n# Product B\n\n## Installation\n\nProduct B installs from the store in one click.\n\n| plan | price |\n| --- | --- |\n| basic | 10 |\n")
	return []byte(b.String())
}

func TestIngestReingestChangeDelete(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	src := Source{KBName: "manuals", URI: "inbox/manuals/a.md", Name: "a.md", Data: manual("The age limit is 65 years.")}
	rep, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != rag.StatusReady || rep.Chunks < 4 || rep.Embedded != rep.Chunks || rep.Reused != 0 || rep.Parents < 2 {
		t.Fatalf("first ingest: %+v", rep)
	}
	e.consistent(t, rep.DocumentID)
	doc, _ := e.db.GetDocument(ctx, tenant, rep.DocumentID)
	if doc.ChunkCount != rep.Chunks || doc.ContentHash == "" || !strings.Contains(doc.StageMillis, `"index"`) || doc.FileName != "a.md" {
		t.Fatalf("document row: %+v", doc)
	}
	kb, _ := e.db.GetKBByName(ctx, tenant, "manuals")
	if kb.Version != 1 {
		t.Fatalf("kb version %d after one ingest", kb.Version)
	}

	// unchanged: nothing is embedded
	before := e.emb.texts.Load()
	again, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil || !again.Skipped || again.Embedded != 0 || e.emb.texts.Load() != before {
		t.Fatalf("unchanged re-ingest: %+v %v (embedded %d)", again, err, e.emb.texts.Load()-before)
	}

	// one paragraph changed: only its chunk is embedded, the vanished one deleted
	oldRows, _ := e.db.ListChunks(ctx, tenant, rep.DocumentID)
	src.Data = manual("The age limit is 70 years since 2024.")
	upd, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil {
		t.Fatal(err)
	}
	newRows, _ := e.db.ListChunks(ctx, tenant, rep.DocumentID)
	changed := 0
	oldHashes := map[string]bool{}
	for _, c := range oldRows {
		if c.Level == rag.LevelChild {
			oldHashes[c.ContentHash] = true
		}
	}
	for _, c := range newRows {
		if c.Level == rag.LevelChild && !oldHashes[c.ContentHash] {
			changed++
		}
	}
	if changed != 1 || upd.Embedded != 1 || upd.Reused != upd.Chunks-1 || upd.Deleted < 1 {
		t.Fatalf("one paragraph changed: %d changed chunks, report %+v", changed, upd)
	}
	e.consistent(t, rep.DocumentID)
	hits, _ := e.vec.Search(ctx, e.emb.vector("age limit 70 years"), 1, rag.Filter{Tenant: tenant})
	if len(hits) == 0 || !strings.Contains(chunkText(t, e, hits[0].ChunkID), "70 years") {
		t.Fatalf("updated text not found first: %+v", hits)
	}

	// delete: nothing left
	if err := e.svc.Delete(ctx, tenant, rep.DocumentID); err != nil {
		t.Fatal(err)
	}
	if rows, vecs := e.state(t, rep.DocumentID); rows != 0 || vecs != 0 {
		t.Fatalf("after delete: %d rows, %d vectors", rows, vecs)
	}
	if _, err := e.db.GetDocument(ctx, tenant, rep.DocumentID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("document row survives delete: %v", err)
	}
}

func (o *countingEmbedder) vector(s string) []float32 {
	v, _ := o.Offline.Embed(context.Background(), []string{s})
	return v[0]
}

func chunkText(t *testing.T, e *env, id string) string {
	cs, err := e.db.GetChunks(context.Background(), tenant, []string{id})
	if err != nil || len(cs) != 1 {
		t.Fatalf("chunk %s: %v", id, err)
	}
	return cs[0].Content
}

// ING-05 crash windows: each fault strikes once; the stage retry converges with 0 orphans, 0 missing
// vectors and the document ready, embedding each chunk at most once more than ideal.
func TestCrashWindowsConverge(t *testing.T) {
	cases := []struct {
		name   string
		inject func(e *env)
	}{
		{"vector store fails mid-upsert", func(e *env) { e.vec.failUpsert = 1 }},
		{"after vector upsert, before SQL commit", func(e *env) { e.db.failApply.Store(1) }},
		{"after SQL commit, before status update", func(e *env) { e.db.failUpdate.Store(1) }},
		{"embeddings API 429 then 200", func(e *env) { e.emb.fail.Store(1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			c.inject(e)
			rep, err := e.svc.Ingest(context.Background(), tenant, Source{KBName: "kb", URI: "a.md", Name: "a.md", Data: manual("x")})
			if err != nil {
				t.Fatalf("did not converge: %v", err)
			}
			if rep.Status != rag.StatusReady || rep.Retries != 1 {
				t.Fatalf("report %+v", rep)
			}
			e.consistent(t, rep.DocumentID)
			extra := e.emb.texts.Load() - int64(rep.Chunks)
			if extra > int64(rep.Chunks) {
				t.Fatalf("extra embed calls %d > N x retries", extra)
			}
			t.Logf("retries=%d extra_embedded_texts=%d backoff=%v", rep.Retries, extra, e.tick)
		})
	}
}

// A first ingest whose vector store keeps failing leaves no rows and no vectors from the attempt, and
// the document failed with the reason.
func TestFailedFirstIngestLeavesNothing(t *testing.T) {
	e := newEnv(t)
	e.vec.failAlways = true
	rep, err := e.svc.Ingest(context.Background(), tenant, Source{KBName: "kb", URI: "a.md", Name: "a.md", Data: manual("x")})
	if err == nil {
		t.Fatal("ingest succeeded against a dead vector store")
	}
	if rows, vecs := e.state(t, rep.DocumentID); rows != 0 || vecs != 0 {
		t.Fatalf("failed ingest left %d rows and %d vectors", rows, vecs)
	}
	doc, _ := e.db.GetDocument(context.Background(), tenant, rep.DocumentID)
	if doc.Status != rag.StatusFailed || !strings.Contains(doc.Error, "vector store") || rep.Retries != 3 || len(e.tick) != 3 || e.tick[2] != 4*time.Second {
		t.Fatalf("doc %+v, report %+v, backoff %v", doc, rep, e.tick)
	}
}

// A failed update keeps the previous version serving, after falling back to a full rebuild that failed too.
func TestFailedUpdateKeepsOldChunks(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	src := Source{KBName: "kb", URI: "a.md", Name: "a.md", Data: manual("old text")}
	first, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil {
		t.Fatal(err)
	}
	oldRows, oldVecs := e.state(t, first.DocumentID)
	upsertsBefore := e.vec.upserts
	e.vec.failAlways = true
	src.Data = manual("new text that will not land")
	if _, err := e.svc.Ingest(ctx, tenant, src); err == nil {
		t.Fatal("update succeeded against a dead vector store")
	}
	e.vec.failAlways = false
	rows, vecs := e.state(t, first.DocumentID)
	if rows != oldRows || vecs != oldVecs {
		t.Fatalf("after a failed update: %d rows %d vectors, want the old %d and %d", rows, vecs, oldRows, oldVecs)
	}
	doc, _ := e.db.GetDocument(ctx, tenant, first.DocumentID)
	if doc.Status != rag.StatusReady || !strings.Contains(doc.Error, "serving the previous version") {
		t.Fatalf("doc after failed update: %+v", doc)
	}
	if n := e.vec.upserts - upsertsBefore; n != 8 { // incremental: 1 + 3 retries; then the full rebuild: 1 + 3 retries
		t.Fatalf("%d upserts, want 8 (the incremental attempt and the full rebuild, each with 3 retries)", n)
	}
	// the next attempt succeeds and clears the error
	rep, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil || rep.Embedded != 1 {
		t.Fatalf("retry of the update: %+v %v", rep, err)
	}
	doc, _ = e.db.GetDocument(ctx, tenant, first.DocumentID)
	if doc.Error != "" {
		t.Fatalf("error not cleared: %q", doc.Error)
	}
	e.consistent(t, first.DocumentID)
}

// A vector index that lost a document's vectors behind our back: the strong count catches it and the
// runner rebuilds in full.
func TestLostVectorsTriggerFullRebuild(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	src := Source{KBName: "kb", URI: "a.md", Name: "a.md", Data: manual("v1")}
	first, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := e.db.GetKBByName(ctx, tenant, "kb")
	e.vec.DeleteDocument(ctx, tenant, kb.ID, first.DocumentID) // seed #27: the store silently lost data
	src.Data = manual("v2")
	rep, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil || !rep.Rebuilt || rep.Embedded != 1+rep.Chunks {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	e.consistent(t, first.DocumentID)
}

// ING-06: a parser that panics is recovered, classified terminal, never retried, and the document is
// failed with a reason after one attempt.
func TestPoisonDocument(t *testing.T) {
	e := newEnv(t)
	calls := 0
	e.svc.Runner.Stages.Parse = func(ctx context.Context, name string, data []byte, l extract.Limits) (extract.Result, error) {
		return extract.Guard(ctx, "poison", l, func(context.Context) (extract.Result, error) {
			calls++
			panic("index out of range in a hostile file")
		})
	}
	rep, err := e.svc.Ingest(context.Background(), tenant, Source{KBName: "kb", URI: "p.md", Name: "p.md", Data: []byte("# x")})
	if !rag.Is(err, rag.KindTerminal) || calls != 1 || rep.Retries != 0 {
		t.Fatalf("poison: err %v, parser invocations %d, retries %d", err, calls, rep.Retries)
	}
	doc, _ := e.db.GetDocument(context.Background(), tenant, rep.DocumentID)
	if doc.Status != rag.StatusFailed || !strings.Contains(doc.Error, "crashed") {
		t.Fatalf("doc %+v", doc)
	}
	t.Logf("invocations_per_poison_doc=%d", calls)
}

func TestUnsupportedAndBadFiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "x.exe", Name: "x.exe", Data: []byte("MZ")}); !rag.Is(err, rag.KindTerminal) {
		t.Fatalf("exe: %v", err)
	}
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "bad.docx", Name: "bad.docx", Data: []byte("not a zip")})
	if !rag.Is(err, rag.KindTerminal) || !strings.Contains(rep.Error, "zip") {
		t.Fatalf("bad docx: %v %+v", err, rep)
	}
	doc, _ := e.db.GetDocument(ctx, tenant, rep.DocumentID)
	if doc.Status != rag.StatusFailed || doc.Error == "" {
		t.Fatalf("bad docx document: %+v", doc)
	}
	if e.emb.calls.Load() != 0 {
		t.Fatal("a bad file reached the embedder")
	}
}

// ING-01 (local part): the same source ingested 50 times sequentially and 50 times 20-way concurrently
// gives one document, one set of chunks, and embeddings for N chunks only.
func TestReplayIsIdempotent(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	src := Source{KBName: "kb", URI: "s3://bucket/a.md", Name: "a.md", Data: manual("x")}
	for range 50 {
		if _, err := e.svc.Ingest(ctx, tenant, src); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for range 50 {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if _, err := e.svc.Ingest(ctx, tenant, src); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	kb, _ := e.db.GetKBByName(ctx, tenant, "kb")
	docs, _ := e.db.ListDocuments(ctx, tenant, kb.ID, "")
	if len(docs) != 1 {
		t.Fatalf("%d document rows", len(docs))
	}
	rows, vecs := e.state(t, docs[0].ID)
	ratio := float64(e.emb.texts.Load()) / float64(docs[0].ChunkCount)
	if ratio != 1 || vecs != docs[0].ChunkCount || rows == 0 {
		t.Fatalf("embed_call_ratio=%.2f vectors=%d chunks=%d", ratio, vecs, docs[0].ChunkCount)
	}
	t.Logf("dup_rows=0 dup_vectors=0 embed_call_ratio=%.2f", ratio)
}

// An update whose incremental attempt fails transiently succeeds through the full-rebuild fallback.
func TestIncrementalFailureFallsBackToFullRebuild(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	src := Source{KBName: "kb", URI: "a.md", Name: "a.md", Data: manual("v1")}
	first, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil {
		t.Fatal(err)
	}
	e.vec.failUpsert = 4 // the incremental attempt and its 3 retries
	src.Data = manual("v2")
	rep, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil || !rep.Rebuilt || rep.Embedded != 1+rep.Chunks {
		t.Fatalf("fallback: %+v %v", rep, err)
	}
	e.consistent(t, first.DocumentID)
}

// Re-processing: a document that failed (the vector store was down) is ingested again from its stored
// source once the store is back; a ready one is re-run (not skipped) and reuses its embeddings.
func TestReprocessStoredSource(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.vec.failAlways = true
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "kb", URI: "upload/up_1", Name: "a.md", Data: manual("The age limit is 65 years.")})
	if err == nil {
		t.Fatal("setup: the ingest must fail")
	}
	e.vec.failAlways = false
	doc, src, err := e.svc.Stored(ctx, tenant, rep.DocumentID)
	if err != nil || doc.Status != rag.StatusFailed || !src.Force || src.KBName != "kb" || src.URI != "upload/up_1" || !bytes.Equal(src.Data, manual("The age limit is 65 years.")) {
		t.Fatalf("Stored: %+v %+v %v", doc, src, err)
	}
	again, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil || again.Status != rag.StatusReady || again.DocumentID != rep.DocumentID {
		t.Fatalf("re-processed: %+v %v", again, err)
	}
	e.consistent(t, rep.DocumentID)
	// A ready document runs again (Force), re-using its chunks' embeddings.
	before := e.emb.texts.Load()
	_, src, _ = e.svc.Stored(ctx, tenant, rep.DocumentID)
	forced, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil || forced.Skipped || forced.Status != rag.StatusReady || forced.Embedded != 0 || forced.Reused != forced.Chunks || e.emb.texts.Load() != before {
		t.Fatalf("forced: %+v %v (embedded %d texts)", forced, err, e.emb.texts.Load()-before)
	}
	// Another tenant's document, and a document whose stored source is gone, are NotFound.
	if _, _, err := e.svc.Stored(ctx, "other", rep.DocumentID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("other tenant: %v", err)
	}
	if err := e.svc.Runner.Stages.Blobs.Delete(ctx, sourceKey(tenant, doc.KBID, doc.ID, doc.FileName)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.svc.Stored(ctx, tenant, rep.DocumentID); !rag.Is(err, rag.KindNotFound) || !strings.Contains(err.Error(), "upload it again") {
		t.Fatalf("source gone: %v", err)
	}
}
