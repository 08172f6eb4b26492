-- Metadata generations (issue #23): one counter per tenant, incremented in the same transaction as
-- every write that can change which documents a metadata filter selects (a document created, marked
-- deleted or removed, a knowledge base removed, metadata set). Each process keeps an in-memory
-- metadata index per tenant (sqldb.metaIndex) and reads this one row per filtered query: a generation
-- other than the one the index was built at means another process wrote, and the index is rebuilt.
CREATE TABLE IF NOT EXISTS metadata_generations (
  tenant_id   VARCHAR(64)  NOT NULL,
  generation  BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Editors' metadata edits (PATCH /api/documents/{id}/metadata): a JSON object of the keys an editor
-- set (their values) or removed (null). SetDocumentMetadata lays them over whatever the document's
-- sources say, so a re-index or a connector sync never undoes an editor's change.
CREATE TABLE IF NOT EXISTS document_metadata_edits (
  tenant_id    VARCHAR(64)  NOT NULL,
  document_id  VARCHAR(64)  NOT NULL,
  kb_id        VARCHAR(64)  NOT NULL,
  edits        TEXT         NOT NULL,
  updated_at   BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id, document_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
