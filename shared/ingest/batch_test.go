package ingest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// flushCounter counts the vector index's Flush calls (each is one vector-log fsync in memvec).
type flushCounter struct {
	*faultyVectors
	flushes atomic.Int64
}

func (f *flushCounter) Flush(ctx context.Context) error {
	f.flushes.Add(1)
	return f.faultyVectors.Flush(ctx)
}

// commitCounter counts batched commits and batched metadata writes, and can fail the next n of each.
type commitCounter struct {
	*faultyRecords
	commits    atomic.Int64
	fail       atomic.Int64
	metaWrites atomic.Int64
	failMeta   atomic.Int64
}

// counted counts a call and fails it, Unavailable with why, while fail is above zero (taking one).
func counted(calls, fail *atomic.Int64, why string) error {
	calls.Add(1)
	if fail.Add(-1) >= 0 {
		return rag.E("fake", rag.KindUnavailable, errors.New(why))
	}
	fail.Store(0)
	return nil
}

func (c *commitCounter) SetDocumentsMetadata(ctx context.Context, tenant string, items []sqldb.DocumentMetadata) error {
	if err := counted(&c.metaWrites, &c.failMeta, "database is locked"); err != nil {
		return err
	}
	return c.faultyRecords.SetDocumentsMetadata(ctx, tenant, items)
}

func (c *commitCounter) CommitDocuments(ctx context.Context, tenant string, docs []rag.DocumentChunks) error {
	if err := counted(&c.commits, &c.fail, "connection reset during the batch commit"); err != nil {
		return err
	}
	return c.faultyRecords.CommitDocuments(ctx, tenant, docs)
}

func batchEnv(t *testing.T) (*env, *flushCounter, *commitCounter) {
	e := newEnv(t)
	fc := &flushCounter{faultyVectors: e.vec}
	cc := &commitCounter{faultyRecords: e.db}
	e.svc.Runner.Stages.Vectors, e.svc.Runner.Stages.Records = fc, cc
	return e, fc, cc
}

func batchSources(n int) []Source {
	srcs := make([]Source, n)
	for i := range srcs {
		srcs[i] = Source{KBName: "kb", URI: fmt.Sprintf("doc%d.md", i), Name: fmt.Sprintf("doc%d.md", i),
			Data: manual(fmt.Sprintf("Document %d allows %d users and %d projects per workspace.", i, i+3, i*7))}
	}
	return srcs
}

// A batch of new documents lands with one embeddings call per embedGroupTexts texts, one vector flush
// and one SQL transaction,
// and ends exactly where ingesting them one by one ends: the same chunk ids, every child with its vector.
func TestIngestBatchMatchesIngest(t *testing.T) {
	ctx := context.Background()
	e, fc, cc := batchEnv(t)
	srcs := batchSources(12)
	reps := e.svc.IngestBatch(ctx, tenant, srcs)

	one := newEnv(t)
	for i, rep := range reps {
		if rep.Status != rag.StatusReady || rep.Error != "" || rep.Chunks == 0 {
			t.Fatalf("report %d = %+v, want ready with chunks", i, rep)
		}
		e.consistent(t, rep.DocumentID)
		doc, err := e.db.GetDocument(ctx, tenant, rep.DocumentID)
		if err != nil || doc.Status != rag.StatusReady || doc.ChunkCount != rep.Chunks || doc.ContentHash == "" || !strings.Contains(doc.StageMillis, "embed") {
			t.Fatalf("document %d = %+v, %v; want ready, %d chunks, a content hash and stage timings", i, doc, err, rep.Chunks)
		}
		want, err := one.svc.Ingest(ctx, tenant, srcs[i])
		if err != nil {
			t.Fatal(err)
		}
		if rep.Chunks != want.Chunks || rep.Parents != want.Parents || rep.Embedded != want.Embedded {
			t.Errorf("document %d: batch gave %d chunks (%d parents, %d embedded), Ingest %d (%d, %d)", i, rep.Chunks, rep.Parents, rep.Embedded,
				want.Chunks, want.Parents, want.Embedded)
		}
		// the batch writes every document's metadata in one transaction, the same as Ingest writes it
		gm, err1 := e.db.GetDocumentMetadata(ctx, tenant, rep.DocumentID)
		wm, err2 := one.db.GetDocumentMetadata(ctx, tenant, want.DocumentID)
		delete(gm, "created")
		delete(gm, "modified")
		delete(wm, "created")
		delete(wm, "modified")
		if err1 != nil || err2 != nil || len(gm) < 3 || !reflect.DeepEqual(gm, wm) {
			t.Errorf("document %d: metadata %v (%v) in batch, %v (%v) one by one", i, gm, err1, wm, err2)
		}
		got, _ := e.db.ListChunks(ctx, tenant, rep.DocumentID)
		ref, _ := one.db.ListChunks(ctx, tenant, want.DocumentID)
		if len(got) != len(ref) {
			t.Fatalf("document %d: %d rows in batch, %d one by one", i, len(got), len(ref))
		}
		for j := range got { // ids derive from the document id, which differs: compare what they are made of
			if got[j].ContentHash != ref[j].ContentHash || got[j].Level != ref[j].Level || got[j].Index != ref[j].Index {
				t.Errorf("document %d row %d differs: %+v vs %+v", i, j, got[j], ref[j])
			}
		}
	}
	texts := 0
	for _, rep := range reps {
		texts += rep.Embedded
	}
	if got, want := e.emb.calls.Load(), int64((texts+embedGroupTexts-1)/embedGroupTexts); got != want {
		t.Errorf("embeddings calls = %d for %d texts, want %d (one per %d texts)", got, texts, want, embedGroupTexts)
	}
	if got := fc.flushes.Load(); got != 1 {
		t.Errorf("vector flushes = %d, want 1 for the batch (one fsync)", got)
	}
	if got := cc.commits.Load(); got != 1 {
		t.Errorf("SQL batch commits = %d, want 1", got)
	}
	if got := cc.metaWrites.Load(); got != 1 {
		t.Errorf("batched metadata writes = %d, want 1", got)
	}

	// again, unchanged: every source skipped, nothing embedded
	before := e.emb.texts.Load()
	for i, rep := range e.svc.IngestBatch(ctx, tenant, srcs) {
		if !rep.Skipped || rep.Status != rag.StatusReady {
			t.Errorf("re-ingest %d = %+v, want skipped and ready", i, rep)
		}
	}
	if got := e.emb.texts.Load() - before; got != 0 {
		t.Errorf("re-ingesting unchanged sources embedded %d texts, want 0", got)
	}
}

// A failed batched metadata write (a busy database) costs no document its metadata: each is written again
// on its own.
func TestIngestBatchMetadataFallsBack(t *testing.T) {
	ctx := context.Background()
	e, _, cc := batchEnv(t)
	cc.failMeta.Store(1)
	reps := e.svc.IngestBatch(ctx, tenant, batchSources(4))
	if got := cc.metaWrites.Load(); got != 1 {
		t.Fatalf("batched metadata writes = %d, want 1 (the failed one)", got)
	}
	for i, rep := range reps {
		m, err := e.db.GetDocumentMetadata(ctx, tenant, rep.DocumentID)
		if rep.Status != rag.StatusReady || err != nil || m["language"] != "en" || m["file_type"] != "md" {
			t.Errorf("document %d: %+v, metadata %v, %v; want ready with its metadata", i, rep, m, err)
		}
	}
}

// A failed batch commit marks nothing ready by itself: every document then goes through Ingest and ends
// ready and consistent.
func TestIngestBatchCommitFailureFallsBack(t *testing.T) {
	ctx := context.Background()
	e, _, cc := batchEnv(t)
	cc.fail.Store(1)
	for i, rep := range e.svc.IngestBatch(ctx, tenant, batchSources(5)) {
		if rep.Status != rag.StatusReady || rep.Error != "" {
			t.Fatalf("report %d = %+v, want ready after the fallback", i, rep)
		}
		e.consistent(t, rep.DocumentID)
	}
	if got := cc.commits.Load(); got != 1 {
		t.Errorf("batch commits = %d, want 1 (the failed one)", got)
	}
}

// ING-06 in a batch: a poison source fails with its reason after one parser run; the rest land.
func TestIngestBatchPoisonSource(t *testing.T) {
	ctx := context.Background()
	e, _, _ := batchEnv(t)
	var calls atomic.Int64
	e.svc.Runner.Stages.Parse = func(ctx context.Context, name string, data []byte, l extract.Limits) (extract.Result, error) {
		if name != "doc2.md" {
			return extract.Extract(ctx, name, data, l)
		}
		return extract.Guard(ctx, "poison", l, func(context.Context) (extract.Result, error) {
			calls.Add(1)
			panic("index out of range in a hostile file")
		})
	}
	reps := e.svc.IngestBatch(ctx, tenant, batchSources(4))
	for i, rep := range reps {
		if i == 2 {
			doc, _ := e.db.GetDocument(ctx, tenant, rep.DocumentID)
			if rep.Status != rag.StatusFailed || doc.Status != rag.StatusFailed || doc.Error == "" {
				t.Errorf("poison report %+v, document %+v; want failed with a reason", rep, doc)
			}
			if rows, vecs := e.state(t, rep.DocumentID); rows != 0 || vecs != 0 {
				t.Errorf("poison document has %d rows and %d vectors, want none", rows, vecs)
			}
			continue
		}
		if rep.Status != rag.StatusReady {
			t.Errorf("report %d = %+v, want ready", i, rep)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("parser invocations for the poison source = %d, want 1", got)
	}
}

// An embeddings error in one group fails the batch path only: every document then goes through Ingest
// (with its retries) and ends ready.
func TestIngestBatchEmbedFailureFallsBack(t *testing.T) {
	ctx := context.Background()
	e, _, cc := batchEnv(t)
	e.emb.fail.Store(1)
	for i, rep := range e.svc.IngestBatch(ctx, tenant, batchSources(9)) {
		if rep.Status != rag.StatusReady || rep.Error != "" {
			t.Fatalf("report %d = %+v, want ready after the fallback", i, rep)
		}
		e.consistent(t, rep.DocumentID)
	}
	if got := cc.commits.Load(); got != 0 {
		t.Errorf("batch commits = %d, want 0 (the batch failed before its commit)", got)
	}
}
