-- Metadata generations; kept column for column equal to ../mysql/0013_metadata_generations.sql, which
-- explains the table.
CREATE TABLE IF NOT EXISTS metadata_generations (
  tenant_id   VARCHAR(64)  NOT NULL,
  generation  BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id)
);
