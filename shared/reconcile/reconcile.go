// Package reconcile is the consistency check: it compares the relational store (the record of what
// should exist), the vector index and the blob store, reports every class of drift between them, and
// optionally repairs it. The same Checker runs as `docmind reconcile`, on a ticker inside `docmind serve`
// and in the scheduled consistency Lambda; it is pure over the small ports declared here.
//
// What counts as drift, and its repair (Classes lists the names):
//
//   - deleted_knowledge_bases (knowledge bases): a knowledge-base delete that was recorded but did not
//     finish. Repair: finish it (its documents, vectors, sources and rows go; the drop folder stays
//     hidden). The knowledge base's documents, vectors and blobs are not counted in other classes.
//   - ready_without_vectors (documents): a ready document whose child rows name vectors the index does
//     not hold. Repair: embed those children's stored text again and upsert them.
//   - vectors_without_rows (vectors): a vector whose document is unknown, or whose id is not one of its
//     document's child rows (a stale or wrong-version vector). Repair: delete it.
//   - rows_of_deleted_documents (documents): a document marked deleted whose delete was interrupted; its
//     rows, vectors and blobs may remain. Repair: finish the delete. Also counted here, one per document
//     id (status chunk_rows_without_document): chunk rows whose document row is gone, which a delete
//     racing a write of chunks leaves (when Records implements ChunkOrphanRecords). Repair: delete them.
//   - stuck_documents (documents): pending or processing for longer than StuckAfter. Repair: run the
//     stages again from the stored source; a document whose source is gone is marked failed.
//   - sources_without_document (objects): a stored source under sources/<tenant>/<kb>/<doc>/ whose
//     document does not exist, or a drop-folder file that has no document. Repair: delete the object;
//     ingest the drop-folder file.
//   - documents_without_source (documents): a ready document whose stored source is gone; or (status
//     inbox, when the Inbox implements InboxPresence) a ready drop-folder document, unchanged for Grace,
//     whose file is no longer in the drop folder: the removal's event was never delivered, dead-lettered,
//     or happened while nothing watched. Repair: ingest it again from the drop folder when the file is
//     there, or from its original (Originals: a file:// path still on disk), else delete the document
//     (its source was removed and the removal was missed).
//   - stale_versions (documents, when the Inbox implements SourceVersions): a ready drop-folder
//     document, unchanged for Grace, prepared at an S3 sequencer below the newest put recorded for its
//     source: that version's execution gave up (its lease was held for longer than its retries) and its
//     follow-up never started, so the document serves older content. Repair: start the ingestion of
//     the newest recorded put.
//   - staging_leftovers (objects): staging payloads of a document that is not being ingested. Repair:
//     delete them.
//
// Races with live ingestion are avoided by order and by age, not by locks: vectors are listed before
// documents (a vector is written only after its document row exists, so any vector listed has its row in
// the later listing unless the document was deleted meanwhile); documents being ingested are skipped
// until they are StuckAfter old; blobs younger than Grace are skipped; and every repair of a document
// re-reads it first and leaves it alone if it changed since the scan.
package reconcile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// Drift classes, in report order.
const (
	DeletedKnowledgeBases  = "deleted_knowledge_bases"
	ReadyWithoutVectors    = "ready_without_vectors"
	VectorsWithoutRows     = "vectors_without_rows"
	DeletedDocuments       = "rows_of_deleted_documents"
	StuckDocuments         = "stuck_documents"
	SourcesWithoutDocument = "sources_without_document"
	DocumentsWithoutSource = "documents_without_source"
	StaleVersions          = "stale_versions"
	StagingLeftovers       = "staging_leftovers"
)

// Classes lists every drift class; a report has a count for each, 0 when clean.
var Classes = []string{DeletedKnowledgeBases, ReadyWithoutVectors, VectorsWithoutRows, DeletedDocuments, StuckDocuments,
	SourcesWithoutDocument, DocumentsWithoutSource, StaleVersions, StagingLeftovers}

// Records is the relational store as the check reads it (sqldb.DB implements it).
type Records interface {
	ListKBs(ctx context.Context, tenant string) ([]rag.KnowledgeBase, error)
	ListDocuments(ctx context.Context, tenant, kbID, status string) ([]rag.Document, error)
	GetDocument(ctx context.Context, tenant, id string) (rag.Document, error)
	ListChunks(ctx context.Context, tenant, docID string) ([]rag.Chunk, error)
	UpdateDocument(ctx context.Context, d *rag.Document) error
}

// Vectors is the vector index as the check reads and repairs it.
type Vectors interface {
	store.VectorLister
	Upsert(ctx context.Context, recs []rag.VectorRecord) error
	Delete(ctx context.Context, tenant string, ids []string) error
	Flush(ctx context.Context) error
}

// Blobs holds the stored sources and the staging payloads.
type Blobs interface {
	List(ctx context.Context, prefix string) ([]store.BlobInfo, error)
	Delete(ctx context.Context, key string) error
}

// Embedder embeds the text of chunks whose vectors are missing.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Documents finishes deletes and re-runs ingestion (ingest.Service implements it).
type Documents interface {
	// Delete removes a document everywhere (finishing an interrupted delete).
	Delete(ctx context.Context, tenant, docID string) error
	// DeleteKB removes a knowledge base everywhere (finishing an interrupted delete).
	DeleteKB(ctx context.Context, tenant, kbID string) error
	// Retry runs the stages again from the stored source; NotFound when the source is gone.
	Retry(ctx context.Context, tenant, docID string) error
}

// Inbox is a drop folder whose files are sources ("inbox/<kb>/<path>"); optional.
type Inbox interface {
	// Files returns the source uris of the tenant's drop-folder files.
	Files(ctx context.Context, tenant string) ([]string, error)
	// Ingest ingests (or re-ingests, storing its source again) one drop-folder file.
	Ingest(ctx context.Context, tenant, uri string) error
}

// Originals re-reads a document's source from where it was ingested from, outside the blob store: the
// local binary's file:// paths (`docmind ingest`). Optional; without it a document whose stored source
// is gone is deleted unless its drop-folder file is there.
type Originals interface {
	// Reingest ingests the document again from its original, which stores its source again; NotFound
	// when this checker cannot read that original (gone, or not a kind of uri it knows).
	Reingest(ctx context.Context, d rag.Document) error
}

// SourceVersions is an Inbox that knows the newest recorded S3 event of each drop-folder source (the
// consistency function's): a ready document prepared at an older sequencer serves an older version.
type SourceVersions interface {
	// NewerPut reports whether a put newer than sequencer (the document's SourceSequencer) is recorded
	// for the source; false when none is recorded, the newest is a removal, or sequencer is empty.
	NewerPut(ctx context.Context, tenant, uri, sequencer string) (bool, error)
	// IngestNewest starts the ingestion of the source's newest recorded put.
	IngestNewest(ctx context.Context, tenant, uri string) error
}

// InboxPresence is an Inbox that can also list every file in the drop folder, however young and
// whatever its size or format: a ready drop-folder document whose file is not among them lost its file.
type InboxPresence interface {
	// Present returns the source uris of every drop-folder file of the tenant; serves is false when the
	// drop folder does not feed the tenant (its documents are then never compared with it).
	Present(ctx context.Context, tenant string) (uris []string, serves bool, err error)
}

// ChunkOrphanRecords finds and deletes chunk rows whose document row is gone (sqldb.DB implements it);
// without it they are never found.
type ChunkOrphanRecords interface {
	ListChunkOrphans(ctx context.Context, tenant string) ([]store.ChunkOrphans, error)
	DeleteChunkOrphans(ctx context.Context, tenant, docID string) (int, error)
}

// Finding statuses that name a variant of a class rather than a document's status.
const (
	// StatusInbox marks a drop-folder file without a document (sources_without_document).
	StatusInbox = "inbox"
	// StatusChunkOrphans marks chunk rows whose document row is gone (rows_of_deleted_documents).
	StatusChunkOrphans = "chunk_rows_without_document"
)

// Lease is a named lock that expires on its own (sqldb.DB implements it), so two runs never overlap.
type Lease interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// Checker finds and repairs drift. Records, Vectors and Blobs are required; Documents and Embedder are
// required to repair; Inbox and Lease are optional.
type Checker struct {
	Records   Records
	Vectors   Vectors
	Blobs     Blobs
	Embedder  Embedder
	Documents Documents
	Inbox     Inbox
	Originals Originals
	Lease     Lease

	// Tenants to check. Empty means every tenant that TenantLister (when Records implements it) reports.
	Tenants []string
	// StuckAfter is how long a document may stay pending or processing (default 1 h).
	StuckAfter time.Duration
	// Grace skips blobs younger than this, which an ingestion in flight may have just written (default 10 min).
	Grace time.Duration
	// LeaseTTL bounds a run that dies without releasing the lease (default 15 min); renewed every third.
	LeaseTTL time.Duration
	// EmbedBatch is the number of texts per embedding call during repair (default 64).
	EmbedBatch int
	Now        func() time.Time
	Log        *slog.Logger
}

// KBDeletions lists knowledge-base deletes that have not finished (sqldb.DB implements it); without it
// the deleted_knowledge_bases class is never found.
type KBDeletions interface {
	ListKBDeletions(ctx context.Context, tenant string) ([]rag.KnowledgeBase, error)
}

// TenantLister lists every tenant that owns data (sqldb.DB implements it).
type TenantLister interface {
	ListDataTenants(ctx context.Context) ([]string, error)
}

// Options scope one run.
type Options struct {
	KB     string // a knowledge base name; "" checks every one
	Repair bool
}

// LeaseName is the lease every run takes.
const LeaseName = "docmind-reconcile"

// Report is one run's result. Drift counts what the scan found per class (documents, vectors or objects,
// see the package comment); Repaired what was fixed; Remaining what is left (drift minus repaired).
type Report struct {
	Drift     map[string]int `json:"drift"`
	Repaired  map[string]int `json:"repaired"`
	Remaining map[string]int `json:"remaining"`
	// LockHeld is set when another run holds the lease: nothing was checked.
	LockHeld bool `json:"lock_held,omitempty"`
	// Documents is the number of documents checked.
	Documents int           `json:"documents"`
	Vectors   int           `json:"vectors"`
	Blobs     int           `json:"blobs"`
	Duration  time.Duration `json:"duration_ns"`
	Findings  []Finding     `json:"findings,omitempty"`
	// Errors are repairs that failed (the drift remains and the next run tries again).
	Errors []string `json:"errors,omitempty"`
}

// Finding is one piece of drift.
type Finding struct {
	Class      string   `json:"class"`
	Tenant     string   `json:"tenant"`
	KBID       string   `json:"kb_id,omitempty"`
	DocumentID string   `json:"document_id,omitempty"`
	Status     string   `json:"status,omitempty"`
	IDs        []string `json:"ids,omitempty"` // vector ids or blob keys, when the class counts those
	// n is what the finding adds to its class's count.
	n int
	// seen is the document's UpdatedAt at scan time; a repair skips a document that changed since.
	seen time.Time
}

// Clean reports whether no drift remains.
func (r Report) Clean() bool {
	for _, n := range r.Remaining {
		if n != 0 {
			return false
		}
	}
	return !r.LockHeld
}

func newReport() Report {
	r := Report{Drift: map[string]int{}, Repaired: map[string]int{}, Remaining: map[string]int{}}
	for _, c := range Classes {
		r.Drift[c], r.Repaired[c], r.Remaining[c] = 0, 0, 0
	}
	return r
}

func (c *Checker) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Checker) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Run checks (and with o.Repair, repairs) every tenant under the lease. When another run holds the lease
// it returns a report with LockHeld set and a nil error. An error means the check itself could not run
// (a store is down); failed repairs are listed in Report.Errors instead.
func (c *Checker) Run(ctx context.Context, o Options) (Report, error) {
	const op = "reconcile.Run"
	start := c.now()
	rep := newReport()
	if o.Repair && (c.Documents == nil || c.Embedder == nil) {
		return rep, rag.Errorf(op, rag.KindInvalid, "repair needs the ingestion service and the embedder")
	}
	if c.Lease != nil {
		release, held, err := c.acquire(ctx)
		if err != nil {
			return rep, err
		}
		if held {
			rep.LockHeld = true
			return rep, nil
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		stop := c.renew(ctx, cancel, release.holder)
		defer func() { stop(); cancel(); release.fn() }()
	}
	tenants, err := c.tenants(ctx)
	if err != nil {
		return rep, err
	}
	for _, t := range tenants {
		fs, err := c.scan(ctx, t, o.KB, start, &rep)
		if err != nil {
			return rep, fmt.Errorf("check tenant %s: %w", t, err)
		}
		if o.Repair {
			fs = c.repair(ctx, fs, &rep)
		}
		for _, f := range fs {
			rep.Drift[f.Class] += f.n
		}
		rep.Findings = append(rep.Findings, fs...)
	}
	for _, cl := range Classes {
		rep.Remaining[cl] = rep.Drift[cl] - rep.Repaired[cl]
	}
	rep.Duration = c.now().Sub(start)
	return rep, nil
}

type lease struct {
	holder string
	fn     func()
}

func (c *Checker) acquire(ctx context.Context) (lease, bool, error) {
	var b [6]byte
	rand.Read(b[:])
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	ok, err := c.Lease.AcquireLease(ctx, LeaseName, holder, orDefault(c.LeaseTTL, 15*time.Minute))
	if err != nil {
		return lease{}, false, fmt.Errorf("take the reconcile lease: %w", err)
	}
	if !ok {
		return lease{}, true, nil
	}
	return lease{holder: holder, fn: func() { c.Lease.ReleaseLease(context.WithoutCancel(ctx), LeaseName, holder) }}, false, nil
}

// renew extends the lease every third of its ttl; losing it cancels the run, so that a run that stalled
// past its ttl never overlaps the run that took the lease over.
func (c *Checker) renew(ctx context.Context, cancel context.CancelFunc, holder string) func() {
	ttl := orDefault(c.LeaseTTL, 15*time.Minute)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				ok, err := c.Lease.AcquireLease(ctx, LeaseName, holder, ttl)
				if err == nil && !ok {
					c.log().Warn("reconcile lease lost; stopping the run")
					cancel()
					return
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func (c *Checker) tenants(ctx context.Context) ([]string, error) {
	if len(c.Tenants) > 0 {
		return c.Tenants, nil
	}
	tl, ok := c.Records.(TenantLister)
	if !ok {
		return nil, rag.Errorf("reconcile.Run", rag.KindInvalid, "no tenants to check")
	}
	return tl.ListDataTenants(ctx)
}
