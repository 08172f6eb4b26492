-- Document metadata; kept column for column equal to ../mysql/0012_document_metadata.sql, which
-- explains the table.
CREATE TABLE IF NOT EXISTS document_metadata (
  tenant_id    VARCHAR(64)  NOT NULL,
  document_id  VARCHAR(64)  NOT NULL,
  kb_id        VARCHAR(64)  NOT NULL,
  metadata     TEXT         NOT NULL,
  updated_at   BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id, document_id)
);
