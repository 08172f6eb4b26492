package store

import (
	"context"

	"github.com/docmind/docmind/shared/rag"
)

// VectorRef identifies one stored vector record without its values.
type VectorRef struct {
	ID         string `json:"id"`
	KBID       string `json:"kb_id"`
	DocumentID string `json:"document_id"`
	ChunkID    string `json:"chunk_id"`
}

// VectorLister enumerates an index's records. It is not part of VectorIndex because only the consistency
// check and whole-knowledge-base deletion need it, and on a large collection it is a full scan.
type VectorLister interface {
	// ListVectors returns every record inside f (tenant, knowledge bases, documents; tags ignored), sorted
	// by id, read with strong consistency: after Upsert and Flush return, the records are listed. An empty
	// result is an empty slice and a nil error; an invalid filter is Invalid.
	ListVectors(ctx context.Context, f rag.Filter) ([]VectorRef, error)
}
