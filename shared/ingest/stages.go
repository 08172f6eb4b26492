// Package ingest turns a stored source file into indexed chunks through four stages: Extract, Chunk,
// Embed (with the diff against what is already indexed) and Index. Each stage is a plain function over
// small JSON-tagged inputs and outputs (pointers to staging blobs, never document text: a Step Functions
// payload is limited to 256 KiB), so a Step Functions task and the local Runner call the same code.
package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"

	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// Records is the relational store as ingestion uses it (sqldb.DB satisfies it).
type Records interface {
	GetKB(ctx context.Context, tenant, id string) (rag.KnowledgeBase, error)
	GetKBByName(ctx context.Context, tenant, name string) (rag.KnowledgeBase, error)
	CreateKB(ctx context.Context, kb *rag.KnowledgeBase) error
	BumpKBVersion(ctx context.Context, tenant, id string) (int64, error)
	CreateDocument(ctx context.Context, d *rag.Document) error
	GetDocument(ctx context.Context, tenant, id string) (rag.Document, error)
	GetDocumentBySource(ctx context.Context, tenant, kbID, sourceURI string) (rag.Document, error)
	ListDocuments(ctx context.Context, tenant, kbID, status string) ([]rag.Document, error)
	UpdateDocument(ctx context.Context, d *rag.Document) error
	DeleteDocument(ctx context.Context, tenant, id string) error
	ListChunks(ctx context.Context, tenant, docID string) ([]rag.Chunk, error)
	ApplyChunks(ctx context.Context, tenant, docID string, add []rag.Chunk, remove []string) error
}

// KeywordIndex is an in-process keyword index that follows ingestion.
type KeywordIndex interface {
	IndexDocument(tenant, documentID string, rows []rag.Chunk)
	RemoveDocument(tenant, documentID string)
}

// Embedder turns texts into vectors of Dim dimensions.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dim() int
}

// Stages holds what the stage functions need.
type Stages struct {
	Records Records
	Vectors store.VectorIndex
	Blobs   store.Blobs // sources
	// Staging holds the payloads passed between stages (markdown, chunks, vectors); nil means Blobs.
	// Step Functions stages must share it through S3; the local runner keeps it in memory.
	Staging  store.Blobs
	Embedder Embedder
	Limits   extract.Limits
	Chunking chunk.Options
	Log      *slog.Logger
	// Keyword, when set, is kept in step with the indexed chunks (the embedded BM25 index).
	Keyword KeywordIndex
	// Parse converts a source to markdown; nil means extract.Extract (tests substitute hostile parsers).
	Parse func(ctx context.Context, name string, data []byte, l extract.Limits) (extract.Result, error)
	// Textract, when set (on AWS), reads the images and scanned PDFs that need OCR instead of
	// Limits.OCR: Extract returns a pending job (ExtractOut.Textract) for a PDF or TIFF, which the state
	// machine waits for with TextractStatus and reads with TextractCollect.
	Textract Textract
}

// Doc names the document a stage works on.
type Doc struct {
	Tenant     string `json:"tenant"`
	KBID       string `json:"kb_id"`
	DocumentID string `json:"document_id"`
}

func (d Doc) validate(op string) error {
	for _, c := range []struct{ what, v string }{{"tenant", d.Tenant}, {"kb id", d.KBID}, {"document id", d.DocumentID}} {
		if err := rag.ValidateID(c.what, c.v); err != nil {
			return rag.E(op, rag.KindInvalid, err)
		}
	}
	return nil
}

func (d Doc) staging(name string) string {
	return "staging/" + d.Tenant + "/" + d.DocumentID + "/" + name
}

// ExtractIn points at the stored source.
type ExtractIn struct {
	Doc
	SourceKey string `json:"source_key"`
	FileName  string `json:"file_name"`
	// Run names the execution extracting the source (Prepare sets the workflow's execution name; ""
	// in process): a Textract job is started once per run, so a retried task reuses it and a new run
	// (a re-upload after a failed job) starts afresh.
	Run string `json:"run,omitempty"`
	// Sidecar is the file's sidecar metadata (Source.Sidecar), carried to the metadata write.
	Sidecar rag.Metadata `json:"sidecar,omitempty"`
	// Object is the S3 object's user metadata and tags (Source.Object), carried likewise.
	Object rag.Metadata `json:"object,omitempty"`
}

// ExtractOut points at the extracted markdown.
type ExtractOut struct {
	Doc
	MarkdownKey string `json:"markdown_key"`
	Format      string `json:"format"`
	Pages       int    `json:"pages,omitempty"`
	Hidden      int    `json:"hidden"`
	Encoding    string `json:"encoding,omitempty"` // text encoding of the source (extract.Result.Encoding)
	// EngineStartMS is how long the extraction waited for the PDF engine to start (0: it was running).
	EngineStartMS int64 `json:"engine_start_ms,omitempty"`
	// BudgetWaitMS is how long the extraction waited for room in the extraction memory budget (0: none).
	BudgetWaitMS int64 `json:"budget_wait_ms,omitempty"`
	// OCR reports the pages recognised by OCR and how confidently (nil: none was).
	OCR *extract.OCRReport `json:"ocr,omitempty"`
	// Textract is the job reading the document while it runs: no markdown is staged yet (nil: the
	// markdown is staged).
	Textract *TextractJob `json:"textract,omitempty"`
	// File is what the file says about itself (its document properties), for the metadata.
	File FileMeta `json:"file,omitempty"`
}

// ChunkOut points at the chunk rows.
type ChunkOut struct {
	Doc
	ChunksKey     string `json:"chunks_key"`
	Parents       int    `json:"parents"`
	Children      int    `json:"children"`
	Oversize      int    `json:"oversize"`
	DocVersion    string `json:"doc_version,omitempty"`
	EffectiveDate string `json:"effective_date,omitempty"`
	Encoding      string `json:"encoding,omitempty"` // carried to the document row written in Index
	// Meta is the front matter's pairs, written as the document's metadata in Index.
	Meta map[string]string `json:"meta,omitempty"`
	// File is the file's properties and detected language, written below the front matter.
	File    FileMeta `json:"file,omitempty"`
	OCRNote string   `json:"ocr_note,omitempty"` // extract.OCRReport.Note, carried to the document row
}

// EmbedIn asks for vectors; Full re-embeds every child (the fallback when an incremental update failed).
type EmbedIn struct {
	ChunkOut
	Full bool `json:"full,omitempty"`
}

// EmbedOut points at the new vectors.
type EmbedOut struct {
	ChunkOut
	VectorsKey string `json:"vectors_key"`
	Embedded   int    `json:"embedded"` // texts sent to the embeddings provider
	Reused     int    `json:"reused"`   // children whose vector is already indexed
}

// IndexOut reports what changed.
type IndexOut struct {
	Doc
	Chunks    int   `json:"chunks"` // children now indexed
	Parents   int   `json:"parents"`
	Deleted   int   `json:"deleted"` // chunks removed because they vanished from the document
	KBVersion int64 `json:"kb_version"`
}

func (s *Stages) staging() store.Blobs {
	if s.Staging != nil {
		return s.Staging
	}
	return s.Blobs
}

func (s *Stages) readBlob(ctx context.Context, key string, limit int64) ([]byte, error) {
	return readFrom(ctx, s.Blobs, key, limit)
}

func (s *Stages) readStaged(ctx context.Context, key string, limit int64) ([]byte, error) {
	return readFrom(ctx, s.staging(), key, limit)
}

func readFrom(ctx context.Context, from store.Blobs, key string, limit int64) ([]byte, error) {
	rc, _, err := from.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, rag.E("ingest.read", rag.KindUnavailable, err)
	}
	if int64(len(b)) > limit {
		return nil, rag.Errorf("ingest.read", rag.KindTerminal, "%s is larger than %d bytes", key, limit)
	}
	return b, nil
}

// Extract reads the source and writes its markdown to staging.
func (s *Stages) Extract(ctx context.Context, in ExtractIn) (ExtractOut, error) {
	const op = "ingest.Extract"
	if err := in.validate(op); err != nil {
		return ExtractOut{}, err
	}
	lim := s.Limits
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = 64 << 20
	}
	data, err := s.readBlob(ctx, in.SourceKey, lim.MaxFileBytes)
	if err != nil {
		return ExtractOut{}, fmt.Errorf("read source: %w", err)
	}
	out, md, err := s.parseSource(ctx, in, data)
	if s.Textract != nil && errors.Is(err, errTextract) {
		return s.startTextract(ctx, in, data)
	}
	if err != nil {
		return ExtractOut{}, err
	}
	if err := s.stageMarkdown(ctx, out, md); err != nil {
		return ExtractOut{}, err
	}
	return out, nil
}

func (s *Stages) stageMarkdown(ctx context.Context, out ExtractOut, md string) error {
	if _, err := s.staging().Put(ctx, out.MarkdownKey, bytes.NewReader([]byte(md)), "text/markdown"); err != nil {
		return fmt.Errorf("stage markdown: %w", err)
	}
	return nil
}

// parseSource converts a source's bytes to markdown without staging it.
func (s *Stages) parseSource(ctx context.Context, in ExtractIn, data []byte) (ExtractOut, string, error) {
	lim := s.Limits
	if lim.MaxFileBytes <= 0 {
		lim.MaxFileBytes = 64 << 20
	}
	if int64(len(data)) > lim.MaxFileBytes {
		return ExtractOut{}, "", rag.Errorf("ingest.Extract", rag.KindTerminal, "%s is larger than %d bytes", in.FileName, lim.MaxFileBytes)
	}
	if s.Textract != nil {
		lim.OCR = deferOCR{}
	}
	parse := s.Parse
	if parse == nil {
		parse = extract.Extract
	}
	res, err := parse(ctx, in.FileName, data, lim)
	if err != nil {
		return ExtractOut{}, "", err
	}
	out, md := s.extracted(ctx, in, res)
	return out, md, nil
}

// extracted is the stage's output for an extraction, logged; and its markdown.
func (s *Stages) extracted(ctx context.Context, in ExtractIn, res extract.Result) (ExtractOut, string) {
	out := ExtractOut{Doc: in.Doc, MarkdownKey: in.staging("markdown.md"), Format: res.Format, Pages: res.Pages, Hidden: res.Hidden,
		Encoding: res.Encoding, EngineStartMS: res.EngineStartMS, BudgetWaitMS: res.BudgetWaitMS, OCR: res.OCR,
		File: FileMeta{Properties: res.Properties, Sidecar: in.Sidecar, Object: in.Object}}
	if res.OCR != nil && s.Log != nil {
		level := slog.LevelInfo
		if len(res.OCR.LowPages) > 0 {
			level = slog.LevelWarn
		}
		s.Log.Log(ctx, level, "document recognised by OCR", "document", in.DocumentID, "file", in.FileName, "ocr", res.OCR.Note())
	}
	if res.Hidden > 0 && s.Log != nil {
		s.Log.Warn("hidden text stripped", "document", in.DocumentID, "file", in.FileName, "hidden", res.Hidden)
	}
	return out, res.Markdown
}

// chunkID derives a chunk's id from the document, level, content hash and occurrence, so the same text
// at the same place keeps its id across re-ingests.
func chunkID(prefix, docID, level, hash string, occ int) string {
	h := sha256.Sum256([]byte(docID + "\x00" + level + "\x00" + hash + "\x00" + strconv.Itoa(occ)))
	return prefix + hex.EncodeToString(h[:15])
}

// Chunk splits the markdown into parent and child rows with deterministic ids.
func (s *Stages) Chunk(ctx context.Context, in ExtractOut) (ChunkOut, error) {
	const op = "ingest.Chunk"
	if err := in.validate(op); err != nil {
		return ChunkOut{}, err
	}
	if in.Textract != nil {
		return ChunkOut{}, rag.Errorf(op, rag.KindInternal, "the document's Textract job %s has not been collected", in.Textract.JobID)
	}
	md, err := s.readStaged(ctx, in.MarkdownKey, 64<<20)
	if err != nil {
		return ChunkOut{}, fmt.Errorf("read markdown: %w", err)
	}
	out, rows, err := s.split(in, string(md))
	if err != nil {
		return ChunkOut{}, err
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return ChunkOut{}, rag.E(op, rag.KindInternal, err)
	}
	if _, err := s.staging().Put(ctx, out.ChunksKey, bytes.NewReader(b), "application/json"); err != nil {
		return ChunkOut{}, fmt.Errorf("stage chunks: %w", err)
	}
	return out, nil
}

// split chunks the markdown into the parent and child rows (parents first) without staging them.
func (s *Stages) split(in ExtractOut, md string) (ChunkOut, []rag.Chunk, error) {
	const op = "ingest.Chunk"
	res := chunk.Split(md, s.Chunking)
	if len(res.Children) == 0 {
		return ChunkOut{}, nil, rag.Errorf(op, rag.KindTerminal, "the document has no text to index")
	}
	occ := map[string]int{}
	parentIDs := make([]string, len(res.Parents))
	rows := make([]rag.Chunk, 0, len(res.Parents)+len(res.Children))
	for i, p := range res.Parents {
		k := "p" + p.Hash
		parentIDs[i] = chunkID("p", in.DocumentID, rag.LevelParent, p.Hash, occ[k])
		occ[k]++
		rows = append(rows, rag.Chunk{ID: parentIDs[i], Tenant: in.Tenant, KBID: in.KBID, DocumentID: in.DocumentID, Level: rag.LevelParent,
			Index: i, Content: p.Text, ContentHash: p.Hash, Chapter: p.Chapter, ContentType: p.ContentType, Tags: p.Tags, Page: p.Page, TokenCount: p.Tokens})
	}
	out := ChunkOut{Doc: in.Doc, ChunksKey: in.staging("chunks.json"), Parents: len(res.Parents), Children: len(res.Children),
		DocVersion: res.DocVersion, EffectiveDate: res.EffectiveDate, Encoding: in.Encoding, Meta: res.Meta, OCRNote: in.OCR.Note(),
		File: FileMeta{Properties: in.File.Properties, Sidecar: in.File.Sidecar, Object: in.File.Object, Language: detectLanguage(md)}}
	for i, c := range res.Children {
		k := "c" + c.Hash
		n := occ[k]
		occ[k]++
		if c.Oversize {
			out.Oversize++
		}
		rows = append(rows, rag.Chunk{ID: chunkID("c", in.DocumentID, rag.LevelChild, c.Hash, n), Tenant: in.Tenant, KBID: in.KBID,
			DocumentID: in.DocumentID, ParentID: parentIDs[c.Parent], Level: rag.LevelChild, Index: i, Content: c.Text, ContentHash: c.Hash,
			VectorID: rag.VectorID(in.KBID, in.DocumentID, c.Hash, n), Chapter: c.Chapter, ContentType: c.ContentType, Tags: c.Tags,
			Page: c.Page, TokenCount: c.Tokens})
	}
	if out.Oversize > 0 && s.Log != nil {
		s.Log.Info("oversize atomic chunks kept whole", "document", in.DocumentID, "count", out.Oversize)
	}
	return out, rows, nil
}

func (s *Stages) readChunks(ctx context.Context, key string) ([]rag.Chunk, error) {
	b, err := s.readStaged(ctx, key, 256<<20)
	if err != nil {
		return nil, fmt.Errorf("read chunks: %w", err)
	}
	var rows []rag.Chunk
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, rag.E("ingest.readChunks", rag.KindInternal, err)
	}
	return rows, nil
}

// existingVectors returns the vector ids of the document's indexed children.
func (s *Stages) existingVectors(ctx context.Context, d Doc) (map[string]bool, []rag.Chunk, error) {
	old, err := s.Records.ListChunks(ctx, d.Tenant, d.DocumentID)
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	for _, c := range old {
		if c.Level == rag.LevelChild && c.VectorID != "" {
			have[c.VectorID] = true
		}
	}
	return have, old, nil
}

// Embed embeds the children whose vector is not indexed yet (all of them when Full) and stages the
// vectors. Re-ingesting an unchanged document embeds nothing.
func (s *Stages) Embed(ctx context.Context, in EmbedIn) (EmbedOut, error) {
	const op = "ingest.Embed"
	if err := in.validate(op); err != nil {
		return EmbedOut{}, err
	}
	rows, err := s.readChunks(ctx, in.ChunksKey)
	if err != nil {
		return EmbedOut{}, err
	}
	have := map[string]bool{}
	if !in.Full {
		if have, _, err = s.existingVectors(ctx, in.Doc); err != nil {
			return EmbedOut{}, err
		}
	}
	var ids, texts []string
	out := EmbedOut{ChunkOut: in.ChunkOut, VectorsKey: in.staging("vectors.bin")}
	seen := map[string]bool{}
	for _, c := range rows {
		if c.Level != rag.LevelChild || seen[c.VectorID] {
			continue
		}
		seen[c.VectorID] = true
		if have[c.VectorID] {
			out.Reused++
			continue
		}
		ids = append(ids, c.VectorID)
		texts = append(texts, c.Content)
	}
	var vecs [][]float32
	if len(texts) > 0 {
		if vecs, err = s.Embedder.Embed(ctx, texts); err != nil {
			return EmbedOut{}, fmt.Errorf("embed %d chunks: %w", len(texts), err)
		}
		if len(vecs) != len(texts) {
			return EmbedOut{}, rag.Errorf(op, rag.KindInternal, "embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
	}
	out.Embedded = len(texts)
	if _, err := s.staging().Put(ctx, out.VectorsKey, bytes.NewReader(encodeVectors(ids, vecs)), "application/octet-stream"); err != nil {
		return EmbedOut{}, fmt.Errorf("stage vectors: %w", err)
	}
	return out, nil
}

// encodeVectors writes count | (idLen u16, id, dim u32, dim x f32)*, little endian.
func encodeVectors(ids []string, vecs [][]float32) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint32(len(ids)))
	for i, id := range ids {
		binary.Write(&b, binary.LittleEndian, uint16(len(id)))
		b.WriteString(id)
		binary.Write(&b, binary.LittleEndian, uint32(len(vecs[i])))
		for _, x := range vecs[i] {
			binary.Write(&b, binary.LittleEndian, math.Float32bits(x))
		}
	}
	return b.Bytes()
}

func decodeVectors(data []byte) (map[string][]float32, error) {
	r := bytes.NewReader(data)
	var n uint32
	if err := binary.Read(r, binary.LittleEndian, &n); err != nil {
		return nil, err
	}
	out := make(map[string][]float32, n)
	for range n {
		var l uint16
		if err := binary.Read(r, binary.LittleEndian, &l); err != nil {
			return nil, err
		}
		id := make([]byte, l)
		if _, err := io.ReadFull(r, id); err != nil {
			return nil, err
		}
		var dim uint32
		if err := binary.Read(r, binary.LittleEndian, &dim); err != nil {
			return nil, err
		}
		if dim > 1<<16 {
			return nil, fmt.Errorf("vector dimension %d", dim)
		}
		v := make([]float32, dim)
		if err := binary.Read(r, binary.LittleEndian, v); err != nil {
			return nil, err
		}
		out[string(id)] = v
	}
	return out, nil
}

// Index writes the new vectors, swaps the document's SQL rows in one transaction, removes vectors of
// vanished chunks, and checks with a strong count that exactly the document's children are indexed.
// Only then is the document ready and the knowledge base version bumped. It is IndexWrite, Verify and
// Commit in one call (the local runner); the Step Functions workflow runs them as three states.
//
// Order matters for crash safety (ING-05): vectors first (deterministic ids, so a retry upserts the same
// rows), SQL second (the record of what should exist), stale vectors last. A crash anywhere leaves a
// state the retry, or the consistency check, converges from.
func (s *Stages) Index(ctx context.Context, in EmbedOut) (IndexOut, error) {
	const op = "ingest.Index"
	if err := in.validate(op); err != nil {
		return IndexOut{}, err
	}
	vb, err := s.readStaged(ctx, in.VectorsKey, 1<<30)
	if err != nil {
		return IndexOut{}, fmt.Errorf("read vectors: %w", err)
	}
	vecs, err := decodeVectors(vb)
	if err != nil {
		return IndexOut{}, rag.E(op, rag.KindInternal, fmt.Errorf("staged vectors: %w", err))
	}
	w, err := s.indexWrite(ctx, in.ChunkOut, vecs)
	if err != nil {
		return IndexOut{}, err
	}
	if _, err := s.Verify(ctx, in.ChunkOut); err != nil {
		return IndexOut{}, err
	}
	c, err := s.Commit(ctx, CommitIn{ChunkOut: in.ChunkOut, keywordRows: w.rows})
	if err != nil {
		return IndexOut{}, err
	}
	return IndexOut{Doc: in.Doc, Chunks: w.Chunks, Parents: in.Parents, Deleted: w.Deleted, KBVersion: c.KBVersion}, nil
}

// written is what indexWrite did.
type written struct {
	Chunks  int // children the document now has
	Deleted int // chunk rows removed because they vanished from the document
	rows    []rag.Chunk
}

// indexWrite upserts the staged vectors (vecs, by vector id), swaps the document's chunk rows and
// deletes the vectors of vanished children. It does not verify or mark anything ready.
func (s *Stages) indexWrite(ctx context.Context, in ChunkOut, vecs map[string][]float32) (written, error) {
	rows, err := s.readChunks(ctx, in.ChunksKey)
	if err != nil {
		return written{}, err
	}
	var recs []rag.VectorRecord
	children := map[string]bool{}
	for _, c := range rows {
		if c.Level != rag.LevelChild {
			continue
		}
		children[c.VectorID] = true
		if v, ok := vecs[c.VectorID]; ok {
			recs = append(recs, rag.VectorRecord{ID: c.VectorID, Tenant: c.Tenant, KBID: c.KBID, DocumentID: c.DocumentID, ChunkID: c.ID, Tags: c.Tags, Vector: v})
			delete(vecs, c.VectorID)
		}
	}
	if err := s.Vectors.Upsert(ctx, recs); err != nil {
		return written{}, fmt.Errorf("upsert %d vectors: %w", len(recs), err)
	}
	if err := s.Vectors.Flush(ctx); err != nil {
		return written{}, fmt.Errorf("flush vectors: %w", err)
	}
	_, old, err := s.existingVectors(ctx, in.Doc)
	if err != nil {
		return written{}, err
	}
	oldIDs := make([]string, len(old))
	newIDs := map[string]bool{}
	for _, c := range rows {
		newIDs[c.ID] = true
	}
	var stale []string
	deleted := 0
	for i, c := range old {
		oldIDs[i] = c.ID
		if c.Level == rag.LevelChild && !children[c.VectorID] && c.VectorID != "" {
			stale = append(stale, c.VectorID)
		}
		if !newIDs[c.ID] {
			deleted++
		}
	}
	if err := s.Records.ApplyChunks(ctx, in.Tenant, in.DocumentID, rows, oldIDs); err != nil {
		return written{}, fmt.Errorf("write chunk rows: %w", err)
	}
	if len(stale) > 0 {
		if err := s.Vectors.Delete(ctx, in.Tenant, stale); err != nil {
			return written{}, fmt.Errorf("delete %d stale vectors: %w", len(stale), err)
		}
		if err := s.Vectors.Flush(ctx); err != nil {
			return written{}, fmt.Errorf("flush vectors: %w", err)
		}
	}
	return written{Chunks: len(children), Deleted: deleted, rows: rows}, nil
}

// VerifyOut is the strong count that matched.
type VerifyOut struct {
	Doc
	Vectors int `json:"vectors"`
}

// Verify checks with a strong count that the vector index holds exactly the document's children
// (in.Children). An *IncompleteError (errorType "Incomplete") when it does not: a missing vector, or an
// orphan of an old crash.
func (s *Stages) Verify(ctx context.Context, in ChunkOut) (VerifyOut, error) {
	const op = "ingest.Verify"
	if err := in.validate(op); err != nil {
		return VerifyOut{}, err
	}
	n, err := s.Vectors.Count(ctx, rag.Filter{Tenant: in.Tenant, KBIDs: []string{in.KBID}, DocumentIDs: []string{in.DocumentID}})
	if err != nil {
		return VerifyOut{}, fmt.Errorf("count vectors: %w", err)
	}
	if n != in.Children {
		return VerifyOut{}, &IncompleteError{Want: in.Children, Got: n}
	}
	return VerifyOut{Doc: in.Doc, Vectors: n}, nil
}

// CommitIn finishes a verified document.
type CommitIn struct {
	ChunkOut
	// ContentHash, when set, is recorded as the hash of the source these chunks came from (the workflow's
	// skip-unchanged check reads it).
	ContentHash string `json:"content_hash,omitempty"`
	keywordRows []rag.Chunk
}

// CommitOut reports the knowledge base version the document's chunks are part of.
type CommitOut struct {
	Doc
	KBVersion int64 `json:"kb_version"`
}

// Commit makes a verified document visible: keyword index, knowledge base version bump, then status
// ready (last, so whoever sees ready sees the rest current), then staging cleanup.
func (s *Stages) Commit(ctx context.Context, in CommitIn) (CommitOut, error) {
	const op = "ingest.Commit"
	if err := in.validate(op); err != nil {
		return CommitOut{}, err
	}
	if doc, err := s.Records.GetDocument(ctx, in.Tenant, in.DocumentID); err == nil && doc.Status == rag.StatusDeleted {
		// a knowledge-base delete tombstoned it while this run held the source (a document created after
		// the delete took its documents' leases, or a run without leases): ready would bring it back. The
		// delete, repeated or finished by the consistency run, purges what this run wrote.
		s.cleanStaging(ctx, in.Doc)
		return CommitOut{Doc: in.Doc}, nil
	}
	if s.Keyword != nil {
		rows := in.keywordRows
		if rows == nil {
			var err error
			if rows, err = s.Records.ListChunks(ctx, in.Tenant, in.DocumentID); err != nil {
				return CommitOut{}, err
			}
		}
		s.Keyword.IndexDocument(in.Tenant, in.DocumentID, rows)
	}
	v, err := s.Records.BumpKBVersion(ctx, in.Tenant, in.KBID)
	if err != nil {
		return CommitOut{}, err
	}
	doc, err := s.Records.GetDocument(ctx, in.Tenant, in.DocumentID)
	if err != nil {
		return CommitOut{}, err
	}
	doc.Status, doc.Error, doc.ChunkCount = rag.StatusReady, "", in.Children
	doc.DocVersion, doc.EffectiveDate = truncate(in.DocVersion, 64), truncate(in.EffectiveDate, 32)
	doc.Encoding, doc.OCRNote = truncate(in.Encoding, 32), truncate(in.OCRNote, 512)
	if in.ContentHash != "" {
		doc.ContentHash = in.ContentHash
	}
	if err := s.Records.UpdateDocument(ctx, &doc); err != nil {
		return CommitOut{}, err
	}
	s.writeMeta(ctx, doc, in.Meta, in.File)
	s.cleanStaging(ctx, in.Doc)
	return CommitOut{Doc: in.Doc, KBVersion: v}, nil
}

// cleanStaging removes a document's staging payloads. Staging is scratch: a leftover is harmless,
// overwritten next time, and removed by the consistency check.
func (s *Stages) cleanStaging(ctx context.Context, d Doc) {
	if list, err := s.staging().List(ctx, d.staging("")); err == nil {
		for _, b := range list {
			s.staging().Delete(ctx, b.Key)
		}
	}
}

// IncompleteError is the strong count disagreeing with what was written: retryable, and the Runner's
// cue to rebuild the document's vectors in full.
type IncompleteError struct{ Want, Got int }

// ErrorType names the error for Step Functions: a strong count that disagrees is neither a passing
// outage (retrying the count does not add the missing vector) nor a poison document.
func (e *IncompleteError) ErrorType() string { return "Incomplete" }

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("the vector index holds %d vectors for the document, want %d", e.Got, e.Want)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
