// Package store declares the storage ports docmind's pipeline depends on and the contract every adapter
// honours. Adapters live in sub-packages named after what they wrap: sqlite and mysql (relational, over the
// shared sqldb core), memvec and milvus (vectors), memkv and redis (key-value cache), fsblob and s3 (blobs).
// storetest holds one conformance suite per port that every adapter passes.
//
// Contract shared by every port: ctx bounds every call (a dead dependency gives rag.KindUnavailable within
// the context deadline, never a hang); ids are validated with rag.ValidateID before they reach a query;
// every read is scoped by tenant in the query itself.
package store

import (
	"context"
	"io"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// VectorIndex stores embedded child chunks and finds the nearest ones by cosine similarity.
type VectorIndex interface {
	// Upsert writes records by id: an existing id is replaced (vector and metadata), so the same record
	// written twice counts once. Vectors must have the index's dimension and a non-zero norm (Invalid).
	Upsert(ctx context.Context, recs []rag.VectorRecord) error
	// Search returns at most k hits inside f, best first (cosine descending, ties by id ascending). An empty
	// result is an empty slice and a nil error. k < 1, a wrong dimension or a zero query are Invalid.
	Search(ctx context.Context, query []float32, k int, f rag.Filter) ([]rag.Hit, error)
	// Delete removes the tenant's records with these ids; ids that do not exist are ignored.
	Delete(ctx context.Context, tenant string, ids []string) error
	// DeleteDocument removes every record of one document.
	DeleteDocument(ctx context.Context, tenant, kbID, documentID string) error
	// Count returns the number of records inside f, read with strong consistency: after Upsert and Flush
	// return, Count sees every record.
	Count(ctx context.Context, f rag.Filter) (int, error)
	// Flush makes every acknowledged write durable.
	Flush(ctx context.Context) error
	Close() error
}

// KV is the key-value cache. It is never the system of record: anything in it can be lost and rebuilt.
// Keys are opaque strings; adapters add their configured prefix.
type KV interface {
	// Get returns the value, or NotFound when the key is missing or expired.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set stores the value; ttl 0 means no expiry.
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// SetNX stores the value only when the key does not exist and reports whether it did (a lock or lease).
	SetNX(ctx context.Context, key string, value []byte, ttl time.Duration) (bool, error)
	// Delete removes keys; missing keys are ignored.
	Delete(ctx context.Context, keys ...string) error
	// IncrBy adds delta to the integer at key (missing counts as 0) and returns the new value. ttl, when
	// positive, is set when the increment creates the key (a fixed window for rate limits).
	IncrBy(ctx context.Context, key string, delta int64, ttl time.Duration) (int64, error)
	// HSet sets fields of the hash at key; HGetAll returns every field (empty map, nil error when missing);
	// HDel removes fields.
	HSet(ctx context.Context, key string, fields map[string][]byte) error
	HGetAll(ctx context.Context, key string) (map[string][]byte, error)
	HDel(ctx context.Context, key string, fields ...string) error
	// Expire sets a key's ttl; NotFound when the key does not exist.
	Expire(ctx context.Context, key string, ttl time.Duration) error
	// TTL returns the remaining ttl, 0 for a key without expiry, NotFound for a missing key.
	TTL(ctx context.Context, key string) (time.Duration, error)
	Ping(ctx context.Context) error
	Close() error
}

// BlobInfo describes a stored object.
type BlobInfo struct {
	Key         string    `json:"key"`
	Size        int64     `json:"size"`
	ETag        string    `json:"etag"`
	ContentType string    `json:"content_type,omitempty"`
	ModTime     time.Time `json:"mod_time"`
}

// Blobs stores objects by key: uploaded sources and staging payloads. Keys are relative slash-separated
// paths without "." or ".." segments (Invalid otherwise).
type Blobs interface {
	// Put writes the object (replacing any old one) and returns its info; the ETag changes when the content does.
	Put(ctx context.Context, key string, r io.Reader, contentType string) (BlobInfo, error)
	// Get opens the object; NotFound when missing. The caller closes the reader.
	Get(ctx context.Context, key string) (io.ReadCloser, BlobInfo, error)
	// Stat returns the object's info; NotFound when missing.
	Stat(ctx context.Context, key string) (BlobInfo, error)
	// Delete removes the object; a missing object is not an error (S3 semantics).
	Delete(ctx context.Context, key string) error
	// List returns every object whose key starts with prefix, sorted by key.
	List(ctx context.Context, prefix string) ([]BlobInfo, error)
}
