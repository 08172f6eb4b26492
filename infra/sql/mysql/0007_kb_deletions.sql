-- A knowledge base being deleted, recorded before anything of it is removed, so that an interrupted
-- `docmind kb delete` (or DELETE /api/kbs/{kb}) is finished by a repeated delete or by
-- `docmind reconcile --repair`, never left half-deleted. The row goes when the knowledge base is gone.
-- name is kept because the drop folder inbox/<name>/ is what must stay hidden.
CREATE TABLE IF NOT EXISTS kb_deletions (
  tenant_id    VARCHAR(64)  NOT NULL,
  kb_id        VARCHAR(64)  NOT NULL,
  name         VARCHAR(255) NOT NULL,
  requested_at BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id, kb_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
