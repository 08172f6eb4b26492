package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// Policy is the retry policy of every stage, the same locally as in the Step Functions definition:
// retryable errors (Unavailable, Unknown) are retried after each Backoff interval; Terminal, Invalid,
// NotFound and Permission errors are never retried.
type Policy struct {
	Backoff []time.Duration                                  // default 1 s, 2 s, 4 s
	Sleep   func(ctx context.Context, d time.Duration) error // tests pass a fake
}

// DefaultPolicy is three retries after 1 s, 2 s and 4 s.
func DefaultPolicy() Policy {
	return Policy{Backoff: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}}
}

// Retryable reports whether a stage error may succeed on a retry.
func Retryable(err error) bool {
	var inc *IncompleteError
	if errors.As(err, &inc) {
		return true
	}
	switch rag.KindOf(err) {
	case rag.KindUnavailable, rag.KindUnknown, rag.KindConflict:
		return true
	}
	return false
}

// ErrorType is the Lambda errorType a stage error is reported as, so the Step Functions Retry/Catch
// rules can tell terminal from retryable failures.
func ErrorType(err error) string {
	if Retryable(err) {
		return "Retryable"
	}
	return "Terminal"
}

func retry[T any](ctx context.Context, p Policy, fn func() (T, error)) (T, int, error) {
	sleep := p.Sleep
	if sleep == nil {
		sleep = rag.Wait
	}
	for attempt := 0; ; attempt++ {
		out, err := fn()
		if err == nil || !Retryable(err) || attempt >= len(p.Backoff) || ctx.Err() != nil {
			return out, attempt, err
		}
		if serr := sleep(ctx, p.Backoff[attempt]); serr != nil {
			return out, attempt, err
		}
	}
}

// Outcome is what one document's ingestion did.
type Outcome struct {
	Parents  int              `json:"parents"`
	Chunks   int              `json:"chunks"`
	Embedded int              `json:"embedded"`
	Reused   int              `json:"reused"`
	Deleted  int              `json:"deleted"`
	Hidden   int              `json:"hidden"`
	Retries  int              `json:"retries"`
	Rebuilt  bool             `json:"rebuilt,omitempty"` // an incremental update fell back to a full rebuild
	StageMS  map[string]int64 `json:"stage_ms"`
}

// Runner executes the stages in order with the policy: the local equivalent of the Step Functions
// workflow.
type Runner struct {
	Stages *Stages
	Policy Policy
}

// Run ingests one document whose source is stored at in.SourceKey. On a failure it leaves no half
// state: a first ingest is rolled back (no rows or vectors of the attempt remain) and the document is
// marked failed with the reason; a failed update of a ready document keeps the old chunks serving.
func (r *Runner) Run(ctx context.Context, in ExtractIn) (Outcome, error) {
	out := Outcome{StageMS: map[string]int64{}}
	s := r.Stages
	timed := func(name string, fn func() error) error {
		start := time.Now()
		err := fn()
		out.StageMS[name] += time.Since(start).Milliseconds()
		return err
	}
	_, before, err := s.existingVectors(ctx, in.Doc)
	if err != nil {
		return out, err
	}

	var ex ExtractOut
	var ch ChunkOut
	var em EmbedOut
	var ix IndexOut
	var n int
	err = timed("extract", func() error {
		ex, n, err = retry(ctx, r.Policy, func() (ExtractOut, error) { return s.Extract(ctx, in) })
		out.Retries += n
		return err
	})
	if err == nil {
		out.Hidden = ex.Hidden
		if ex.EngineStartMS > 0 { // part of "extract": the first PDF after a start or an idle release waits for the engine
			out.StageMS["pdf_engine_start"] = ex.EngineStartMS
		}
		if ex.BudgetWaitMS > 0 { // part of "extract": other extractions held the memory budget
			out.StageMS["extract_wait"] = ex.BudgetWaitMS
		}
		err = timed("chunk", func() error {
			ch, n, err = retry(ctx, r.Policy, func() (ChunkOut, error) { return s.Chunk(ctx, ex) })
			out.Retries += n
			return err
		})
	}
	// An incremental update (the document had chunks) that fails on a retryable error falls back to a
	// full rebuild once: every child re-embedded and upserted. When the strong count disagrees with the
	// rows (vectors lost, or orphans of an old crash), the document's vectors are dropped first.
	full := false
	for pass := 0; err == nil && pass < 2; pass++ {
		err = timed("embed", func() error {
			em, n, err = retry(ctx, r.Policy, func() (EmbedOut, error) { return s.Embed(ctx, EmbedIn{ChunkOut: ch, Full: full}) })
			out.Retries += n
			return err
		})
		if err == nil {
			out.Embedded += em.Embedded
			out.Reused = em.Reused
			err = timed("index", func() error {
				ix, n, err = retry(ctx, r.Policy, func() (IndexOut, error) { return s.Index(ctx, em) })
				out.Retries += n
				return err
			})
		}
		var inc *IncompleteError
		incomplete := errors.As(err, &inc)
		if err == nil || full || !Retryable(err) || (len(before) == 0 && !incomplete) {
			break
		}
		full, out.Rebuilt = true, true
		if s.Log != nil {
			s.Log.Warn("incremental update failed; rebuilding the document in full", "document", in.DocumentID, "err", err)
		}
		if incomplete {
			if err = s.Vectors.DeleteDocument(ctx, in.Tenant, in.KBID, in.DocumentID); err != nil {
				break
			}
		}
		err = nil
	}
	if err != nil {
		out.Reused = 0
		r.rollback(context.WithoutCancel(ctx), in.Doc, before, ch.ChunksKey, err)
		return out, err
	}
	out.Parents, out.Chunks, out.Deleted = ix.Parents, ix.Chunks, ix.Deleted
	return out, nil
}

// rollback undoes a failed attempt. If the document had indexed chunks and the failure came before
// its rows were swapped, the old chunks keep serving: only the vectors this attempt added are removed,
// and the document stays ready with the error noted. Otherwise (a first ingest, or a failure after the
// swap) every row and vector of the document is removed and it is marked failed with the reason.
// Cleanup that fails is left to the consistency check, which removes orphans.
func (r *Runner) rollback(ctx context.Context, d Doc, before []rag.Chunk, chunksKey string, cause error) {
	s := r.Stages
	defer func() {
		for _, k := range []string{"markdown.md", "chunks.json", "vectors.bin"} {
			s.staging().Delete(ctx, d.staging(k))
		}
	}()
	reason := cause.Error()
	if len(reason) > 2000 {
		reason = reason[:2000]
	}
	cur, err := s.Records.ListChunks(ctx, d.Tenant, d.DocumentID)
	if err != nil {
		return
	}
	doc, err := s.Records.GetDocument(ctx, d.Tenant, d.DocumentID)
	if err != nil {
		return
	}
	if len(before) > 0 && sameIDs(cur, before) {
		oldVec := map[string]bool{}
		for _, c := range before {
			oldVec[c.VectorID] = true
		}
		var added []string
		if chunksKey != "" {
			if rows, err := s.readChunks(ctx, chunksKey); err == nil {
				for _, c := range rows {
					if c.Level == rag.LevelChild && !oldVec[c.VectorID] {
						added = append(added, c.VectorID)
					}
				}
			}
		}
		if len(added) > 0 && s.Vectors.Delete(ctx, d.Tenant, added) == nil {
			s.Vectors.Flush(ctx)
		}
		doc.Error = "update failed, serving the previous version: " + reason
		s.Records.UpdateDocument(ctx, &doc)
		return
	}
	if s.Vectors.DeleteDocument(ctx, d.Tenant, d.KBID, d.DocumentID) == nil {
		s.Vectors.Flush(ctx)
	}
	if s.Keyword != nil {
		s.Keyword.RemoveDocument(d.Tenant, d.DocumentID)
	}
	ids := make([]string, len(cur))
	for i, c := range cur {
		ids[i] = c.ID
	}
	if len(ids) > 0 {
		s.Records.ApplyChunks(ctx, d.Tenant, d.DocumentID, nil, ids)
	}
	doc.Status, doc.Error, doc.ChunkCount = rag.StatusFailed, reason, 0
	s.Records.UpdateDocument(ctx, &doc)
	if len(before) > 0 {
		s.Records.BumpKBVersion(ctx, d.Tenant, d.KBID)
	}
}

func sameIDs(a, b []rag.Chunk) bool {
	if len(a) != len(b) {
		return false
	}
	set := map[string]bool{}
	for _, c := range a {
		set[c.ID] = true
	}
	for _, c := range b {
		if !set[c.ID] {
			return false
		}
	}
	return true
}
