package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// BatchRecords is the relational store's batched commit (sqldb.DB implements it): several documents'
// chunks and rows, and a version bump per knowledge base, in one transaction.
type BatchRecords interface {
	CommitDocuments(ctx context.Context, tenant string, docs []rag.DocumentChunks) error
}

// DefaultBatch is how many sources IngestBatch's callers group: large enough that a commit, a WAL sync
// and a vector-log fsync are paid once for dozens of documents, small enough that a batch's sources and
// chunks stay a few MiB and a crash loses little work.
const DefaultBatch = 32

// IngestBatch ingests several sources of one tenant and returns one report per source, in order; a
// failed source has Status failed and Error set, as Ingest would report it.
//
// New documents (and documents that never got chunks, such as one a crash interrupted) take the batch
// path: each is extracted and chunked on its own (GOMAXPROCS at a time), then the batch's new texts go
// to the embeddings provider in one call (which drives the provider at its configured concurrency), the
// vectors are upserted and made durable with one Flush (one vector-log fsync), and every document's
// chunk rows and ready status are written in one SQL transaction. Everything else (an unchanged source,
// an update of indexed chunks, a source whose lock another ingestion holds, a document that fails any
// batch step) goes through Ingest, one document at a time with its retries and rollback, so a batch never
// changes what a document ends up as, only how fast it gets there.
//
// Crash safety: vectors are durable before the transaction that marks their documents ready, so a
// document seen ready has its chunks and vectors; a crash before the commit leaves the batch's documents
// processing (with, at most, vectors no row points at, which the next ingest overwrites by their
// deterministic ids, or the consistency check removes).
func (s *Service) IngestBatch(ctx context.Context, tenant string, srcs []Source) []Report {
	srcs, refused := s.resolveNames(ctx, tenant, srcs)
	if len(refused) == 0 {
		return s.ingestBatch(ctx, tenant, srcs)
	}
	reps := make([]Report, len(srcs))
	var rest []Source
	var at []int
	for i, src := range srcs {
		if err, ok := refused[i]; ok {
			reps[i] = refusedReport(src, err)
			continue
		}
		rest, at = append(rest, src), append(at, i)
	}
	for j, rep := range s.ingestBatch(ctx, tenant, rest) {
		reps[at[j]] = rep
	}
	return reps
}

// refusedReport is the report Ingest gives a source whose knowledge base the operator rule refused.
func refusedReport(src Source, err error) Report {
	if e := checkSupported(src.Name); e != nil {
		err = e // Ingest checks the file type first
	}
	return Report{File: src.Name, Status: rag.StatusFailed, Outcome: Outcome{StageMS: map[string]int64{}}, Error: err.Error()}
}

// ingestBatch is IngestBatch once every source's knowledge base is known to be acceptable.
func (s *Service) ingestBatch(ctx context.Context, tenant string, srcs []Source) []Report {
	reps := make([]Report, len(srcs))
	br, ok := s.Runner.Stages.Records.(BatchRecords)
	slow := make([]bool, len(srcs))
	if ok && len(srcs) > 1 {
		items, embedErr := s.prepareBatch(ctx, tenant, srcs, slow, reps)
		if len(items) > 0 {
			err := embedErr
			if err == nil {
				err = s.commitBatch(ctx, br, tenant, items)
			}
			if err != nil {
				if s.Runner.Stages.Log != nil {
					s.Runner.Stages.Log.Warn("batch failed; ingesting its documents one by one", "documents", len(items), "err", err)
				}
				for _, it := range items {
					slow[it.at] = true
				}
			} else {
				for _, it := range items {
					reps[it.at] = it.report()
				}
			}
			for _, it := range items {
				it.unlock()
			}
		}
	} else {
		for i := range slow {
			slow[i] = true
		}
	}
	for i, src := range srcs {
		if slow[i] {
			reps[i], _ = s.Ingest(ctx, tenant, src)
		}
	}
	return reps
}

// batchItem is one source on the batch path, from its prepared rows to its report.
type batchItem struct {
	at      int // index in the batch
	doc     rag.Document
	hash    string
	chunks  ChunkOut
	rows    []rag.Chunk
	stageMS map[string]int64
	unlock  func()
	texts   []string           // children to embed (one per distinct vector id)
	recs    []rag.VectorRecord // their vector records, Vector filled by embedGroups
	failed  error              // the parser or chunker refused the source for good
}

// failPrepared marks a document whose source the parser or chunker refused for good as failed, with
// the reason, and releases its lock. It had no chunks or vectors (prepareOne takes no other kind).
func (s *Service) failPrepared(ctx context.Context, it *batchItem) Report {
	defer it.unlock()
	rep := Report{File: it.doc.FileName, DocumentID: it.doc.ID, Status: rag.StatusFailed, Error: it.failed.Error(), Outcome: Outcome{StageMS: it.stageMS}}
	d := it.doc
	d.Status, d.Error, d.ChunkCount = rag.StatusFailed, truncate(it.failed.Error(), 2000), 0
	if b, err := json.Marshal(it.stageMS); err == nil {
		d.StageMillis = string(b)
	}
	if err := s.Runner.Stages.Records.UpdateDocument(ctx, &d); err != nil {
		rep.Error += " (and recording the failure failed: " + err.Error() + ")"
	}
	return rep
}

func (it *batchItem) report() Report {
	out := Outcome{Parents: it.chunks.Parents, Chunks: it.chunks.Children, Embedded: len(it.texts), StageMS: it.stageMS}
	return Report{File: it.doc.FileName, DocumentID: it.doc.ID, Status: rag.StatusReady, Outcome: out}
}

// prepareBatch runs each source's own steps (document row, stored source, extract, chunk), GOMAXPROCS
// at a time, and returns the items that can be committed together in batch order; the rest are marked
// slow. Prepared items are embedded while the others are still being prepared, so the embeddings
// provider is busy from the batch's first documents on; the first embedding error is returned with the
// items.
//
// A source the parser or chunker refuses for good (a Terminal or Invalid error: a poison file, a
// document with no text) is failed here with its reason, as Ingest would, so its parser runs once.
func (s *Service) prepareBatch(ctx context.Context, tenant string, srcs []Source, slow []bool, reps []Report) ([]*batchItem, error) {
	items := make([]*batchItem, len(srcs))
	ready := make(chan *batchItem, len(srcs))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(runtime.GOMAXPROCS(0), len(srcs)) {
		wg.Go(func() {
			for i := range next {
				it, err := s.prepareOne(ctx, tenant, srcs[i])
				switch {
				case it != nil && it.failed != nil:
					reps[i] = s.failPrepared(ctx, it)
				case err != nil || it == nil:
					slow[i] = true
				default:
					it.at = i
					items[i] = it
					ready <- it
				}
			}
		})
	}
	embedded := make(chan error, 1)
	go func() { embedded <- s.embedGroups(ctx, ready) }()
	for i := range srcs {
		next <- i
	}
	close(next)
	wg.Wait()
	close(ready)
	err := <-embedded
	var out []*batchItem
	for _, it := range items {
		if it != nil {
			out = append(out, it)
		}
	}
	return out, err
}

// Batcher is an embedder that sends texts to its provider in requests of BatchSize (embed.OpenAI): a
// batch's texts are grouped in multiples of it, so requests go out full.
type Batcher interface{ BatchSize() int }

// embedGroupRequests is how many provider requests' worth of texts one Embed call carries; without a
// Batcher a call carries embedGroupTexts texts.
const (
	embedGroupRequests = 4
	embedGroupTexts    = 64
)

// embedGroups embeds the texts of the items arriving on ready in groups of a fixed number of texts,
// cut across document boundaries so that every provider request but the batch's last is full, the
// Embed calls running concurrently (the embedder's own limit bounds its requests in flight). It
// returns the first error once every call has returned; without one, every item's records carry their
// vectors.
func (s *Service) embedGroups(ctx context.Context, ready <-chan *batchItem) error {
	emb := s.Runner.Stages.Embedder
	size := embedGroupTexts
	if b, ok := emb.(Batcher); ok && b.BatchSize() > 0 {
		size = b.BatchSize() * embedGroupRequests
	}
	type span struct {
		lo   int
		vecs [][]float32
		took time.Duration // the Embed call's own time
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	var spans []span
	embed := func(lo int, texts []string) {
		start := time.Now()
		vecs, err := emb.Embed(ctx, texts)
		took := time.Since(start)
		if err == nil && len(vecs) != len(texts) {
			err = rag.Errorf("ingest.IngestBatch", rag.KindInternal, "embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			if first == nil {
				first = fmt.Errorf("embed %d chunks: %w", len(texts), err)
			}
			return
		}
		spans = append(spans, span{lo, vecs, took})
	}
	// texts[sent:] are not sent yet; a group's slice of texts is never written again once sent (append
	// writes past it or copies), so the calls read it while more texts arrive
	var texts []string
	var items []*batchItem
	var offsets []int
	sent := 0
	for it := range ready {
		items, offsets = append(items, it), append(offsets, len(texts))
		texts = append(texts, it.texts...)
		for len(texts)-sent >= size {
			lo, group := sent, texts[sent:sent+size]
			wg.Go(func() { embed(lo, group) })
			sent += size
		}
	}
	if sent < len(texts) {
		embed(sent, texts[sent:])
	}
	wg.Wait()
	if first != nil {
		return first
	}
	vecs := make([][]float32, len(texts))
	calls := make([]embedCall, len(spans))
	for i, sp := range spans {
		copy(vecs[sp.lo:], sp.vecs)
		calls[i] = embedCall{lo: sp.lo, n: len(sp.vecs), took: sp.took}
	}
	for i, it := range items {
		for j := range it.recs {
			it.recs[j].Vector = vecs[offsets[i]+j]
		}
		it.stageMS["embed"] = embedShare(offsets[i], len(it.texts), calls)
	}
	return nil
}

// embedCall is one Embed call of a batch: it carried texts [lo, lo+n) and took took.
type embedCall struct {
	lo, n int
	took  time.Duration
}

// embedShare is one document's embedding time in milliseconds: of each Embed call that carried some of
// its texts [lo, lo+n), the part in proportion to how many of the call's texts were its own. A group
// is cut across documents, so a document's texts share calls with others; the batch's whole embedding
// time shown as each document's own made every document of a batch look as slow as all of them.
func embedShare(lo, n int, calls []embedCall) int64 {
	var share float64
	for _, c := range calls {
		overlap := min(lo+n, c.lo+c.n) - max(lo, c.lo)
		if overlap > 0 && c.n > 0 {
			share += float64(c.took) * float64(overlap) / float64(c.n)
		}
	}
	return int64(math.Round(share / float64(time.Millisecond)))
}

// errSlowPath sends a source to Ingest: not an error of the source, only not a batch case.
var errSlowPath = fmt.Errorf("not a batch case")

// prepareOne creates or finds the document row, stores the source, extracts and chunks it. On any error
// the caller sends the source through Ingest, which reports the error properly (with retries and the
// document marked failed); a parser panic is recovered here for the same reason.
func (s *Service) prepareOne(ctx context.Context, tenant string, src Source) (it *batchItem, err error) {
	if err := checkSupported(src.Name); err != nil {
		return nil, err
	}
	st := s.Runner.Stages
	kb, err := s.sourceKB(ctx, tenant, src)
	if err != nil {
		return nil, err
	}
	unlock, ok := s.tryLock(kb.ID + "\x00" + src.URI)
	if !ok { // another ingestion of the same source: Ingest waits for it
		return nil, errSlowPath
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic while preparing %s: %v", src.Name, r)
		}
		if err != nil {
			unlock()
		}
	}()
	it = &batchItem{hash: src.contentHash(), stageMS: map[string]int64{}, unlock: unlock}
	doc, err := st.Records.GetDocumentBySource(ctx, tenant, kb.ID, src.URI)
	switch {
	case err == nil:
		// only a document without chunks: an update is incremental (reused vectors, rollback to the old
		// chunks), which is Ingest's; so is an unchanged one (skipped) and an interrupted delete
		if doc.Status == rag.StatusReady || doc.Status == rag.StatusDeleted || doc.ChunkCount > 0 {
			return nil, errSlowPath
		}
		if rows, err := st.Records.ListChunks(ctx, tenant, doc.ID); err != nil || len(rows) > 0 {
			return nil, errSlowPath
		}
	case rag.Is(err, rag.KindNotFound):
		doc = rag.Document{Tenant: tenant, KBID: kb.ID, SourceURI: src.URI, FileName: truncateRunes(src.Name, 255), FileType: fileType(src.Name),
			SourceETag: truncateRunes(src.ETag, 255), Status: rag.StatusProcessing}
		if err := st.Records.CreateDocument(ctx, &doc); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	doc.FileName, doc.FileType, doc.SourceETag = truncateRunes(src.Name, 255), fileType(src.Name), truncateRunes(src.ETag, 255)
	it.doc = doc
	key := sourceKey(tenant, kb.ID, doc.ID, src.Name)
	if _, err := st.Blobs.Put(ctx, key, bytes.NewReader(src.Data), ""); err != nil {
		return nil, fmt.Errorf("store source: %w", err)
	}
	d := Doc{Tenant: tenant, KBID: kb.ID, DocumentID: doc.ID}
	if err := d.validate("ingest.IngestBatch"); err != nil {
		return nil, err
	}
	start := time.Now()
	ex, md, err := st.parseSource(ctx, ExtractIn{Doc: d, SourceKey: key, FileName: src.Name, Sidecar: src.Sidecar}, src.Data)
	it.stageMS["extract"] = time.Since(start).Milliseconds()
	if err != nil {
		return it.refuse(err)
	}
	if ex.EngineStartMS > 0 {
		it.stageMS["pdf_engine_start"] = ex.EngineStartMS
	}
	if ex.BudgetWaitMS > 0 {
		it.stageMS["extract_wait"] = ex.BudgetWaitMS
	}
	start = time.Now()
	if it.chunks, it.rows, err = st.split(ex, md); err != nil {
		return it.refuse(err)
	}
	it.stageMS["chunk"] = time.Since(start).Milliseconds()
	seen := map[string]bool{}
	for _, c := range it.rows {
		if c.Level != rag.LevelChild || seen[c.VectorID] {
			continue
		}
		seen[c.VectorID] = true
		it.texts = append(it.texts, c.Content)
		it.recs = append(it.recs, rag.VectorRecord{ID: c.VectorID, Tenant: c.Tenant, KBID: c.KBID, DocumentID: c.DocumentID, ChunkID: c.ID, Tags: c.Tags})
	}
	return it, nil
}

// refuse keeps a final parse or chunk error on the item (the document fails here, its parser having
// run once: ING-06) and returns a retryable one, which sends the source through Ingest and its retries.
func (it *batchItem) refuse(err error) (*batchItem, error) {
	if Retryable(err) {
		return nil, err
	}
	it.failed = err
	return it, nil
}

// commitBatch upserts the batch's embedded children and flushes the vectors once, checks
// with one strong count that the index holds exactly the batch's children, indexes the keywords, and
// commits every document ready in one transaction. On an error nothing is marked ready; the keyword
// entries are taken back (vectors stay for the per-document retry to reuse or replace).
func (s *Service) commitBatch(ctx context.Context, br BatchRecords, tenant string, items []*batchItem) error {
	st := s.Runner.Stages
	var recs []rag.VectorRecord
	ids := make([]string, len(items))
	children := 0
	for i, it := range items {
		ids[i] = it.doc.ID
		recs = append(recs, it.recs...)
		children += it.chunks.Children
	}
	// The keyword index is filled while the vectors are written and made durable: it is memory only,
	// analysis is most of its cost, and a hit on a chunk whose rows are not committed yet finds no row
	// and is left out of results. Taken back below if the batch fails.
	keywords := s.indexKeywords(tenant, items)
	fail := func(err error) error {
		keywords()
		if st.Keyword != nil {
			for _, it := range items {
				st.Keyword.RemoveDocument(tenant, it.doc.ID)
			}
		}
		return err
	}
	start := time.Now()
	if err := st.Vectors.Upsert(ctx, recs); err != nil {
		return fail(fmt.Errorf("upsert %d vectors: %w", len(recs), err))
	}
	if err := st.Vectors.Flush(ctx); err != nil { // the batch's one fsync, before anything says ready
		return fail(fmt.Errorf("flush vectors: %w", err))
	}
	if n, err := st.Vectors.Count(ctx, rag.Filter{Tenant: tenant, DocumentIDs: ids}); err != nil {
		return fail(fmt.Errorf("count vectors: %w", err))
	} else if n != children { // an orphan of an old crash, or a duplicate vector id: Ingest sorts it out
		return fail(&IncompleteError{Want: children, Got: n})
	}
	keywords()
	indexMS := time.Since(start).Milliseconds()
	docs := make([]rag.DocumentChunks, len(items))
	for i, it := range items {
		it.stageMS["index"] = indexMS // the batch's, shared by its documents (as "embed" is its group's)
		d := it.doc
		d.Status, d.Error, d.ChunkCount, d.ContentHash = rag.StatusReady, "", it.chunks.Children, it.hash
		d.DocVersion, d.EffectiveDate, d.Encoding = truncate(it.chunks.DocVersion, 64), truncate(it.chunks.EffectiveDate, 32), truncate(it.chunks.Encoding, 32)
		d.OCRNote = truncate(it.chunks.OCRNote, 512)
		if b, err := json.Marshal(it.stageMS); err == nil {
			d.StageMillis = string(b)
		}
		docs[i] = rag.DocumentChunks{Document: d, Add: it.rows}
	}
	if err := br.CommitDocuments(ctx, tenant, docs); err != nil {
		return fail(fmt.Errorf("commit %d documents: %w", len(docs), err))
	}
	metas := make([]docMeta, len(items))
	for i, it := range items {
		it.doc = docs[i].Document
		metas[i] = docMeta{it.doc, it.chunks.Meta, it.chunks.File}
	}
	st.writeMetas(ctx, tenant, metas)
	return nil
}

// indexKeywords starts indexing the items' chunks in the keyword index, GOMAXPROCS documents at a time
// (the index analyses outside its lock), and returns the wait for it; the wait may be called again.
func (s *Service) indexKeywords(tenant string, items []*batchItem) (wait func()) {
	kw := s.Runner.Stages.Keyword
	if kw == nil {
		return func() {}
	}
	var wg sync.WaitGroup
	next := make(chan *batchItem, len(items))
	for _, it := range items {
		next <- it
	}
	close(next)
	for range min(runtime.GOMAXPROCS(0), len(items)) {
		wg.Go(func() {
			for it := range next {
				kw.IndexDocument(tenant, it.doc.ID, it.rows)
			}
		})
	}
	return wg.Wait
}

// resolveNames checks each knowledge-base name the batch's sources give (operator channels) once, not
// once per file (the check reads the knowledge base, its creator and its members, and audits a
// refusal), and returns a copy of srcs carrying the ids of the names that passed and, by index, the
// refusal of each source whose name did not.
func (s *Service) resolveNames(ctx context.Context, tenant string, srcs []Source) ([]Source, map[int]error) {
	type verdict struct {
		id  string
		err error
	}
	var (
		out     []Source
		refused map[int]error
		seen    = map[string]verdict{}
	)
	for i, src := range srcs {
		if src.KBID != "" || src.KBName == "" {
			continue
		}
		v, ok := seen[src.KBName]
		if !ok {
			kb, err := s.OperatorKB(ctx, tenant, src.KBName, "ingest")
			v = verdict{kb.ID, err}
			seen[src.KBName] = v
		}
		if v.err != nil {
			if refused == nil {
				refused = map[int]error{}
			}
			refused[i] = v.err
			continue
		}
		if out == nil {
			out = slices.Clone(srcs)
		}
		out[i].KBID = v.id
	}
	if out == nil {
		out = srcs
	}
	return out, refused
}
