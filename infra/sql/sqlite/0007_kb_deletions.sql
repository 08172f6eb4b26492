-- Knowledge bases being deleted; kept column for column equal to ../mysql/0007_kb_deletions.sql, which
-- explains the table.
CREATE TABLE IF NOT EXISTS kb_deletions (
  tenant_id    VARCHAR(64)  NOT NULL,
  kb_id        VARCHAR(64)  NOT NULL,
  name         VARCHAR(255) NOT NULL,
  requested_at BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id, kb_id)
);
