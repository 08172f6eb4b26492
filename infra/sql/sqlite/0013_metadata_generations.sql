-- Metadata generations and editors' metadata edits; kept column for column equal to
-- ../mysql/0013_metadata_generations.sql, which explains the tables.
CREATE TABLE IF NOT EXISTS metadata_generations (
  tenant_id   VARCHAR(64)  NOT NULL,
  generation  BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id)
);

CREATE TABLE IF NOT EXISTS document_metadata_edits (
  tenant_id    VARCHAR(64)  NOT NULL,
  document_id  VARCHAR(64)  NOT NULL,
  kb_id        VARCHAR(64)  NOT NULL,
  edits        TEXT         NOT NULL,
  updated_at   BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id, document_id)
);
