-- Leases: a named, expiring lock held in SQL, so that work serialised per source (ingestion of one S3
-- key) or per job (a consistency run) stays serialised across Lambda instances and processes, where an
-- in-process mutex cannot reach. Not tenant data: names are built by the caller (for example
-- "ingest:<tenant>:<source hash>"), so the table carries no tenant_id.
CREATE TABLE IF NOT EXISTS leases (
  name        VARCHAR(255) NOT NULL,
  holder      VARCHAR(255) NOT NULL,
  expires_at  BIGINT       NOT NULL,
  acquired_at BIGINT       NOT NULL,
  PRIMARY KEY (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Source events: the newest S3 event seen per source object, kept even after the document is deleted
-- (a tombstone), so an ObjectCreated delivered after the ObjectRemoved that followed it is recognised as
-- stale. sequencer is S3's hex sequencer left-padded to 64 characters and upper-cased, so that string
-- order is numeric order in both engines.
CREATE TABLE IF NOT EXISTS source_events (
  tenant_id   VARCHAR(64)   NOT NULL,
  source_hash CHAR(64)      NOT NULL,
  kb_id       VARCHAR(64)   NOT NULL,
  source_uri  VARCHAR(2048) NOT NULL,
  sequencer   VARCHAR(64)   NOT NULL,
  version_id  VARCHAR(1024) NOT NULL DEFAULT '',
  event       VARCHAR(16)   NOT NULL,
  updated_at  BIGINT        NOT NULL,
  PRIMARY KEY (tenant_id, source_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
