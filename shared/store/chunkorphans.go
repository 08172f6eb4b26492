package store

// ChunkOrphans are the chunk rows of one document id that has no document row: what a delete racing a
// write of chunks leaves (the delete removed the row and its chunks, then the write added chunks).
// Retrieval never serves them (it joins documents), but they take space and keyword statistics count
// them; the consistency check finds and deletes them.
type ChunkOrphans struct {
	DocumentID string
	KBID       string
	Rows       int
}
