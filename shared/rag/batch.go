package rag

// DocumentChunks is one document's part of a batched commit: the chunk rows to add and the chunk ids to
// remove, and the document row as it should read afterwards (its mutable fields, as UpdateDocument
// writes them). Ingestion commits many of these in one transaction so that the per-transaction cost
// (a commit, a WAL sync) is paid once per batch, not once per document.
type DocumentChunks struct {
	Document Document
	Add      []Chunk
	Remove   []string
}
