-- Document metadata (issue #23): a document's key/value metadata as a JSON object (strings, numbers,
-- dates, string lists) from its source (connector fields, front matter, sidecars) and derived fields
-- (source, author, modified, language). One row per document that has any; a row whose document is
-- gone is ignored by every read (they join documents). Filters (rag.MetaFilter) are evaluated in Go
-- over these rows, then applied as a document-id restriction before ranking in both retrieval legs.
CREATE TABLE IF NOT EXISTS document_metadata (
  tenant_id    VARCHAR(64)  NOT NULL,
  document_id  VARCHAR(64)  NOT NULL,
  kb_id        VARCHAR(64)  NOT NULL,
  metadata     TEXT         NOT NULL,
  updated_at   BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id, document_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
