package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// The Step Functions workflow (infra/statemachines/ingest.asl.json) runs these stages, one Lambda task
// each: Prepare -> Extract -> Chunk -> PlanEmbed -> EmbedBatch (a Map over batches) -> IndexBatches ->
// Verify -> Commit, with MarkFailed on any error. A short strong count in Verify rebuilds the document's
// vectors once (PlanEmbed with Rebuild) before it counts as a failure. Extract, Chunk, Verify and Commit
// are the Stages the local Runner calls; the others split or guard what the Runner does in one process.
// Every payload is a pointer to staging blobs plus counts, so a state stays far below Step Functions'
// 256 KiB (ING-09).

// Leases is the SQL lease a source's ingestion holds across Lambda instances (sqldb.DB satisfies it).
type Leases interface {
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (bool, error)
	ReleaseLease(ctx context.Context, name, holder string) error
}

// SourceEvents is the per-source record of the newest S3 event (sqldb.DB satisfies it).
type SourceEvents interface {
	RecordSourceEvent(ctx context.Context, ev sqldb.SourceEvent) (sqldb.EventOrder, error)
	GetSourceEvent(ctx context.Context, tenant, sourceURI string) (sqldb.SourceEvent, error)
}

// ObjectSource reads one version of a drop-folder object (S3 GetObject with VersionId).
type ObjectSource interface {
	// GetObject returns the object's bytes; NotFound when the object or that version is gone, Terminal
	// when it is larger than limit. An empty versionID reads the current version.
	GetObject(ctx context.Context, bucket, key, versionID string, limit int64) ([]byte, error)
}

// ObjectMetadataSource reads an object version's S3 user metadata (x-amz-meta-*, keys lower-cased by
// S3) and tags; the drop-folder reader implements it where it can (awsenv.Objects). NotFound when the
// version is gone.
type ObjectMetadataSource interface {
	ObjectMetadata(ctx context.Context, bucket, key, versionID string) (user, tags map[string]string, err error)
}

// objectMeta is an object's user metadata and tags as document metadata (tags over user metadata on
// the same key; keys lower-cased; keys a filter cannot name left out).
func objectMeta(user, tags map[string]string) rag.Metadata {
	m := rag.Metadata{}
	for _, src := range []map[string]string{user, tags} {
		for k, v := range src {
			if k = strings.ToLower(k); rag.ValidMetaKey(k) && v != "" {
				m[k] = v
			}
		}
	}
	if len(m) == 0 {
		return nil
	}
	n, err := m.Normalize()
	if err != nil {
		return nil
	}
	return n
}

// Workflow holds what the workflow's stage functions need beyond Stages.
type Workflow struct {
	Stages  *Stages
	Leases  Leases
	Events  SourceEvents
	Objects ObjectSource
	// LeaseTTL bounds how long a crashed execution blocks its source (default 1 h, above the state
	// machine's longest run); Commit and MarkFailed release it as soon as they end.
	LeaseTTL time.Duration
	// BatchSize is the children per EmbedBatch task (default 256); batches are enlarged so that no
	// document needs more than MaxBatches of them, which bounds the Map's state.
	BatchSize  int
	MaxBatches int
	// Executions and Name start the follow-up execution (FollowUp); nil Executions: none (a workflow
	// whose sources never change while they are ingested, as in most tests).
	Executions Executions
	Name       func(label string, parts ...string) string
}

// Job is the input of one execution: one version of one drop-folder object.
type Job struct {
	Doc
	SourceURI string `json:"source_uri"` // inbox/<kb>/<path>, the document's identity
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	VersionID string `json:"version_id,omitempty"`
	Sequencer string `json:"sequencer"`
	FileName  string `json:"file_name"`
	Holder    string `json:"holder"` // the execution name: who holds the source's lease
}

func (j Job) validate(op string) error {
	if err := j.Doc.validate(op); err != nil {
		return err
	}
	if j.SourceURI == "" || j.Bucket == "" || j.Key == "" || j.Sequencer == "" || j.Holder == "" {
		return rag.Errorf(op, rag.KindInvalid, "job needs source_uri, bucket, key, sequencer and holder")
	}
	return nil
}

// LeaseName is the SQL lease that serialises ingestion and deletion of one source.
func LeaseName(tenant, kbID, sourceURI string) string {
	h := sha256.Sum256([]byte(sourceURI))
	return "ingest:" + tenant + ":" + kbID + ":" + hex.EncodeToString(h[:16])
}

// DefaultLeaseTTL is an execution's hold on its source: at least the state machine's TimeoutSeconds, so
// a running execution never loses it. A removal that meets it is redelivered by SQS until it is free:
// the queue's visibility timeout x max receives must exceed it (infra TestQueueRetriesOutlastLease).
const DefaultLeaseTTL = time.Hour

func (w *Workflow) ttl() time.Duration {
	if w.LeaseTTL > 0 {
		return w.LeaseTTL
	}
	return DefaultLeaseTTL
}

// PrepareOut says whether the workflow goes on, and with which stored source.
type PrepareOut struct {
	Skip        bool      `json:"skip"`
	Reason      string    `json:"reason,omitempty"`
	Extract     ExtractIn `json:"extract"`
	ContentHash string    `json:"content_hash,omitempty"`
	// SidecarProblem says why the file's sidecar was ignored (shown in the execution's history).
	SidecarProblem string `json:"sidecar_problem,omitempty"`
}

// Prepare takes the source's lease, drops the job when a newer event for the source exists or the
// content is unchanged (Skip, lease released), otherwise reads the object by its version, stores it
// under the generated source key, remembers the document's current chunks for a rollback, and marks the
// document processing. Conflict while another execution holds the lease (the ASL retries it).
func (w *Workflow) Prepare(ctx context.Context, j Job) (PrepareOut, error) {
	const op = "ingest.Prepare"
	if err := j.validate(op); err != nil {
		return PrepareOut{}, err
	}
	st := w.Stages
	skip := func(reason string) (PrepareOut, error) {
		w.Leases.ReleaseLease(context.WithoutCancel(ctx), LeaseName(j.Tenant, j.KBID, j.SourceURI), j.Holder)
		return PrepareOut{Skip: true, Reason: reason}, nil
	}
	if newest, err := w.current(ctx, j); err != nil {
		return PrepareOut{}, err
	} else if !newest {
		return PrepareOut{Skip: true, Reason: "superseded by a newer event for the source"}, nil
	}
	ok, err := w.Leases.AcquireLease(ctx, LeaseName(j.Tenant, j.KBID, j.SourceURI), j.Holder, w.ttl())
	if err != nil {
		return PrepareOut{}, err
	}
	if !ok {
		return PrepareOut{}, rag.Errorf(op, rag.KindConflict, "another ingestion of %s holds its lease", j.SourceURI)
	}
	doc, err := st.Records.GetDocument(ctx, j.Tenant, j.DocumentID)
	if rag.Is(err, rag.KindNotFound) || (err == nil && doc.Status == rag.StatusDeleted) {
		return skip("the document was deleted")
	}
	if err != nil {
		return PrepareOut{}, err
	}
	lim := st.Limits.MaxFileBytes
	if lim <= 0 {
		lim = 64 << 20
	}
	data, err := w.Objects.GetObject(ctx, j.Bucket, j.Key, j.VersionID, lim)
	if rag.Is(err, rag.KindNotFound) {
		return skip("the object version is gone")
	}
	if err != nil {
		return PrepareOut{}, fmt.Errorf("read s3://%s/%s: %w", j.Bucket, j.Key, err)
	}
	var object rag.Metadata
	// a connector's item staged by the sync (staging/<tenant>/connector/...) carries no S3 metadata or
	// tags of its own: its fields come from the connector
	if om, ok := w.Objects.(ObjectMetadataSource); ok && !strings.HasPrefix(j.Key, "staging/") {
		user, tags, err := om.ObjectMetadata(ctx, j.Bucket, j.Key, j.VersionID)
		if rag.Is(err, rag.KindNotFound) {
			return skip("the object version is gone")
		}
		if err != nil {
			return PrepareOut{}, fmt.Errorf("read the metadata of s3://%s/%s: %w", j.Bucket, j.Key, err)
		}
		object = objectMeta(user, tags)
	}
	side, sideProblem, err := w.s3Sidecar(ctx, j)
	if err != nil {
		return PrepareOut{}, err
	}
	hash := Source{Data: data, Object: object, Sidecar: side}.contentHash()
	if doc.Status == rag.StatusReady && doc.ContentHash == hash && doc.Error == "" {
		if err := w.recordVersion(ctx, &doc, j); err != nil {
			w.Leases.ReleaseLease(context.WithoutCancel(ctx), LeaseName(j.Tenant, j.KBID, j.SourceURI), j.Holder)
			return PrepareOut{}, err
		}
		return skip("unchanged")
	}
	key := sourceKey(j.Tenant, j.KBID, j.DocumentID, j.FileName)
	if _, err := st.Blobs.Put(ctx, key, bytes.NewReader(data), ""); err != nil {
		return PrepareOut{}, fmt.Errorf("store source: %w", err)
	}
	if err := w.saveBefore(ctx, j.Doc); err != nil {
		return PrepareOut{}, err
	}
	if doc.Status != rag.StatusReady {
		doc.Status = rag.StatusProcessing
	}
	doc.FileName, doc.FileType = truncateRunes(j.FileName, 255), fileType(j.FileName)
	doc.SourceETag, doc.SourceSequencer = truncateRunes(j.VersionID, 255), truncate(j.Sequencer, 64)
	if err := st.Records.UpdateDocument(ctx, &doc); err != nil {
		return PrepareOut{}, err
	}
	return PrepareOut{Extract: ExtractIn{Doc: j.Doc, SourceKey: key, FileName: j.FileName, Run: j.Holder, Object: object, Sidecar: side},
		ContentHash: hash, SidecarProblem: sideProblem}, nil
}

// recordVersion stores j's version and sequencer on a document whose content already is j's (an
// unchanged re-upload), under the lease: otherwise the document keeps the older put's sequencer while
// the newer put is the recorded one, and the consistency check reports it stale on every run although
// nothing is out of date. The "object version is gone" skip does not record: the document does not
// hold that version (its newer event, or the missed one reconcile reports, decides what it becomes).
func (w *Workflow) recordVersion(ctx context.Context, doc *rag.Document, j Job) error {
	etag, seq := truncateRunes(j.VersionID, 255), truncate(j.Sequencer, 64)
	if doc.SourceETag == etag && doc.SourceSequencer == seq {
		return nil
	}
	// The row is written whole, so it is read again first: the copy above was read before the object
	// (up to 64 MB), and a knowledge-base delete marks documents deleted without their lease. Only a
	// document still ready with this content takes the version; anything else is left as it is.
	cur, err := w.Stages.Records.GetDocument(ctx, j.Tenant, j.DocumentID)
	if rag.Is(err, rag.KindNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if cur.Status != rag.StatusReady || cur.ContentHash != doc.ContentHash {
		return nil
	}
	cur.SourceETag, cur.SourceSequencer = etag, seq
	return w.Stages.Records.UpdateDocument(ctx, &cur)
}

// current reports whether j is still its source's newest event.
func (w *Workflow) current(ctx context.Context, j Job) (bool, error) {
	ev, err := w.Events.GetSourceEvent(ctx, j.Tenant, j.SourceURI)
	if rag.Is(err, rag.KindNotFound) {
		return true, nil // started by hand, not through the ingest function
	}
	if err != nil {
		return false, err
	}
	mine, err := sqldb.SequencerKey(j.Sequencer)
	if err != nil {
		return false, err
	}
	return ev.Sequencer == mine && ev.Event == sqldb.SourcePut, nil
}

// saveBefore stages the ids of the document's current chunks: MarkFailed needs them to tell an update
// that failed before its rows were swapped (keep serving the old version) from one that failed after.
func (w *Workflow) saveBefore(ctx context.Context, d Doc) error {
	cur, err := w.Stages.Records.ListChunks(ctx, d.Tenant, d.DocumentID)
	if err != nil {
		return err
	}
	slim := make([]rag.Chunk, len(cur))
	for i, c := range cur {
		slim[i] = rag.Chunk{ID: c.ID, VectorID: c.VectorID, Level: c.Level}
	}
	b, err := json.Marshal(slim)
	if err != nil {
		return rag.E("ingest.saveBefore", rag.KindInternal, err)
	}
	if _, err := w.Stages.staging().Put(ctx, d.staging("before.json"), bytes.NewReader(b), "application/json"); err != nil {
		return fmt.Errorf("stage previous chunks: %w", err)
	}
	return nil
}

func (w *Workflow) loadBefore(ctx context.Context, d Doc) []rag.Chunk {
	b, err := w.Stages.readStaged(ctx, d.staging("before.json"), 256<<20)
	if err != nil {
		return nil
	}
	var out []rag.Chunk
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// PlanOut lists the embedding batches: Batches holds their numbers only (0..n-1), so the Map's input
// stays a few bytes per batch however large the document.
type PlanOut struct {
	Batches []int `json:"batches"`
	Count   int   `json:"count"` // len(Batches), for IndexBatches
	Size    int   `json:"size"`
	Full    bool  `json:"full"` // every child is embedded again (the rebuild after an incomplete count)
}

// PlanIn asks for a plan; Rebuild first drops every vector of the document (orphans of an old crash
// included) and plans a full re-embedding: the workflow's one retry after Verify found the strong count
// short, as the local runner does.
type PlanIn struct {
	Chunk   ChunkOut `json:"chunk"`
	Rebuild bool     `json:"rebuild,omitempty"`
}

// children returns the document's child rows with distinct vector ids, in order.
func children(rows []rag.Chunk) []rag.Chunk {
	var out []rag.Chunk
	seen := map[string]bool{}
	for _, c := range rows {
		if c.Level == rag.LevelChild && !seen[c.VectorID] {
			seen[c.VectorID] = true
			out = append(out, c)
		}
	}
	return out
}

// PlanEmbed splits the document's children into embedding batches.
func (w *Workflow) PlanEmbed(ctx context.Context, pin PlanIn) (PlanOut, error) {
	const op = "ingest.PlanEmbed"
	in := pin.Chunk
	if err := in.validate(op); err != nil {
		return PlanOut{}, err
	}
	if pin.Rebuild {
		if err := w.Stages.Vectors.DeleteDocument(ctx, in.Tenant, in.KBID, in.DocumentID); err != nil {
			return PlanOut{}, fmt.Errorf("drop the document's vectors: %w", err)
		}
		if err := w.Stages.Vectors.Flush(ctx); err != nil {
			return PlanOut{}, fmt.Errorf("flush vectors: %w", err)
		}
	}
	rows, err := w.Stages.readChunks(ctx, in.ChunksKey)
	if err != nil {
		return PlanOut{}, err
	}
	n := len(children(rows))
	size, maxB := w.BatchSize, w.MaxBatches
	if size <= 0 {
		size = 256
	}
	if maxB <= 0 {
		maxB = 64
	}
	if need := (n + maxB - 1) / maxB; need > size {
		size = need
	}
	out := PlanOut{Size: size, Batches: []int{}, Full: pin.Rebuild}
	for i := 0; i*size < n; i++ {
		out.Batches = append(out.Batches, i)
	}
	out.Count = len(out.Batches)
	return out, nil
}

// BatchIn is one Map iteration: batch number Batch of size Size over the document's children.
type BatchIn struct {
	Chunk ChunkOut `json:"chunk"`
	Batch int      `json:"batch"`
	Size  int      `json:"size"`
	Full  bool     `json:"full,omitempty"` // embed every child, indexed or not
}

// BatchOut counts what one batch did.
type BatchOut struct {
	Batch    int `json:"batch"`
	Embedded int `json:"embedded"`
	Reused   int `json:"reused"`
}

func batchKey(d Doc, i int) string { return d.staging(fmt.Sprintf("vectors-%05d.bin", i)) }

// EmbedBatch embeds the batch's children whose vector is not indexed yet and stages the vectors. A
// retry re-embeds only this batch.
func (w *Workflow) EmbedBatch(ctx context.Context, in BatchIn) (BatchOut, error) {
	const op = "ingest.EmbedBatch"
	if err := in.Chunk.validate(op); err != nil {
		return BatchOut{}, err
	}
	if in.Batch < 0 || in.Size <= 0 {
		return BatchOut{}, rag.Errorf(op, rag.KindInvalid, "batch %d of size %d", in.Batch, in.Size)
	}
	st := w.Stages
	rows, err := st.readChunks(ctx, in.Chunk.ChunksKey)
	if err != nil {
		return BatchOut{}, err
	}
	all := children(rows)
	lo, hi := min(in.Batch*in.Size, len(all)), min((in.Batch+1)*in.Size, len(all))
	have := map[string]bool{}
	if !in.Full {
		if have, _, err = st.existingVectors(ctx, in.Chunk.Doc); err != nil {
			return BatchOut{}, err
		}
	}
	out := BatchOut{Batch: in.Batch}
	var ids, texts []string
	for _, c := range all[lo:hi] {
		if have[c.VectorID] {
			out.Reused++
			continue
		}
		ids, texts = append(ids, c.VectorID), append(texts, c.Content)
	}
	var vecs [][]float32
	if len(texts) > 0 {
		if vecs, err = st.Embedder.Embed(ctx, texts); err != nil {
			return BatchOut{}, fmt.Errorf("embed %d chunks: %w", len(texts), err)
		}
		if len(vecs) != len(texts) {
			return BatchOut{}, rag.Errorf(op, rag.KindInternal, "embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
	}
	out.Embedded = len(texts)
	if _, err := st.staging().Put(ctx, batchKey(in.Chunk.Doc, in.Batch), bytes.NewReader(encodeVectors(ids, vecs)), "application/octet-stream"); err != nil {
		return BatchOut{}, fmt.Errorf("stage vectors: %w", err)
	}
	return out, nil
}

// IndexIn names the chunks and how many vector batches were staged.
type IndexIn struct {
	Chunk   ChunkOut `json:"chunk"`
	Batches int      `json:"batches"`
}

// IndexBatchesOut reports the rows written.
type IndexBatchesOut struct {
	Doc
	Chunks  int `json:"chunks"`
	Deleted int `json:"deleted"`
}

// IndexBatches upserts every staged batch's vectors, swaps the document's rows and removes the vectors
// of vanished chunks (Index's write half; Verify and Commit follow as their own states).
func (w *Workflow) IndexBatches(ctx context.Context, in IndexIn) (IndexBatchesOut, error) {
	const op = "ingest.IndexBatches"
	if err := in.Chunk.validate(op); err != nil {
		return IndexBatchesOut{}, err
	}
	vecs := map[string][]float32{}
	for i := range in.Batches {
		b, err := w.Stages.readStaged(ctx, batchKey(in.Chunk.Doc, i), 1<<30)
		if err != nil {
			return IndexBatchesOut{}, fmt.Errorf("read vector batch %d: %w", i, err)
		}
		m, err := decodeVectors(b)
		if err != nil {
			return IndexBatchesOut{}, rag.E(op, rag.KindInternal, fmt.Errorf("staged vector batch %d: %w", i, err))
		}
		for k, v := range m {
			vecs[k] = v
		}
	}
	wr, err := w.Stages.indexWrite(ctx, in.Chunk, vecs)
	if err != nil {
		return IndexBatchesOut{}, err
	}
	return IndexBatchesOut{Doc: in.Chunk.Doc, Chunks: wr.Chunks, Deleted: wr.Deleted}, nil
}

// FinishIn commits a verified document for a job and releases its lease.
type FinishIn struct {
	Chunk       ChunkOut `json:"chunk"`
	ContentHash string   `json:"content_hash"`
	Job         Job      `json:"job"`
}

// WorkflowCommitOut is Commit's result: the committed document, and the follow-up execution started
// for a newer version of the source, if any.
type WorkflowCommitOut struct {
	CommitOut
	FollowUp string `json:"follow_up,omitempty"`
}

// Commit is Stages.Commit (status ready last) under the source's lease, the release of the lease, then
// the follow-up for a newer version recorded meanwhile (FollowUp). A failed start is Unavailable: the
// ASL retries Commit, and MarkFailed tries the follow-up again. A retry re-takes the lease under the
// execution's holder and commits only what this execution prepared and has not committed yet: before,
// a retry after a failed follow-up ran Stages.Commit again with no lease, possibly while a newer
// version's execution held it, marking the document ready over that version's work and deleting its
// staging (review of #11). When another holder has the lease, or the document was committed already
// (by this execution) or prepared since by another, only the follow-up is left to do.
func (w *Workflow) Commit(ctx context.Context, in FinishIn) (WorkflowCommitOut, error) {
	const op = "ingest.Commit"
	j := in.Job
	if err := j.validate(op); err != nil {
		return WorkflowCommitOut{}, err
	}
	out := WorkflowCommitOut{CommitOut: CommitOut{Doc: in.Chunk.Doc}}
	lease := LeaseName(j.Tenant, j.KBID, j.SourceURI)
	ok, err := w.Leases.AcquireLease(ctx, lease, j.Holder, w.ttl())
	if err != nil {
		return out, err
	}
	if ok {
		todo, err := w.uncommitted(ctx, in)
		if err != nil {
			return out, err // the lease stays ours: the retry re-takes it
		}
		if todo {
			if out.CommitOut, err = w.Stages.Commit(ctx, CommitIn{ChunkOut: in.Chunk, ContentHash: in.ContentHash}); err != nil {
				return out, err
			}
		} else {
			w.Stages.cleanStaging(ctx, in.Chunk.Doc) // a commit that ended before its cleanup; the lease is ours
		}
		w.Leases.ReleaseLease(context.WithoutCancel(ctx), lease, j.Holder)
	}
	out.FollowUp, err = w.FollowUp(ctx, j)
	return out, err
}

// uncommitted reports whether the document is still as this execution's Prepare left it: prepared at
// the job's sequencer (another version's Prepare has not run since) and not yet ready with this
// content. Caller holds the lease.
func (w *Workflow) uncommitted(ctx context.Context, in FinishIn) (bool, error) {
	doc, err := w.Stages.Records.GetDocument(ctx, in.Job.Tenant, in.Job.DocumentID)
	if rag.Is(err, rag.KindNotFound) {
		return true, nil // Stages.Commit reports it
	}
	if err != nil {
		return false, err
	}
	if doc.SourceSequencer != truncate(in.Job.Sequencer, 64) {
		return false, nil
	}
	done := doc.Status == rag.StatusReady && doc.Error == "" && in.ContentHash != "" && doc.ContentHash == in.ContentHash
	return !done, nil
}

// FollowUp starts an execution for the source's newest version when it is a newer put than j, and
// returns its name ("" when j is still the newest, the newest event is a removal, or no Executions are
// configured). Called after j's execution released the lease, by Commit and MarkFailed: a version
// uploaded while j ran met the lease in its Prepare, and if its execution gave up (the Conflict retries
// last minutes, an ingestion can last an hour) nothing else would ever ingest it: the document would
// stay ready with the older content. The name is derived from the newest event, so two executions
// following up the same version start it once (ExecutionAlreadyExists); it differs from the trigger's
// name for that event, whose execution may have ended already. A newer removal is not followed up: its
// SQS message is redelivered until the lease is free (the queue's retries outlast the lease TTL).
func (w *Workflow) FollowUp(ctx context.Context, j Job) (string, error) {
	const op = "ingest.FollowUp"
	if w.Executions == nil || w.Name == nil {
		return "", nil
	}
	ev, err := w.Events.GetSourceEvent(ctx, j.Tenant, j.SourceURI)
	if rag.Is(err, rag.KindNotFound) {
		return "", nil // not a drop-folder source: nothing records its events
	}
	if err != nil {
		return "", err
	}
	mine, err := sqldb.SequencerKey(j.Sequencer)
	if err != nil {
		return "", err
	}
	if ev.Event != sqldb.SourcePut || ev.Sequencer <= mine {
		return "", nil
	}
	kbID := ev.KBID
	if kbID == "" {
		kbID = j.KBID
	}
	doc, err := w.Stages.Records.GetDocumentBySource(ctx, j.Tenant, kbID, j.SourceURI)
	if rag.Is(err, rag.KindNotFound) {
		return "", nil // deleted meanwhile: a later put creates it anew through the trigger
	}
	if err != nil {
		return "", err
	}
	seq := strings.TrimLeft(ev.Sequencer, "0") // stored padded; S3's own form, as the trigger's jobs carry it
	if seq == "" {
		seq = "0"
	}
	name := w.Name("followup", j.Tenant, j.Bucket, j.Key, ev.VersionID, seq)
	next := Job{Doc: Doc{Tenant: j.Tenant, KBID: kbID, DocumentID: doc.ID}, SourceURI: j.SourceURI, Bucket: j.Bucket, Key: j.Key,
		VersionID: ev.VersionID, Sequencer: seq, FileName: j.FileName, Holder: name}
	input, err := json.Marshal(next)
	if err != nil {
		return "", rag.E(op, rag.KindInternal, err)
	}
	if _, err := w.Executions.Start(ctx, name, input); err != nil {
		return "", rag.E(op, rag.KindUnavailable, fmt.Errorf("start the follow-up for version %s of %s: %w", ev.VersionID, j.SourceURI, err))
	}
	return name, nil
}

// StateError is what a Catch puts at its ResultPath: the error name and its cause. For a Lambda task the
// cause is the function's error JSON ({"errorMessage","errorType"}).
type StateError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// Reason is a one-line, bounded description of the error for the document row.
func (e StateError) Reason() string {
	msg := e.Cause
	var lambdaErr struct {
		Message string `json:"errorMessage"`
	}
	if json.Unmarshal([]byte(e.Cause), &lambdaErr) == nil && lambdaErr.Message != "" {
		msg = lambdaErr.Message
	}
	r := strings.TrimSpace(e.Error + ": " + msg)
	if len(r) > 2000 {
		r = r[:2000]
	}
	return r
}

// FailIn is MarkFailed's input: the execution's job and the caught error.
type FailIn struct {
	Job   Job        `json:"job"`
	Error StateError `json:"error"`
}

// FailOut says what MarkFailed did.
type FailOut struct {
	Doc
	Marked   bool   `json:"marked"`              // the document was rolled back and marked (or kept serving)
	Reason   string `json:"reason"`              // what was recorded
	Status   string `json:"status,omitempty"`    // the document's status afterwards
	FollowUp string `json:"follow_up,omitempty"` // the execution started for a newer version (FollowUp)
}

// MarkFailed rolls a failed execution back exactly as the local runner does: a first ingest leaves no
// rows or vectors and is marked failed with the reason; an update that failed before its rows were
// swapped keeps the old chunks serving, with the error noted. It does nothing when another execution
// holds the source's lease (that execution follows up the newer version when it ends) or a newer event
// superseded this job (then it releases the lease and starts the follow-up for the newest version), and
// releases the lease at the end.
func (w *Workflow) MarkFailed(ctx context.Context, in FailIn) (FailOut, error) {
	const op = "ingest.MarkFailed"
	j := in.Job
	if err := j.Doc.validate(op); err != nil {
		return FailOut{}, err
	}
	out := FailOut{Doc: j.Doc, Reason: in.Error.Reason()}
	lease := LeaseName(j.Tenant, j.KBID, j.SourceURI)
	ok, err := w.Leases.AcquireLease(ctx, lease, j.Holder, w.ttl())
	if err != nil {
		return out, err
	}
	if !ok {
		return out, nil
	}
	release := func() { w.Leases.ReleaseLease(context.WithoutCancel(ctx), lease, j.Holder) }
	if newest, err := w.current(ctx, j); err != nil {
		release()
		return out, err
	} else if !newest {
		release()
		out.FollowUp, err = w.FollowUp(ctx, j)
		return out, err
	}
	defer release()
	r := Runner{Stages: w.Stages}
	r.rollback(ctx, j.Doc, w.loadBefore(ctx, j.Doc), j.staging("chunks.json"), fmt.Errorf("%s", out.Reason))
	w.Stages.cleanStaging(ctx, j.Doc)
	if doc, err := w.Stages.Records.GetDocument(ctx, j.Tenant, j.DocumentID); err == nil {
		out.Status = doc.Status
	}
	out.Marked = true
	return out, nil
}

// Envelope is the payload of every stage task: which stage, and its input.
type Envelope struct {
	Stage string          `json:"stage"`
	Input json.RawMessage `json:"input"`
}

type stageFunc func(ctx context.Context, in json.RawMessage) (any, error)

func stage[In, Out any](fn func(context.Context, In) (Out, error)) stageFunc {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var in In
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, rag.E("ingest.stage", rag.KindInvalid, fmt.Errorf("decode input: %w", err))
		}
		return fn(ctx, in)
	}
}

func (w *Workflow) handlers() map[string]stageFunc {
	s := w.Stages
	return map[string]stageFunc{
		"Prepare":      stage(w.Prepare),
		"Extract":      stage(s.Extract),
		"Chunk":        stage(s.Chunk),
		"PlanEmbed":    stage(w.PlanEmbed),
		"EmbedBatch":   stage(w.EmbedBatch),
		"IndexBatches": stage(w.IndexBatches),
		"Verify":       stage(s.Verify),
		"Commit":       stage(w.Commit),
		"MarkFailed":   stage(w.MarkFailed),
		// the Textract wait loop (ExtractFunction): one status check per round, then the results
		"TextractStatus":  stage(s.TextractStatus),
		"TextractCollect": stage(s.TextractCollect),
	}
}

// StageNames lists the stages Dispatch serves, sorted: the ASL's Tasks must name exactly these.
func StageNames() []string {
	var out []string
	for k := range (&Workflow{Stages: &Stages{}}).handlers() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Dispatch runs the stage the envelope names. Invalid for an unknown stage or an input that does not
// decode; otherwise the stage's own result and error.
func (w *Workflow) Dispatch(ctx context.Context, env Envelope) (any, error) {
	fn, ok := w.handlers()[env.Stage]
	if !ok {
		return nil, rag.Errorf("ingest.Dispatch", rag.KindInvalid, "unknown stage %q", env.Stage)
	}
	return fn(ctx, env.Input)
}
