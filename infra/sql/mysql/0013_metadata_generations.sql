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
