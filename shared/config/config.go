// Package config holds docmind's typed configuration: embedded-mode defaults, an overlay from an optional
// JSON file and from DOCMIND_* environment variables, and Validate, which reports every problem at once.
// Each constructor gets only its own sub-struct.
package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/access"
	"github.com/docmind/docmind/shared/bm25"
	"github.com/docmind/docmind/shared/netx"
	"github.com/docmind/docmind/shared/rag"
)

// Config is the whole configuration. Field tags: `env` names the environment variable, `secret` marks
// values that are redacted wherever the config is printed, `doc` is the one-line help shown by
// `docmind config --vars` and in docs/configuration.md (a test keeps that table equal to the code).
type Config struct {
	DataDir string `json:"data_dir" env:"DOCMIND_DATA_DIR" doc:"directory for the embedded stores, inbox and caches"`
	Tenant  string `json:"tenant" env:"DOCMIND_TENANT" doc:"tenant used by the local single-tenant mode"`

	Log        Log        `json:"log"`
	Server     Server     `json:"server"`
	SQL        SQL        `json:"sql"`
	Vector     Vector     `json:"vector"`
	KV         KV         `json:"kv"`
	Blob       Blob       `json:"blob"`
	Embeddings Embeddings `json:"embeddings"`
	Chat       Chat       `json:"chat"`
	Chunking   Chunking   `json:"chunking"`
	Ingest     Ingest     `json:"ingest"`
	Retrieval  Retrieval  `json:"retrieval"`
	Rerank     Rerank     `json:"rerank"`
	Auth       Auth       `json:"auth"`
	Connectors Connectors `json:"connectors"`
}

// Connectors configures the sync of connectors (issue #23; docs/connectors.md).
type Connectors struct {
	// AllowHosts lets a connector reach private and loopback addresses (an intranet wiki): host names
	// or CIDRs. Everything else non-public stays refused at dial time (netx).
	AllowHosts string `json:"allow_hosts" env:"DOCMIND_CONNECTOR_ALLOW_HOSTS" doc:"host names or CIDRs connectors may reach although private or loopback, comma-separated (empty: public addresses only)"`
	// SyncInterval is how often serve syncs every connector; 0 turns the schedule off.
	SyncInterval time.Duration `json:"sync_interval" env:"DOCMIND_CONNECTOR_SYNC_INTERVAL" doc:"how often serve syncs every connector, and on AWS the rate of each connector's schedule (0: never; docmind connector sync runs one by hand)"`
	// On AWS (docs/connectors.md, On AWS): with the stack's schedule group, sync state machine and
	// scheduler role named, connector add and remove keep one EventBridge Scheduler schedule per
	// connector. All three or none.
	ScheduleGroup       string `json:"schedule_group" env:"DOCMIND_CONNECTOR_SCHEDULE_GROUP" doc:"on AWS: the stack's ConnectorScheduleGroup output; with the next two, connector add and remove create and delete each connector's EventBridge Scheduler schedule"`
	SyncStateMachineARN string `json:"sync_state_machine_arn" env:"DOCMIND_CONNECTOR_SYNC_STATE_MACHINE_ARN" doc:"on AWS: the stack's ConnectorSyncStateMachineArn output (what a schedule starts)"`
	SchedulerRoleARN    string `json:"scheduler_role_arn" env:"DOCMIND_CONNECTOR_SCHEDULER_ROLE_ARN" doc:"on AWS: the stack's ConnectorSchedulerRoleArn output (the role a schedule assumes)"`
	ScheduleDLQARN      string `json:"schedule_dlq_arn" env:"DOCMIND_CONNECTOR_SCHEDULE_DLQ_ARN" doc:"on AWS: the stack's ConnectorScheduleDeadLetterQueueArn output (where a schedule puts a sync it could not start; optional)"`
}

// OnAWS reports whether connector schedules are EventBridge Scheduler schedules (the AWS variables
// are set).
func (c Connectors) OnAWS() bool { return c.ScheduleGroup != "" }

// Auth is identity, browser-origin safety and per-user limits (issue 10).
type Auth struct {
	Mode           string `json:"mode" env:"DOCMIND_AUTH" doc:"none (one local user, loopback only), keys, jwt or keys,jwt"`
	JWKSURL        string `json:"jwks_url" env:"DOCMIND_JWT_JWKS_URL" doc:"JWKS of the identity provider (RS256/ES256), e.g. a Cognito user pool's .well-known/jwks.json"`
	Issuer         string `json:"issuer" env:"DOCMIND_JWT_ISSUER" doc:"required iss of tokens"`
	Audience       string `json:"audience" env:"DOCMIND_JWT_AUDIENCE" doc:"accepted aud values (Cognito app client ids), comma-separated"`
	HS256Secret    string `json:"hs256_secret" env:"DOCMIND_JWT_HS256_SECRET" secret:"true" doc:"HS256 shared secret, at least 32 bytes (development only)"`
	TenantClaim    string `json:"tenant_claim" env:"DOCMIND_JWT_TENANT_CLAIM" doc:"claim holding the tenant"`
	UserClaim      string `json:"user_claim" env:"DOCMIND_JWT_USER_CLAIM" doc:"claim holding the user's subject"`
	EmailClaim     string `json:"email_claim" env:"DOCMIND_JWT_EMAIL_CLAIM" doc:"claim holding the user's email"`
	AdminGroup     string `json:"admin_group" env:"DOCMIND_JWT_ADMIN_GROUP" doc:"a groups-claim value (cognito:groups) that makes a tenant admin (empty: the role in SQL decides)"`
	AccessMap      string `json:"access_map" env:"DOCMIND_ACCESS_MAP" doc:"JSON object granting docmind identities the principals of sources that do not name people by email, for per-document access lists, e.g. {\"group:hr\": [\"sitegroup:hr members\"], \"domain:example.com\": [\"organization\"]} (docs/connectors.md)"`
	AllowedOrigins string `json:"allowed_origins" env:"DOCMIND_ALLOWED_ORIGINS" doc:"other browser origins allowed to call the API and read its answers (CORS, exact match), comma-separated (the server's own is always allowed)"`
	RatePerMinute  int    `json:"rate_limit_per_minute" env:"DOCMIND_RATE_LIMIT_PER_MINUTE" doc:"chat and search requests per user per minute (0: no limit)"`
	RateBurst      int    `json:"rate_limit_burst" env:"DOCMIND_RATE_LIMIT_BURST" doc:"requests a user may send at once (0: the per-minute figure)"`
	DailyTokens    int64  `json:"daily_token_budget" env:"DOCMIND_DAILY_TOKEN_BUDGET" doc:"model tokens per user per UTC day (0: no budget)"`
}

// AuthModes lists the accepted DOCMIND_AUTH values.
var AuthModes = []string{"none", "keys", "jwt", "keys,jwt", "jwt,keys"}

// List splits a comma-separated setting, dropping empty items.
func List(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Rerank selects the reranker. "none" keeps the fused order (offline mode); "http" calls a rerank
// API; "llm" asks the chat model (Chat.*) to grade passages.
type Rerank struct {
	Provider string `json:"provider" env:"DOCMIND_RERANK_PROVIDER" doc:"none, http or llm"`
	URL      string `json:"url" env:"DOCMIND_RERANK_URL" doc:"rerank API endpoint (provider http)"`
	APIKey   string `json:"api_key" env:"DOCMIND_RERANK_API_KEY" secret:"true" doc:"rerank API key"`
	Model    string `json:"model" env:"DOCMIND_RERANK_MODEL" doc:"rerank model name"`
	Format   string `json:"format" env:"DOCMIND_RERANK_FORMAT" doc:"cohere (also Jina, Voyage, vLLM), tei or dashscope"`
}

// BM25Params are the keyword leg's parameters.
func (r Retrieval) BM25Params() bm25.Params {
	return bm25.Params{K1: r.BM25K1, B: r.BM25B, TitleWeight: r.BM25TitleWeight, ContextWeight: r.BM25ContextWeight,
		RM3:    bm25.RM3{Docs: r.BM25RM3Docs, Terms: r.BM25RM3Terms, OrigWeight: r.BM25RM3OrigWeight, MaxDF: r.BM25RM3MaxDF},
		RM3CJK: bm25.RM3{Docs: r.BM25RM3DocsCJK, Terms: r.BM25RM3TermsCJK, OrigWeight: r.BM25RM3OrigWeightCJK, MaxDF: r.BM25RM3MaxDF}}
}

// Retrieval tunes keyword search.
type Retrieval struct {
	BM25K1            float64 `json:"bm25_k1" env:"DOCMIND_BM25_K1" doc:"BM25 term-frequency saturation"`
	BM25B             float64 `json:"bm25_b" env:"DOCMIND_BM25_B" doc:"BM25 length normalisation (0..1)"`
	BM25TitleWeight   float64 `json:"bm25_title_weight" env:"DOCMIND_BM25_TITLE_WEIGHT" doc:"weight of heading-path terms in BM25"`
	BM25ContextWeight float64 `json:"bm25_context_weight" env:"DOCMIND_BM25_CONTEXT_WEIGHT" doc:"weight of the parent chunk's text in a child's BM25 (0 ignores it)"`
	// RM3 pseudo-relevance feedback, separately for queries written mostly in CJK (their terms are
	// character bigrams) and the others; chosen by `docmind eval --sweep` (docs/eval/retrieval.md).
	// Off by default, and applied by the embedded keyword index only (not the Lambdas' MySQL adapter).
	BM25RM3Docs          int     `json:"bm25_rm3_docs" env:"DOCMIND_BM25_RM3_DOCS" doc:"RM3 feedback chunks for queries not in CJK (0: no feedback; embedded keyword index only)"`
	BM25RM3Terms         int     `json:"bm25_rm3_terms" env:"DOCMIND_BM25_RM3_TERMS" doc:"RM3 expansion terms for queries not in CJK"`
	BM25RM3OrigWeight    float64 `json:"bm25_rm3_orig_weight" env:"DOCMIND_BM25_RM3_ORIG_WEIGHT" doc:"weight of the original query against its RM3 expansion, queries not in CJK (0..1)"`
	BM25RM3MaxDF         float64 `json:"bm25_rm3_max_df" env:"DOCMIND_BM25_RM3_MAX_DF" doc:"RM3 skips expansion terms found in more than this share of chunks (0: none skipped)"`
	BM25RM3DocsCJK       int     `json:"bm25_rm3_docs_cjk" env:"DOCMIND_BM25_RM3_DOCS_CJK" doc:"RM3 feedback chunks for queries written mostly in CJK (0: no feedback)"`
	BM25RM3TermsCJK      int     `json:"bm25_rm3_terms_cjk" env:"DOCMIND_BM25_RM3_TERMS_CJK" doc:"RM3 expansion terms for CJK queries"`
	BM25RM3OrigWeightCJK float64 `json:"bm25_rm3_orig_weight_cjk" env:"DOCMIND_BM25_RM3_ORIG_WEIGHT_CJK" doc:"weight of the original query against its RM3 expansion, CJK queries (0..1)"`
	FilterFloor          float64 `json:"filter_floor" env:"DOCMIND_FILTER_FLOOR" doc:"rerank scores below this are dropped unless that empties the list"`
	FilterDrop           float64 `json:"filter_drop" env:"DOCMIND_FILTER_DROP" doc:"cut at the first relative drop from the top rerank score this large"`
	MMRLambda            float64 `json:"mmr_lambda" env:"DOCMIND_MMR_LAMBDA" doc:"MMR relevance weight, clamped to [0,1]"`
	GradeRerankHigh      float64 `json:"grade_rerank_high" env:"DOCMIND_GRADE_RERANK_HIGH" doc:"grader: top rerank score that counts as strong"`
	GradeRerankLow       float64 `json:"grade_rerank_low" env:"DOCMIND_GRADE_RERANK_LOW" doc:"grader: top rerank score below which it counts as weak"`
	GradeCoverHigh       float64 `json:"grade_cover_high" env:"DOCMIND_GRADE_COVER_HIGH" doc:"grader: query-term coverage that counts as present"`
	GradeCoverLow        float64 `json:"grade_cover_low" env:"DOCMIND_GRADE_COVER_LOW" doc:"grader: coverage below which the query's terms count as missing"`
}

// Log configures log/slog.
type Log struct {
	Level  string `json:"level" env:"DOCMIND_LOG_LEVEL" doc:"debug, info, warn or error"`
	Format string `json:"format" env:"DOCMIND_LOG_FORMAT" doc:"text or json"`
}

// Server configures the local HTTP server.
type Server struct {
	Addr            string        `json:"addr" env:"DOCMIND_ADDR" doc:"listen address; non-loopback addresses need auth"`
	ReadTimeout     time.Duration `json:"read_timeout" env:"DOCMIND_READ_TIMEOUT" doc:"HTTP read timeout"`
	ShutdownTimeout time.Duration `json:"shutdown_timeout" env:"DOCMIND_SHUTDOWN_TIMEOUT" doc:"grace period for in-flight requests on stop"`
	MaxBodyBytes    int64         `json:"max_body_bytes" env:"DOCMIND_MAX_BODY_BYTES" doc:"largest accepted request body"`
	// ReconcileInterval runs the consistency check (with repair) in the server this often; 0 turns it off.
	ReconcileInterval time.Duration `json:"reconcile_interval" env:"DOCMIND_RECONCILE_INTERVAL" doc:"how often serve runs reconcile --repair (0: never)"`
	// PDFIdle releases the PDF engine's WebAssembly runtime (about 300 MB) this long after the last PDF.
	// The default (15 s) keeps the engine across a batch's PDFs yet frees it well before an idle
	// server is 30 s past its last batch (the footprint goal: <= 150 MB then; docs/bench/memory.md).
	PDFIdle time.Duration `json:"pdf_idle" env:"DOCMIND_PDF_IDLE" doc:"how long the PDF engine stays loaded after the last PDF (it takes seconds to start again)"`
}

// SQL selects the relational store (system of record).
type SQL struct {
	Driver          string        `json:"driver" env:"DOCMIND_SQL_DRIVER" doc:"sqlite (embedded) or mysql (Aurora MySQL)"`
	DSN             string        `json:"dsn" env:"DOCMIND_SQL_DSN" secret:"true" doc:"mysql DSN (user:pass@tcp(host:3306)/db); sqlite: file path, default <data>/docmind.db"`
	MaxOpenConns    int           `json:"max_open_conns" env:"DOCMIND_SQL_MAX_OPEN_CONNS" doc:"connection pool size (keep R x this under 0.8 x max_connections)"`
	ConnMaxLifetime time.Duration `json:"conn_max_lifetime" env:"DOCMIND_SQL_CONN_MAX_LIFETIME" doc:"connection lifetime, under 5m so frozen Lambdas drop stale connections"`
	MmapMB          int           `json:"mmap_mb" env:"DOCMIND_SQL_MMAP_MB" doc:"sqlite: MiB of the database file the retrieval chain's look-ups read through a memory map, in a read-only pool of their own, instead of read calls into each connection's cache; writers never map (0: off, no second pool; at most 2047, SQLite's ceiling); keep the file on a local disk"`
}

// Vector selects the vector index.
type Vector struct {
	Driver      string        `json:"driver" env:"DOCMIND_VECTOR_DRIVER" doc:"memvec (embedded exact index) or milvus (Milvus / Zilliz)"`
	Dim         int           `json:"dim" env:"DOCMIND_VECTOR_DIM" doc:"embedding dimension"`
	MilvusAddr  string        `json:"milvus_addr" env:"DOCMIND_MILVUS_ADDR" doc:"Milvus / Zilliz endpoint (host:port or https URL)"`
	MilvusToken string        `json:"milvus_token" env:"DOCMIND_MILVUS_TOKEN" secret:"true" doc:"Milvus / Zilliz API token (user:password or key)"`
	Collection  string        `json:"collection" env:"DOCMIND_MILVUS_COLLECTION" doc:"Milvus collection name"`
	CallTimeout time.Duration `json:"call_timeout" env:"DOCMIND_VECTOR_CALL_TIMEOUT" doc:"upper bound of one vector-store call"`
	Quant       string        `json:"quant" env:"DOCMIND_VECTOR_QUANT" doc:"memvec scan: binary (1-bit codes scanned by Hamming distance, candidates re-scored with int8 then float32), int8 (int8 codes scanned, candidates re-scored in float32) or none (exact float32); exact below 20,000 rows; a snapshot's recall@10 check widens binary's candidates, then falls back to int8, then to exact below 0.99; where the stored codes are mostly zeros (the offline embedder's hashed features) the int8 candidates of a short question come from per-dimension postings instead of the scan, with the same result"`
	Rescore     int           `json:"rescore" env:"DOCMIND_VECTOR_RESCORE" doc:"memvec int8 and binary: candidates re-scored exactly in float32, as a multiple of k; for int8 the deepest the snapshot's recall check may choose (it takes the shallowest of 2x, 4x ... this that keeps recall@10 >= 0.99)"`
}

// KV selects the key-value cache.
type KV struct {
	Driver        string `json:"driver" env:"DOCMIND_KV_DRIVER" doc:"memory (in-process) or redis"`
	RedisAddr     string `json:"redis_addr" env:"DOCMIND_REDIS_ADDR" doc:"Redis host:port"`
	RedisPassword string `json:"redis_password" env:"DOCMIND_REDIS_PASSWORD" secret:"true" doc:"Redis AUTH password"`
	RedisDB       int    `json:"redis_db" env:"DOCMIND_REDIS_DB" doc:"Redis database number"`
	RedisTLS      bool   `json:"redis_tls" env:"DOCMIND_REDIS_TLS" doc:"use TLS (ElastiCache in-transit encryption)"`
	Prefix        string `json:"prefix" env:"DOCMIND_KV_PREFIX" doc:"prefix of every cache key"`
}

// Blob selects the blob store.
type Blob struct {
	Driver       string `json:"driver" env:"DOCMIND_BLOB_DRIVER" doc:"fs (a directory) or s3"`
	Dir          string `json:"dir" env:"DOCMIND_BLOB_DIR" doc:"fs: directory, default <data>/blobs"`
	Bucket       string `json:"bucket" env:"DOCMIND_S3_BUCKET" doc:"s3: bucket"`
	Region       string `json:"region" env:"DOCMIND_S3_REGION" doc:"s3: region"`
	Endpoint     string `json:"endpoint" env:"DOCMIND_S3_ENDPOINT" doc:"s3: endpoint URL for S3-compatible stores"`
	UsePathStyle bool   `json:"use_path_style" env:"DOCMIND_S3_PATH_STYLE" doc:"s3: path-style addressing (MinIO, test servers)"`
}

// Embeddings selects the embeddings provider. With no API key the offline embedder is used.
type Embeddings struct {
	Provider  string `json:"provider" env:"DOCMIND_EMBED_PROVIDER" doc:"offline or openai (any OpenAI-compatible API)"`
	BaseURL   string `json:"base_url" env:"DOCMIND_EMBED_BASE_URL" doc:"OpenAI-compatible base URL"`
	APIKey    string `json:"api_key" env:"DOCMIND_EMBED_API_KEY" secret:"true" doc:"embeddings API key"`
	Model     string `json:"model" env:"DOCMIND_EMBED_MODEL" doc:"embeddings model"`
	BatchSize int    `json:"batch_size" env:"DOCMIND_EMBED_BATCH" doc:"texts per request (DashScope allows 10)"`
}

// Chat selects the chat model provider. With no API key the offline extractive answerer is used.
type Chat struct {
	Provider   string `json:"provider" env:"DOCMIND_CHAT_PROVIDER" doc:"offline or openai (any OpenAI-compatible API)"`
	BaseURL    string `json:"base_url" env:"DOCMIND_CHAT_BASE_URL" doc:"OpenAI-compatible base URL"`
	APIKey     string `json:"api_key" env:"DOCMIND_CHAT_API_KEY" secret:"true" doc:"chat API key"`
	SmallModel string `json:"small_model" env:"DOCMIND_CHAT_SMALL_MODEL" doc:"model for understanding, HyDE and summaries"`
	MainModel  string `json:"main_model" env:"DOCMIND_CHAT_MAIN_MODEL" doc:"model for answers"`
	// EmergencyPhrases switches the safety guard on: a question containing one gets EmergencyAnswer and
	// no model call.
	EmergencyPhrases string `json:"emergency_phrases" env:"DOCMIND_CHAT_EMERGENCY_PHRASES" doc:"phrases separated by ; that get the fixed emergency answer, matched case-insensitively (empty: guard off)"`
	EmergencyAnswer  string `json:"emergency_answer" env:"DOCMIND_CHAT_EMERGENCY_ANSWER" doc:"the fixed answer to an emergency phrase"`
	// Prices of the main model in USD per million tokens, for the per-answer cost estimate (0: unknown).
	PriceInputPerMTok  float64 `json:"price_input_per_mtok" env:"DOCMIND_CHAT_PRICE_INPUT" doc:"USD per million prompt tokens of the main model (for done.cost_usd)"`
	PriceOutputPerMTok float64 `json:"price_output_per_mtok" env:"DOCMIND_CHAT_PRICE_OUTPUT" doc:"USD per million completion tokens of the main model"`
	// Web search (Tavily-compatible), called only when the grader asks for compensation.
	WebSearchURL    string `json:"web_search_url" env:"DOCMIND_WEB_SEARCH_URL" doc:"Tavily-compatible search endpoint"`
	WebSearchAPIKey string `json:"web_search_api_key" env:"DOCMIND_WEB_SEARCH_API_KEY" secret:"true" doc:"web search API key (empty: web search off)"`
	// The semantic cache (DESIGN.md steps 4 and 15).
	CacheEnabled   bool          `json:"cache_enabled" env:"DOCMIND_CACHE_ENABLED" doc:"replay answers to questions asked before in the same scope"`
	CacheThreshold float64       `json:"cache_threshold" env:"DOCMIND_CACHE_THRESHOLD" doc:"cosine similarity of the question embeddings for a cache hit, in (0, 1]"`
	CacheTTL       time.Duration `json:"cache_ttl" env:"DOCMIND_CACHE_TTL" doc:"how long a cached answer (and a question's ask count) lives"`
	// InferFilters lets the understanding step read a metadata filter from the question when it names
	// a value the documents hold (docs/metadata-filters.md).
	InferFilters bool `json:"infer_filters" env:"DOCMIND_INFER_FILTERS" doc:"infer a metadata filter when a question names a value the documents' metadata holds (\"the 2025 policy\"), falling back to the unfiltered search when it finds nothing relevant"`
	// AgentRounds bounds the AGENTIC path's tool-calling loop (DESIGN.md step 5); 0 switches the path off.
	AgentRounds int `json:"agent_rounds" env:"DOCMIND_CHAT_AGENT_ROUNDS" doc:"tool-calling rounds of the AGENTIC path for complex questions, 0 to 4 (0: they take the standard path)"`
	// MCPServers adds other MCP servers' tools to that loop (docs/mcp.md); a secret, since its headers
	// may carry credentials.
	MCPServers string `json:"mcp_servers" env:"DOCMIND_MCP_SERVERS" secret:"true" doc:"MCP servers whose tools the agentic loop may call: a JSON array of {name, url or command, headers, tools} (docs/mcp.md)"`
	// Long-term memory per user (DESIGN.md section 11).
	MemoryEnabled bool `json:"memory_enabled" env:"DOCMIND_MEMORY_ENABLED" doc:"remember facts users state about themselves and use them in later answers"`
	MemoryMax     int  `json:"memory_max" env:"DOCMIND_MEMORY_MAX" doc:"active memories kept per user, 1 to 10000; above it the lowest-scored are evicted"`
}

// Chunking sizes, in characters (runes).
type Chunking struct {
	ChildChars  int `json:"child_chars" env:"DOCMIND_CHUNK_CHILD_CHARS" doc:"target size of a child chunk"`
	Overlap     int `json:"overlap" env:"DOCMIND_CHUNK_OVERLAP" doc:"overlap between split paragraphs"`
	ParentChars int `json:"parent_chars" env:"DOCMIND_CHUNK_PARENT_CHARS" doc:"largest parent chunk"`
}

// Ingest bounds what ingestion may hold at once.
type Ingest struct {
	// ExtractMemory is shared by every extraction of the process (upload queue, watched folder, batch
	// ingest): each reserves its estimated peak memory before parsing and waits while others use the
	// budget; a file whose estimate exceeds it fails instead of growing the process.
	ExtractMemory int64 `json:"extract_memory" env:"DOCMIND_EXTRACT_MEMORY" doc:"bytes of memory the extractions running at once may need together (at least 32 MiB); a file that alone needs more fails"`
	// OCR chooses how images and scanned PDF pages are read: auto uses Tesseract when it is installed
	// (and refuses such files with the install command when not) and Amazon Textract on AWS, tesseract
	// requires Tesseract, textract Amazon Textract (the AWS ingestion workflow only), vision sends each
	// page image to the chat model (OCRModel), off refuses them.
	OCR string `json:"ocr" env:"DOCMIND_OCR" doc:"auto, off, tesseract, textract (AWS only) or vision (pages sent to the chat model as images): how images and scanned PDF pages are recognised"`
	// OCRModel is the model DOCMIND_OCR=vision reads pages with: one that takes image input.
	OCRModel string `json:"ocr_model" env:"DOCMIND_OCR_MODEL" doc:"the model that reads page images for DOCMIND_OCR=vision (empty: DOCMIND_CHAT_MAIN_MODEL); it must take image input"`
	// OCRLangs is Tesseract's language set ("eng", "chi_sim", "eng+chi_sim") or auto (English or
	// Chinese, detected per document).
	OCRLangs string `json:"ocr_langs" env:"DOCMIND_OCR_LANGS" doc:"OCR languages: auto (detect English or Chinese) or Tesseract names joined by + (eng+chi_sim)"`
}

// OCRModes lists the accepted DOCMIND_OCR values.
var OCRModes = []string{"auto", "off", "tesseract", "textract", "vision"}

// MinExtractMemory is the smallest extraction memory budget: below it not even a small PDF fits (the
// PDF engine needs about 24 MiB per parse however small the file).
const MinExtractMemory = 32 << 20

// validOCRLangs accepts auto or Tesseract language names (lowercase letters and _) joined by +.
func validOCRLangs(s string) bool {
	if s == "auto" {
		return true
	}
	for _, l := range strings.Split(s, "+") {
		if l == "" || len(l) > 32 || strings.Trim(l, "abcdefghijklmnopqrstuvwxyz_") != "" {
			return false
		}
	}
	return true
}

// Default returns the embedded-mode defaults: everything in one process under ./data, offline providers.
func Default() Config {
	return Config{
		DataDir: "./data",
		Tenant:  "local",
		Log:     Log{Level: "info", Format: "text"},
		Server: Server{
			Addr:              "127.0.0.1:8080",
			ReadTimeout:       30 * time.Second,
			ShutdownTimeout:   10 * time.Second,
			MaxBodyBytes:      64 << 20,
			ReconcileInterval: time.Hour,
			PDFIdle:           15 * time.Second,
		},
		SQL:        SQL{Driver: "sqlite", MaxOpenConns: 10, ConnMaxLifetime: 4 * time.Minute, MmapMB: 2047},
		Vector:     Vector{Driver: "memvec", Dim: 512, Collection: "docmind_chunks", CallTimeout: 5 * time.Second, Quant: "binary", Rescore: 8},
		KV:         KV{Driver: "memory", Prefix: "dm:"},
		Blob:       Blob{Driver: "fs", Region: "us-east-1"},
		Embeddings: Embeddings{Provider: "offline", BatchSize: 10},
		Chat: Chat{Provider: "offline", AgentRounds: 4, MemoryEnabled: true, MemoryMax: 200, CacheEnabled: true, InferFilters: true, CacheThreshold: 0.92, CacheTTL: 24 * time.Hour, WebSearchURL: "https://api.tavily.com/search", EmergencyAnswer: "This sounds urgent. docmind only answers from documents and cannot help in an emergency: " +
			"call your local emergency number or the person responsible now. 如遇紧急情况，请立即拨打当地急救电话或联系负责人。"},
		Chunking: Chunking{ChildChars: 400, Overlap: 50, ParentChars: 2000},
		Ingest:   Ingest{ExtractMemory: 512 << 20, OCR: "auto", OCRLangs: "auto"},
		Retrieval: Retrieval{BM25K1: 0.9, BM25B: 0.4, BM25TitleWeight: 2, BM25ContextWeight: 0.3, FilterFloor: 0.28, FilterDrop: 0.5,
			MMRLambda: 0.7, GradeRerankHigh: 0.7, GradeRerankLow: 0.3, GradeCoverHigh: 0.6, GradeCoverLow: 0.2},
		Rerank:     Rerank{Provider: "none", Format: "cohere"},
		Auth:       Auth{Mode: "none", TenantClaim: "custom:tenant", UserClaim: "sub", EmailClaim: "email"},
		Connectors: Connectors{SyncInterval: time.Hour},
	}
}

// SQLitePath is the SQLite database file: the DSN when set, else <data>/docmind.db.
func (c Config) SQLitePath() string {
	if c.SQL.DSN != "" {
		return c.SQL.DSN
	}
	return filepath.Join(c.DataDir, "docmind.db")
}

// BlobDir is the blob directory: Blob.Dir when set, else <data>/blobs.
func (c Config) BlobDir() string {
	if c.Blob.Dir != "" {
		return c.Blob.Dir
	}
	return filepath.Join(c.DataDir, "blobs")
}

// ValidationError lists every problem found in a config.
type ValidationError struct{ Problems []string }

func (e *ValidationError) Error() string {
	return "invalid configuration:\n  - " + strings.Join(e.Problems, "\n  - ")
}

// Validate reports every problem at once, as a *ValidationError, or nil.
func (c Config) Validate() error {
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }

	if c.DataDir == "" {
		add("DOCMIND_DATA_DIR: must not be empty")
	}
	if err := rag.ValidateID("tenant", c.Tenant); err != nil {
		add("DOCMIND_TENANT: %v", err)
	}
	oneOf := func(name, v string, allowed ...string) bool {
		for _, a := range allowed {
			if v == a {
				return true
			}
		}
		add("%s: %q is not one of %s", name, v, strings.Join(allowed, ", "))
		return false
	}
	oneOf("DOCMIND_LOG_LEVEL", c.Log.Level, "debug", "info", "warn", "error")
	if oneOf("DOCMIND_AUTH", strings.ReplaceAll(c.Auth.Mode, " ", ""), AuthModes...) && strings.Contains(c.Auth.Mode, "jwt") {
		if c.Auth.JWKSURL == "" && c.Auth.HS256Secret == "" {
			add("DOCMIND_AUTH=jwt: set DOCMIND_JWT_JWKS_URL (or DOCMIND_JWT_HS256_SECRET for development)")
		}
		if c.Auth.Issuer == "" || len(List(c.Auth.Audience)) == 0 {
			add("DOCMIND_AUTH=jwt: set DOCMIND_JWT_ISSUER and DOCMIND_JWT_AUDIENCE (tokens of other applications must not be accepted)")
		}
		if c.Auth.HS256Secret != "" && len(c.Auth.HS256Secret) < 32 {
			add("DOCMIND_JWT_HS256_SECRET: must be at least 32 bytes")
		}
	}
	for _, o := range List(c.Auth.AllowedOrigins) {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			add("DOCMIND_ALLOWED_ORIGINS: %q is not an origin like https://chat.example.com", o)
		}
	}
	if c.Auth.RatePerMinute < 0 || c.Auth.RateBurst < 0 || c.Auth.DailyTokens < 0 {
		add("DOCMIND_RATE_LIMIT_PER_MINUTE, DOCMIND_RATE_LIMIT_BURST, DOCMIND_DAILY_TOKEN_BUDGET: must not be negative")
	}
	oneOf("DOCMIND_LOG_FORMAT", c.Log.Format, "text", "json")

	if _, _, err := net.SplitHostPort(c.Server.Addr); err != nil {
		add("DOCMIND_ADDR: %q is not host:port", c.Server.Addr)
	}
	positiveDur := func(name string, d time.Duration) {
		if d <= 0 {
			add("%s: must be positive, got %s", name, d)
		}
	}
	positiveDur("DOCMIND_READ_TIMEOUT", c.Server.ReadTimeout)
	positiveDur("DOCMIND_SHUTDOWN_TIMEOUT", c.Server.ShutdownTimeout)
	positiveDur("DOCMIND_PDF_IDLE", c.Server.PDFIdle)
	if c.Server.ReconcileInterval < 0 {
		add("DOCMIND_RECONCILE_INTERVAL: must be 0 (off) or positive, got %s", c.Server.ReconcileInterval)
	}
	if c.Connectors.SyncInterval < 0 {
		add("DOCMIND_CONNECTOR_SYNC_INTERVAL: must be 0 (off) or positive, got %s", c.Connectors.SyncInterval)
	}
	if cn := c.Connectors; (cn.ScheduleGroup != "" || cn.SyncStateMachineARN != "" || cn.SchedulerRoleARN != "" || cn.ScheduleDLQARN != "") &&
		(cn.ScheduleGroup == "" || cn.SyncStateMachineARN == "" || cn.SchedulerRoleARN == "") {
		add("DOCMIND_CONNECTOR_SCHEDULE_GROUP, DOCMIND_CONNECTOR_SYNC_STATE_MACHINE_ARN and DOCMIND_CONNECTOR_SCHEDULER_ROLE_ARN: set all three (the stack's outputs) or none")
	}
	if cn := c.Connectors; cn.OnAWS() && cn.SyncInterval > 0 && (cn.SyncInterval < time.Minute || cn.SyncInterval%time.Minute != 0) {
		add("DOCMIND_CONNECTOR_SYNC_INTERVAL: a schedule on AWS runs every whole number of minutes, got %s", cn.SyncInterval)
	}
	if _, err := access.ParseMap(c.Auth.AccessMap); err != nil {
		add("DOCMIND_ACCESS_MAP: %v", err)
	}
	if _, _, err := netx.ParseAllowList(c.Connectors.AllowHosts); err != nil {
		add("DOCMIND_CONNECTOR_ALLOW_HOSTS: %v", err)
	}
	if c.Server.MaxBodyBytes < 1024 {
		add("DOCMIND_MAX_BODY_BYTES: must be at least 1024, got %d", c.Server.MaxBodyBytes)
	}

	if oneOf("DOCMIND_SQL_DRIVER", c.SQL.Driver, "sqlite", "mysql") && c.SQL.Driver == "mysql" && c.SQL.DSN == "" {
		add("DOCMIND_SQL_DSN: required when DOCMIND_SQL_DRIVER=mysql")
	}
	if c.SQL.MaxOpenConns < 1 {
		add("DOCMIND_SQL_MAX_OPEN_CONNS: must be at least 1, got %d", c.SQL.MaxOpenConns)
	}
	if c.SQL.ConnMaxLifetime <= 0 || c.SQL.ConnMaxLifetime >= 5*time.Minute {
		add("DOCMIND_SQL_CONN_MAX_LIFETIME: must be above 0 and under 5m, got %s", c.SQL.ConnMaxLifetime)
	}
	if c.SQL.MmapMB < 0 || c.SQL.MmapMB > 2047 {
		add("DOCMIND_SQL_MMAP_MB: must be 0 to 2047 (SQLite's largest map), got %d", c.SQL.MmapMB)
	}

	if oneOf("DOCMIND_VECTOR_DRIVER", c.Vector.Driver, "memvec", "milvus") && c.Vector.Driver == "milvus" {
		if c.Vector.MilvusAddr == "" {
			add("DOCMIND_MILVUS_ADDR: required when DOCMIND_VECTOR_DRIVER=milvus")
		}
		if err := validCollection(c.Vector.Collection); err != nil {
			add("DOCMIND_MILVUS_COLLECTION: %v", err)
		}
	}
	if c.Vector.Dim < 2 || c.Vector.Dim > 32768 {
		add("DOCMIND_VECTOR_DIM: must be within 2..32768, got %d", c.Vector.Dim)
	}
	positiveDur("DOCMIND_VECTOR_CALL_TIMEOUT", c.Vector.CallTimeout)
	oneOf("DOCMIND_VECTOR_QUANT", c.Vector.Quant, "binary", "int8", "none")
	if c.Vector.Rescore < 1 || c.Vector.Rescore > 100 {
		add("DOCMIND_VECTOR_RESCORE: must be within 1..100, got %d", c.Vector.Rescore)
	}

	if oneOf("DOCMIND_KV_DRIVER", c.KV.Driver, "memory", "redis") && c.KV.Driver == "redis" && c.KV.RedisAddr == "" {
		add("DOCMIND_REDIS_ADDR: required when DOCMIND_KV_DRIVER=redis")
	}
	if c.KV.RedisDB < 0 {
		add("DOCMIND_REDIS_DB: must not be negative")
	}

	if oneOf("DOCMIND_BLOB_DRIVER", c.Blob.Driver, "fs", "s3") && c.Blob.Driver == "s3" && c.Blob.Bucket == "" {
		add("DOCMIND_S3_BUCKET: required when DOCMIND_BLOB_DRIVER=s3")
	}
	if c.Blob.Endpoint != "" {
		if u, err := url.Parse(c.Blob.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("DOCMIND_S3_ENDPOINT: %q is not an http(s) URL", c.Blob.Endpoint)
		}
	}

	if oneOf("DOCMIND_EMBED_PROVIDER", c.Embeddings.Provider, "offline", "openai") && c.Embeddings.Provider == "openai" {
		if c.Embeddings.APIKey == "" && c.Embeddings.BaseURL == "" {
			add("DOCMIND_EMBED_API_KEY or DOCMIND_EMBED_BASE_URL: required when DOCMIND_EMBED_PROVIDER=openai")
		}
		if c.Embeddings.Model == "" {
			add("DOCMIND_EMBED_MODEL: required when DOCMIND_EMBED_PROVIDER=openai")
		}
	}
	if c.Embeddings.BatchSize < 1 || c.Embeddings.BatchSize > 2048 {
		add("DOCMIND_EMBED_BATCH: must be within 1..2048, got %d", c.Embeddings.BatchSize)
	}
	if oneOf("DOCMIND_CHAT_PROVIDER", c.Chat.Provider, "offline", "openai") && c.Chat.Provider == "openai" {
		if c.Chat.APIKey == "" && c.Chat.BaseURL == "" {
			add("DOCMIND_CHAT_API_KEY or DOCMIND_CHAT_BASE_URL: required when DOCMIND_CHAT_PROVIDER=openai")
		}
		if c.Chat.MainModel == "" {
			add("DOCMIND_CHAT_MAIN_MODEL: required when DOCMIND_CHAT_PROVIDER=openai")
		}
	}
	for _, u := range []struct{ name, v string }{{"DOCMIND_EMBED_BASE_URL", c.Embeddings.BaseURL}, {"DOCMIND_CHAT_BASE_URL", c.Chat.BaseURL}} {
		if u.v == "" {
			continue
		}
		if pu, err := url.Parse(u.v); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			add("%s: %q is not an http(s) URL", u.name, u.v)
		}
	}

	ch := c.Chunking
	if ch.ChildChars < 50 {
		add("DOCMIND_CHUNK_CHILD_CHARS: must be at least 50, got %d", ch.ChildChars)
	}
	if ch.Overlap < 0 || ch.Overlap >= ch.ChildChars {
		add("DOCMIND_CHUNK_OVERLAP: must be within 0..child_chars-1, got %d", ch.Overlap)
	}
	if ch.ParentChars < ch.ChildChars {
		add("DOCMIND_CHUNK_PARENT_CHARS: must be at least child_chars (%d), got %d", ch.ChildChars, ch.ParentChars)
	}
	if c.Ingest.ExtractMemory < MinExtractMemory {
		add("DOCMIND_EXTRACT_MEMORY: must be at least %d bytes (32 MiB), got %d", int64(MinExtractMemory), c.Ingest.ExtractMemory)
	}
	switch c.Ingest.OCR {
	case "vision":
		if c.Chat.Provider != "openai" {
			add("DOCMIND_OCR: vision reads pages with the chat model: set DOCMIND_CHAT_PROVIDER=openai (with DOCMIND_CHAT_BASE_URL or DOCMIND_CHAT_API_KEY) and a model that takes images in DOCMIND_OCR_MODEL or DOCMIND_CHAT_MAIN_MODEL")
		}
	default:
		oneOf("DOCMIND_OCR", c.Ingest.OCR, OCRModes...)
	}
	if !validOCRLangs(c.Ingest.OCRLangs) {
		add("DOCMIND_OCR_LANGS: %q is not auto or Tesseract language names joined by + (eng+chi_sim)", c.Ingest.OCRLangs)
	}

	if oneOf("DOCMIND_RERANK_PROVIDER", c.Rerank.Provider, "none", "http", "llm") {
		switch c.Rerank.Provider {
		case "http":
			if u, err := url.Parse(c.Rerank.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add("DOCMIND_RERANK_URL: %q is not an http(s) URL (required when DOCMIND_RERANK_PROVIDER=http)", c.Rerank.URL)
			}
			oneOf("DOCMIND_RERANK_FORMAT", c.Rerank.Format, "cohere", "tei", "dashscope")
		case "llm":
			if c.Chat.Provider != "openai" {
				add("DOCMIND_RERANK_PROVIDER: llm needs a chat model (DOCMIND_CHAT_PROVIDER=openai)")
			}
		}
	}
	r := c.Retrieval
	if r.BM25K1 <= 0 || r.BM25K1 > 10 {
		add("DOCMIND_BM25_K1: must be within (0, 10], got %v", r.BM25K1)
	}
	if r.BM25B < 0 || r.BM25B > 1 {
		add("DOCMIND_BM25_B: must be within [0, 1], got %v", r.BM25B)
	}
	if r.BM25ContextWeight < 0 || r.BM25ContextWeight > 5 {
		add("DOCMIND_BM25_CONTEXT_WEIGHT: must be within [0, 5], got %v", r.BM25ContextWeight)
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"DOCMIND_FILTER_FLOOR", r.FilterFloor}, {"DOCMIND_FILTER_DROP", r.FilterDrop}, {"DOCMIND_GRADE_RERANK_HIGH", r.GradeRerankHigh},
		{"DOCMIND_GRADE_RERANK_LOW", r.GradeRerankLow}, {"DOCMIND_GRADE_COVER_HIGH", r.GradeCoverHigh}, {"DOCMIND_GRADE_COVER_LOW", r.GradeCoverLow}} {
		if v.v < 0 || v.v > 1 {
			add("%s: must be within [0, 1], got %v", v.name, v.v)
		}
	}
	if r.GradeRerankLow > r.GradeRerankHigh || r.GradeCoverLow > r.GradeCoverHigh {
		add("DOCMIND_GRADE_*: each low threshold must not exceed its high one")
	}
	if c.Chat.MemoryMax < 1 || c.Chat.MemoryMax > 10000 {
		add("DOCMIND_MEMORY_MAX: must be 1 to 10000, got %d", c.Chat.MemoryMax)
	}
	if _, err := ParseMCPServers(c.Chat.MCPServers); err != nil {
		add("%v", err)
	}
	if c.Chat.AgentRounds < 0 || c.Chat.AgentRounds > 4 {
		add("DOCMIND_CHAT_AGENT_ROUNDS: must be 0 to 4, got %d", c.Chat.AgentRounds)
	}
	if c.Chat.CacheThreshold <= 0 || c.Chat.CacheThreshold > 1 {
		add("DOCMIND_CACHE_THRESHOLD: must be within (0, 1], got %v", c.Chat.CacheThreshold)
	}
	positiveDur("DOCMIND_CACHE_TTL", c.Chat.CacheTTL)
	if c.Chat.PriceInputPerMTok < 0 || c.Chat.PriceOutputPerMTok < 0 {
		add("DOCMIND_CHAT_PRICE_INPUT/OUTPUT: prices must not be negative")
	}
	for _, v := range []struct {
		name  string
		docs  int
		terms int
		w     float64
	}{{"DOCMIND_BM25_RM3", r.BM25RM3Docs, r.BM25RM3Terms, r.BM25RM3OrigWeight}, {"DOCMIND_BM25_RM3_*_CJK", r.BM25RM3DocsCJK, r.BM25RM3TermsCJK, r.BM25RM3OrigWeightCJK}} {
		if v.docs < 0 || v.docs > 100 || v.terms < 0 || v.terms > 100 {
			add("%s_DOCS and _TERMS: must be 0 to 100, got %d and %d", v.name, v.docs, v.terms)
		}
		if v.docs > 0 && (v.terms == 0 || v.w <= 0 || v.w >= 1) {
			add("%s: feedback (DOCS %d) needs TERMS > 0 and ORIG_WEIGHT within (0, 1), got %d and %v", v.name, v.docs, v.terms, v.w)
		}
	}
	if r.BM25RM3MaxDF < 0 || r.BM25RM3MaxDF > 1 {
		add("DOCMIND_BM25_RM3_MAX_DF: must be within [0, 1], got %v", r.BM25RM3MaxDF)
	}
	if r.BM25TitleWeight <= 0 || r.BM25TitleWeight > 20 {
		add("DOCMIND_BM25_TITLE_WEIGHT: must be within (0, 20], got %v", r.BM25TitleWeight)
	}

	if len(p) > 0 {
		return &ValidationError{Problems: p}
	}
	return nil
}

// Milvus collection names: a letter or underscore, then letters, digits and underscores, at most 255.
func validCollection(s string) error {
	if s == "" || len(s) > 255 {
		return fmt.Errorf("must be 1-255 characters")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && !(i > 0 && c >= '0' && c <= '9') {
			return fmt.Errorf("%q must be letters, digits and underscores, starting with a letter", s)
		}
	}
	return nil
}
