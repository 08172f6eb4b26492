package rag

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Document statuses. A document is served only when Ready.
const (
	StatusPending    = "pending"
	StatusProcessing = "processing"
	StatusReady      = "ready"
	StatusFailed     = "failed"
	StatusDeleted    = "deleted"
)

// Chunk levels: only children are embedded and keyword-indexed; parents are context for generation.
const (
	LevelParent = "parent"
	LevelChild  = "child"
)

// Content types a chunk can carry (derived from its heading stack and block kind).
const (
	ContentProcedure  = "procedure"
	ContentWarning    = "warning"
	ContentExample    = "example"
	ContentDefinition = "definition"
	ContentTable      = "table"
	ContentCode       = "code"
	ContentGeneral    = "general"
)

// KnowledgeBase is a named set of documents owned by one tenant. Version bumps on every chunk change and
// keys the semantic cache, so a cached answer never outlives the text it was built from.
type KnowledgeBase struct {
	ID          string    `json:"id"`
	Tenant      string    `json:"tenant"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
}

// Document is one source file in a knowledge base and its ingestion state.
type Document struct {
	ID              string    `json:"id"`
	Tenant          string    `json:"tenant"`
	KBID            string    `json:"kb_id"`
	SourceURI       string    `json:"source_uri"`
	SourceETag      string    `json:"source_etag,omitempty"`
	SourceSequencer string    `json:"source_sequencer,omitempty"`
	FileName        string    `json:"file_name"`
	FileType        string    `json:"file_type"`
	ContentHash     string    `json:"content_hash,omitempty"`
	Status          string    `json:"status"`
	Error           string    `json:"error,omitempty"`
	DocVersion      string    `json:"doc_version,omitempty"`
	EffectiveDate   string    `json:"effective_date,omitempty"`
	ChunkCount      int       `json:"chunk_count"`
	StageMillis     string    `json:"stage_ms,omitempty"` // JSON {"extract":ms,...} of the last ingestion
	Encoding        string    `json:"encoding,omitempty"` // text encoding the source was read from ("utf-8", "gb18030", ...); empty for binary formats
	OCRNote         string    `json:"ocr_note,omitempty"` // what OCR did: pages, mean confidence, pages of low confidence (empty: no OCR)
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// Chunk is a piece of a document. Children carry the text that is embedded and searched; each child points
// at the parent that gives generation its wider context.
type Chunk struct {
	ID          string   `json:"id"`
	Tenant      string   `json:"tenant"`
	KBID        string   `json:"kb_id"`
	DocumentID  string   `json:"document_id"`
	ParentID    string   `json:"parent_id,omitempty"`
	Level       string   `json:"level"`
	Index       int      `json:"chunk_index"`
	Content     string   `json:"content"`
	ContentHash string   `json:"content_hash"`
	VectorID    string   `json:"vector_id,omitempty"`
	Chapter     string   `json:"chapter,omitempty"` // heading breadcrumb "A > B > C"
	ContentType string   `json:"content_type"`
	Tags        []string `json:"tags,omitempty"`
	Page        int      `json:"page,omitempty"`
	TokenCount  int      `json:"token_count"`
}

// ChunkText is what a retrieval chain reads of a candidate chunk: where it sits and its text. Reading
// these columns alone instead of the whole row halves the chain's row look-up at 100k chunks
// (docs/bench/million.md).
type ChunkText struct {
	ID         string
	KBID       string
	DocumentID string
	ParentID   string
	Chapter    string
	Page       int
	Content    string
}

// Text is c as a ChunkText.
func (c Chunk) Text() ChunkText {
	return ChunkText{ID: c.ID, KBID: c.KBID, DocumentID: c.DocumentID, ParentID: c.ParentID, Chapter: c.Chapter, Page: c.Page, Content: c.Content}
}

// Filter scopes a search or count. Tenant is mandatory for every store read; the other fields narrow
// further and are ANDed: an empty list means "no restriction on this field", never "match nothing".
type Filter struct {
	Tenant      string   `json:"tenant"`
	KBIDs       []string `json:"kb_ids,omitempty"`
	DocumentIDs []string `json:"document_ids,omitempty"`
	Tags        []string `json:"tags,omitempty"` // any of these tags
	// Meta is the metadata filter DocumentIDs were resolved from, when they were: an index that keeps
	// metadata on its rows (Milvus, FieldMeta) may apply it instead of a long id list. It never widens
	// the restriction (DocumentIDs stays the authority) and does not travel in JSON.
	Meta *MetaFilter `json:"-"`
}

// Validate checks that every id in the filter is well formed, so that it can be placed into a query or a
// filter expression without escaping.
func (f Filter) Validate() error {
	if err := f.ValidateScope(); err != nil {
		return err
	}
	for _, id := range f.DocumentIDs {
		if err := ValidateID("document id", id); err != nil {
			return E("rag.Filter", KindInvalid, err)
		}
	}
	return nil
}

// ValidateScope is Validate without the document ids: for an index that validates them once per
// restriction it caches (DocBits) rather than on every query.
func (f Filter) ValidateScope() error {
	const op = "rag.Filter"
	if err := ValidateID("tenant", f.Tenant); err != nil {
		return E(op, KindInvalid, err)
	}
	for _, id := range f.KBIDs {
		if err := ValidateID("kb id", id); err != nil {
			return E(op, KindInvalid, err)
		}
	}
	for _, t := range f.Tags {
		if err := ValidateTag(t); err != nil {
			return E(op, KindInvalid, err)
		}
	}
	return nil
}

// VectorRecord is one embedded child chunk as stored in a vector index.
type VectorRecord struct {
	ID         string    `json:"id"`
	Tenant     string    `json:"tenant"`
	KBID       string    `json:"kb_id"`
	DocumentID string    `json:"document_id"`
	ChunkID    string    `json:"chunk_id"`
	Tags       []string  `json:"tags,omitempty"`
	Vector     []float32 `json:"-"`
}

// Hit is one search result: a chunk id with its score from one retriever (higher is better).
type Hit struct {
	ID         string  `json:"id"` // vector id for vector search, chunk id for keyword search
	ChunkID    string  `json:"chunk_id"`
	DocumentID string  `json:"document_id"`
	KBID       string  `json:"kb_id"`
	Score      float32 `json:"score"`
}

// Source is a piece of evidence cited by an answer.
type Source struct {
	N          int      `json:"n"` // the [n] marker in the answer text
	DocumentID string   `json:"document_id"`
	FileName   string   `json:"file_name"`
	Chapter    string   `json:"chapter,omitempty"`
	Page       int      `json:"page,omitempty"`
	Snippet    string   `json:"snippet"`
	Score      float32  `json:"score"`
	Serves     []string `json:"serves,omitempty"` // sub-questions this source served (decomposed path)
	URL        string   `json:"url,omitempty"`    // web sources
}

// Confidence bands.
const (
	BandHigh   = "HIGH"
	BandMedium = "MEDIUM"
	BandLow    = "LOW"
)

// Answer is the final result of one question.
type Answer struct {
	MessageID  string   `json:"message_id"`
	Text       string   `json:"text"`
	Sources    []Source `json:"sources"`
	Confidence float64  `json:"confidence"`
	Band       string   `json:"band"`
	FromCache  bool     `json:"from_cache"`
	IsFallback bool     `json:"is_fallback"`
	Degraded   []string `json:"degraded,omitempty"`
}

// MaxTags bounds the tags of one vector record.
const MaxTags = 64

// Validate checks a record before it reaches any vector store: well-formed ids and tags, the index's
// dimension, and a finite, non-zero vector (cosine of a zero vector is undefined).
func (r VectorRecord) Validate(dim int) error {
	for _, c := range []struct{ what, v string }{{"id", r.ID}, {"tenant", r.Tenant}, {"kb id", r.KBID}, {"document id", r.DocumentID}} {
		if err := ValidateID(c.what, c.v); err != nil {
			return err
		}
	}
	if r.ChunkID != "" {
		if err := ValidateID("chunk id", r.ChunkID); err != nil {
			return err
		}
	}
	if len(r.Tags) > MaxTags {
		return fmt.Errorf("record %s has %d tags, at most %d", r.ID, len(r.Tags), MaxTags)
	}
	for _, t := range r.Tags {
		if err := ValidateTag(t); err != nil {
			return err
		}
	}
	return ValidateVector(r.Vector, dim)
}

// ValidateVector checks a vector's dimension and that it is finite and non-zero.
func ValidateVector(v []float32, dim int) error {
	if len(v) != dim {
		return fmt.Errorf("vector has dimension %d, index has %d", len(v), dim)
	}
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return fmt.Errorf("zero or non-finite vector")
	}
	return nil
}

// Conversation is one chat thread of one user, limited to the knowledge bases it was opened with.
type Conversation struct {
	ID      string   `json:"id"`
	Tenant  string   `json:"tenant"`
	User    string   `json:"user"`
	KBIDs   []string `json:"kb_ids"`
	Title   string   `json:"title"`
	Summary string   `json:"summary,omitempty"` // short summary of turns older than the prompt keeps
	// SummaryUpto is the time of the newest message the summary covers (zero: none).
	SummaryUpto time.Time `json:"summary_upto,omitzero"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Memory is one long-term fact about a user (DESIGN.md section 11, seed #34). SQL is the record: a
// memory is never deleted, only invalidated (InvalidatedAt set), possibly by a newer one (SupersededBy).
type Memory struct {
	ID            string    `json:"id"`
	Tenant        string    `json:"-"`
	User          string    `json:"-"`
	Kind          string    `json:"kind"` // role, product, team, language, preference, fact
	Content       string    `json:"content"`
	AccessCount   int       `json:"access_count"`
	InvalidatedAt time.Time `json:"invalidated_at,omitzero"`
	SupersededBy  string    `json:"superseded_by,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// Message is one turn. Assistant messages carry their sources, the event trace and the grading.
type Message struct {
	ID               string          `json:"id"`
	Tenant           string          `json:"-"`
	ConversationID   string          `json:"conversation_id"`
	Role             string          `json:"role"` // user or assistant
	Content          string          `json:"content"`
	Sources          json.RawMessage `json:"sources,omitempty"`
	Trace            json.RawMessage `json:"trace,omitempty"`
	Confidence       float64         `json:"confidence"`
	Band             string          `json:"band,omitempty"`
	FromCache        bool            `json:"from_cache"`
	IsFallback       bool            `json:"is_fallback"`
	PromptTokens     int             `json:"prompt_tokens"`
	CompletionTokens int             `json:"completion_tokens"`
	CostUSD          float64         `json:"cost_usd"`
	CreatedAt        time.Time       `json:"created_at"`
}
