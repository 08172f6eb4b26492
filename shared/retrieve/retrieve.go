// Package retrieve runs the retrieval chain of one query (DESIGN.md section 6, steps 6-11): vector and
// BM25 legs in parallel, weighted reciprocal-rank fusion by the query profile, rerank with a lexical
// fallback, QAnything's filter, MMR, parent expansion, compression and the CRAG grade (in process, or by
// the grade function with the in-process grade as its fallback). Every stage's output is kept in the
// Result, which is what `docmind search` prints and what the chat timeline's retrieval, rerank and
// grader events carry.
package retrieve

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/rank"
)

// Keyword is the BM25 leg (bm25.Index, or the MySQL adapter).
type Keyword interface {
	Search(ctx context.Context, query string, k int, f rag.Filter) ([]rag.Hit, error)
}

// Vectors is the vector leg.
type Vectors interface {
	Search(ctx context.Context, query []float32, k int, f rag.Filter) ([]rag.Hit, error)
}

// Embedder embeds the query (and the HyDE text).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Chunks loads chunk rows (children and parents) and documents, scoped by tenant.
type Chunks interface {
	GetChunks(ctx context.Context, tenant string, ids []string) ([]rag.Chunk, error)
	GetDocument(ctx context.Context, tenant, id string) (rag.Document, error)
}

// Grader judges the final evidence, sent best first (the CRAG grade, DESIGN.md step 11). rerankKnown says
// the scores came from a rerank model that answered. The grade function (shared/lambdafn.Grader) is one;
// without one the chain grades in process with rank.GradeEvidence and Options.Grade.
type Grader interface {
	Grade(ctx context.Context, query string, ev []rank.Evidence, rerankKnown bool) (rank.Grade, error)
}

// Options are the chain's sizes and switches (DESIGN.md defaults).
type Options struct {
	LegK int // candidates of the vector leg (50), and of the keyword leg when KeywordK is 0
	// KeywordK is the BM25 leg's candidates (100): a document's children cluster in its ranking (they
	// share the parent's terms), and 50 chunks held fewer than 10 documents often enough that the
	// chain ranked below BM25 alone on SciFact (docs/eval/retrieval.md)
	KeywordK        int
	FusedK          int     // candidates after fusion, of distinct parents, sent to rerank (30)
	RerankK         int     // kept after rerank (8)
	MMRLambda       float64 // (0.7)
	SemanticVectors bool    // the embedder captures meaning (false for the offline embedder)
	Filter          rank.FilterOptions
	Compress        rank.CompressOptions
	Grade           rank.GradeOptions
}

// DefaultOptions are DESIGN.md's.
func DefaultOptions() Options {
	return Options{LegK: 50, KeywordK: 100, FusedK: 30, RerankK: 8, MMRLambda: 0.7, Grade: rank.DefaultGradeOptions()}
}

// Retriever runs the chain.
type Retriever struct {
	Keyword  Keyword
	Vectors  Vectors
	Embedder Embedder
	Chunks   Chunks
	Reranker rank.Reranker // nil: lexical scores (not degraded)
	// Grader nil grades in process; a failing one is replaced by the in-process grade, "grade" in
	// degraded, as a failing Reranker is by lexical scores.
	Grader  Grader
	Options Options
}

// Query is one retrieval request.
type Query struct {
	Text string
	HyDE string // hypothetical answer: replaces Text on the vector leg only (fuzzy queries)
	// Vector is Text's embedding when the caller already has it (the semantic cache embeds the question
	// first); it saves one embedding call. Ignored when HyDE is set.
	Vector []float32
	Filter rag.Filter
	// KeywordOnly skips the vector leg (the agent's keyword_search tool: exact names, codes, numbers).
	KeywordOnly bool
}

// Result holds every stage's output.
type Result struct {
	Profile   rank.Profile     `json:"profile"`
	Keyword   []rag.Hit        `json:"keyword"`
	Vector    []rag.Hit        `json:"vector"`
	Fused     []rag.Hit        `json:"fused"`
	Ranked    []rank.Evidence  `json:"ranked,omitempty"` // every fused candidate in the rerank's order, before the reader's cut (Retrieve only)
	Reranked  []rank.Evidence  `json:"reranked"`
	Filtered  []rank.Evidence  `json:"filtered"`
	Diverse   []rank.Evidence  `json:"diverse"`
	Expanded  []rank.Evidence  `json:"expanded"`
	Evidence  []rank.Evidence  `json:"evidence"` // the final, compressed list
	Grade     rank.Grade       `json:"grade"`
	Degraded  []string         `json:"degraded,omitempty"`
	StageMS   map[string]int64 `json:"stage_ms"`
	LegErrors []string         `json:"leg_errors,omitempty"`
}

// Retrieve runs the chain. A failing leg degrades (the other leg still answers); both failing is an error.
func (r *Retriever) Retrieve(ctx context.Context, q Query) (*Result, error) {
	res, ev, err := r.Candidates(ctx, q)
	if err != nil {
		return nil, err
	}
	o := r.Options
	start := time.Now()
	reranked, degraded, _ := rank.RerankEvidence(ctx, r.Reranker, q.Text, ev)
	if degraded {
		res.Degraded = append(res.Degraded, "rerank")
	}
	res.Ranked = slices.Clone(reranked) // the stages after may reorder their lists in place
	reranked = Cut(reranked, o.RerankK)
	res.StageMS["rerank"] += time.Since(start).Milliseconds()
	if err := r.Narrow(ctx, q.Filter.Tenant, res, reranked, r.Reranker != nil && !degraded); err != nil {
		return nil, err
	}

	start = time.Now()
	var gradeFailed bool
	res.Grade, gradeFailed = r.grade(ctx, q.Text, res.Evidence, r.Reranker != nil && !degraded)
	if gradeFailed {
		res.Degraded = append(res.Degraded, "grade")
	}
	res.StageMS["grade"] += time.Since(start).Milliseconds()
	return res, nil
}

// Candidates is the chain up to its rerank: both legs, their fusion cut to FusedK and the loaded fused
// candidates, with the result's profile, hit lists, degraded legs and stage times. The answer workflow
// reranks these in another function, then hands them to Narrow.
func (r *Retriever) Candidates(ctx context.Context, q Query) (*Result, []rank.Evidence, error) {
	const op = "retrieve"
	if err := q.Filter.Validate(); err != nil {
		return nil, nil, rag.E(op, rag.KindInvalid, err)
	}
	o := r.Options
	res := &Result{StageMS: map[string]int64{}}
	stage := func(name string, start time.Time) { res.StageMS[name] += time.Since(start).Milliseconds() }
	res.Profile = rank.ProfileQuery(q.Text, o.SemanticVectors)

	start := time.Now()
	var wg sync.WaitGroup
	var kerr, verr error
	kk := o.KeywordK
	if kk <= 0 {
		kk = o.LegK
	}
	wg.Go(func() { res.Keyword, kerr = r.Keyword.Search(ctx, q.Text, kk, q.Filter) })
	wg.Go(func() {
		if q.KeywordOnly {
			return
		}
		text := q.Text
		if q.HyDE != "" {
			text = q.HyDE // the BM25 leg keeps the user's words: generated text would dilute IDF
		}
		if q.Vector != nil && q.HyDE == "" {
			res.Vector, verr = r.Vectors.Search(ctx, q.Vector, o.LegK, q.Filter)
			return
		}
		var v [][]float32
		if v, verr = r.Embedder.Embed(ctx, []string{text}); verr == nil {
			res.Vector, verr = r.Vectors.Search(ctx, v[0], o.LegK, q.Filter)
		}
	})
	wg.Wait()
	stage("retrieval", start)
	switch {
	case kerr != nil && verr != nil:
		return nil, nil, fmt.Errorf("both retrieval legs failed: keyword: %w; vector: %v", kerr, verr)
	case kerr != nil:
		res.Degraded = append(res.Degraded, "keyword")
		res.LegErrors = append(res.LegErrors, "keyword: "+rag.KindOf(kerr).String())
	case verr != nil:
		res.Degraded = append(res.Degraded, "vector")
		res.LegErrors = append(res.LegErrors, "vector: "+rag.KindOf(verr).String())
	}

	start = time.Now()
	p := res.Profile
	fused := rank.RRF(p.K, rank.Leg{Hits: res.Keyword, Weight: p.BM25Weight}, rank.Leg{Hits: res.Vector, Weight: p.VectorWeight})
	var ev []rank.Evidence
	var err error
	if res.Fused, ev, err = r.load(ctx, q.Filter.Tenant, fused, o.FusedK); err != nil {
		return nil, nil, err
	}
	stage("fusion", start)
	return res, ev, nil
}

// Narrow is the chain after its rerank, over reranked (already cut to RerankK), into res: the filter
// (a dedupe when no model scored them: QAnything's thresholds are calibrated for cross-encoder scores,
// relative fused scores only dedupe), diversity (MMR), parent expansion and compression. Errors: the
// chunk store's (parents).
func (r *Retriever) Narrow(ctx context.Context, tenant string, res *Result, reranked []rank.Evidence, modelScored bool) error {
	o := r.Options
	start := time.Now()
	res.Reranked = reranked
	if modelScored {
		res.Filtered = rank.Filter(reranked, o.Filter)
	} else {
		res.Filtered = rank.Dedupe(reranked)
	}
	res.StageMS["rerank"] += time.Since(start).Milliseconds()

	start = time.Now()
	res.Diverse = rank.MMR(res.Filtered, len(res.Filtered), o.MMRLambda)
	parents, err := r.parents(ctx, tenant, res.Diverse)
	if err != nil {
		return err
	}
	res.Expanded = rank.ExpandParents(res.Diverse, parents)
	res.Evidence = rank.Compress(res.Expanded, o.Compress)
	res.StageMS["compress"] += time.Since(start).Milliseconds()
	return nil
}

// grade judges the evidence with the Grader when there is one, and in process when there is none, when
// there is nothing to judge (no call for a verdict that needs no evidence), or when the Grader failed
// (failed set): both compute the same verdict from the same thresholds, so a failed invoke costs only
// the time it took, never the answer.
func (r *Retriever) grade(ctx context.Context, query string, ev []rank.Evidence, rerankKnown bool) (g rank.Grade, failed bool) {
	if r.Grader != nil && len(ev) > 0 {
		var err error
		if g, err = r.Grader.Grade(ctx, query, ev, rerankKnown); err == nil {
			return g, false
		}
		failed = true
	}
	return rank.GradeEvidence(query, ev, r.Options.Grade, rerankKnown), failed
}

// load turns the first fused hits of k distinct parents into evidence with their chunk rows, and
// returns those hits. A hit whose parent is already kept is dropped: the reader is given each parent
// once (Cut, ExpandParents), so a later sibling adds nothing but takes one of the k places the rerank
// scores; cutting the fused list at k chunks instead left SciFact's candidates covering fewer than 10
// documents, and the chain ranked below its BM25 leg (docs/eval/retrieval.md). Hits whose chunk or
// document is gone are dropped too (a deleted document must never reach a prompt, whatever a lagging
// index says). A chunk without a parent counts as its own.
func (r *Retriever) load(ctx context.Context, tenant string, hits []rag.Hit, k int) ([]rag.Hit, []rank.Evidence, error) {
	names := map[string]string{}
	parents := make(map[string]bool, k)
	kept := make([]rag.Hit, 0, k)
	out := make([]rank.Evidence, 0, k)
	// rows are read in windows of 2k hits until k parents are kept: the fused list is long (both
	// legs' candidates) and its head usually suffices
	for from := 0; from < len(hits) && len(out) < k; from += 2 * k {
		window := hits[from:min(len(hits), from+2*k)]
		ids := make([]string, len(window))
		for i, h := range window {
			ids[i] = h.ChunkID
		}
		rows, err := r.rows(ctx, tenant, ids, names)
		if err != nil {
			return nil, nil, fmt.Errorf("load chunks: %w", err)
		}
		byID := make(map[string]*rag.ChunkText, len(rows))
		for i := range rows {
			byID[rows[i].ID] = &rows[i]
		}
		for _, h := range window {
			if len(out) == k {
				break
			}
			c, ok := byID[h.ChunkID]
			if !ok {
				continue
			}
			parent := c.ParentID
			if parent == "" {
				parent = "\x00" + c.ID
			}
			if parents[parent] {
				continue
			}
			name, seen := names[c.DocumentID]
			if !seen {
				if d, err := r.Chunks.GetDocument(ctx, tenant, c.DocumentID); err == nil && d.Status == rag.StatusReady {
					name = d.FileName
				} else {
					name = "\x00gone"
				}
				names[c.DocumentID] = name
			}
			if name == "\x00gone" {
				continue
			}
			parents[parent] = true
			kept = append(kept, h)
			out = append(out, rank.Evidence{ChunkID: c.ID, ParentID: c.ParentID, DocumentID: c.DocumentID, KBID: c.KBID, FileName: name,
				Chapter: c.Chapter, Page: c.Page, Text: c.Content, ChildText: c.Content, Score: float64(h.Score)})
		}
	}
	return kept, out, nil
}

// readyChunks is the chunk store's look-up of chunks joined to their ready documents in one query
// (sqldb.DB has it): the candidates' rows and file names without a second query for the documents.
type readyChunks interface {
	GetReadyChunks(ctx context.Context, tenant string, ids []string) ([]rag.ChunkText, map[string]string, error)
}

// rows reads the chunk rows of ids and records their documents' file names in names (first one wins;
// "\x00gone" for a document not ready or missing, where the store says so). With readyChunks a chunk of
// a document not ready is not returned at all, which load treats as the same drop.
func (r *Retriever) rows(ctx context.Context, tenant string, ids []string, names map[string]string) ([]rag.ChunkText, error) {
	if rc, ok := r.Chunks.(readyChunks); ok {
		rows, docs, err := rc.GetReadyChunks(ctx, tenant, ids)
		if err != nil {
			return nil, err
		}
		for id, name := range docs {
			if _, seen := names[id]; !seen {
				names[id] = name
			}
		}
		return rows, nil
	}
	rows, err := r.Chunks.GetChunks(ctx, tenant, ids)
	if err != nil {
		return nil, err
	}
	for id, name := range r.documentNames(ctx, tenant, rows) { // one query per window where the store can
		if _, seen := names[id]; !seen {
			names[id] = name
		}
	}
	out := make([]rag.ChunkText, len(rows))
	for i, c := range rows {
		out[i] = c.Text()
	}
	return out, nil
}

// documentBatch is the chunk store's look-up of many documents in one query (sqldb.DB has it).
type documentBatch interface {
	GetDocuments(ctx context.Context, tenant string, ids []string) ([]rag.Document, error)
}

// documentNames returns the file name of every ready document of rows, and "\x00gone" for one that is
// not ready or missing, when the store reads them in one query; load asks the others one at a time (a
// store without the batch, or a batch that failed).
func (r *Retriever) documentNames(ctx context.Context, tenant string, rows []rag.Chunk) map[string]string {
	names := map[string]string{}
	b, ok := r.Chunks.(documentBatch)
	if !ok || len(rows) == 0 {
		return names
	}
	var ids []string
	for _, c := range rows {
		if _, dup := names[c.DocumentID]; !dup {
			names[c.DocumentID] = "\x00gone"
			ids = append(ids, c.DocumentID)
		}
	}
	docs, err := b.GetDocuments(ctx, tenant, ids)
	if err != nil {
		return map[string]string{}
	}
	for _, d := range docs {
		if d.Status == rag.StatusReady {
			names[d.ID] = d.FileName
		}
	}
	return names
}

func (r *Retriever) parents(ctx context.Context, tenant string, ev []rank.Evidence) (map[string]rag.ChunkText, error) {
	var ids []string
	for _, e := range ev {
		if e.ParentID != "" {
			ids = append(ids, e.ParentID)
		}
	}
	var rows []rag.ChunkText
	if rc, ok := r.Chunks.(readyChunks); ok { // the parent of a ready child is ready too, unless it was just deleted
		var err error
		if rows, _, err = rc.GetReadyChunks(ctx, tenant, ids); err != nil {
			return nil, fmt.Errorf("load parents: %w", err)
		}
	} else {
		full, err := r.Chunks.GetChunks(ctx, tenant, ids)
		if err != nil {
			return nil, fmt.Errorf("load parents: %w", err)
		}
		for _, c := range full {
			rows = append(rows, c.Text())
		}
	}
	out := make(map[string]rag.ChunkText, len(rows))
	for _, c := range rows {
		out[c.ID] = c
	}
	return out, nil
}
