-- Leases and source events; kept column for column equal to ../mysql/0006_leases_source_events.sql,
-- which explains both tables.
CREATE TABLE IF NOT EXISTS leases (
  name        VARCHAR(255) NOT NULL,
  holder      VARCHAR(255) NOT NULL,
  expires_at  BIGINT       NOT NULL,
  acquired_at BIGINT       NOT NULL,
  PRIMARY KEY (name)
);

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
);
