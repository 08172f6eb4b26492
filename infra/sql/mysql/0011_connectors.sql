-- Connectors (issue #23): a named source outside the drop folder (a web site, a Confluence space, a
-- SharePoint drive, a Google Drive) that feeds one knowledge base. config is the connector's JSON
-- settings and never holds a credential (those come from a secret, a file or variables at sync time).
-- sync_cursor is the source's own change-feed position after the last completed sync ("" before the
-- first). status is idle|running|ok|partial|failed; progress is the JSON counts of the running or last
-- sync, written as it goes, so `connector list` shows a long first sync moving.
CREATE TABLE IF NOT EXISTS connectors (
  tenant_id     VARCHAR(64)  NOT NULL,
  name          VARCHAR(128) NOT NULL,
  kb_id         VARCHAR(64)  NOT NULL,
  type          VARCHAR(32)  NOT NULL,
  config        TEXT         NOT NULL,
  sync_cursor   TEXT         NOT NULL,
  status        VARCHAR(16)  NOT NULL,
  progress      TEXT         NOT NULL,
  last_error    TEXT         NOT NULL,
  started_at    BIGINT       NOT NULL,
  finished_at   BIGINT       NOT NULL,
  succeeded_at  BIGINT       NOT NULL,
  created_at    BIGINT       NOT NULL,
  PRIMARY KEY (tenant_id, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- Connector items: every item a connector has delivered, so a source without a deletion feed (a web
-- site) can report what vanished, a failed item is retried on the next sync even when the change feed
-- has moved past it, and conditional requests can send the validators of the last fetch. item_hash is
-- the SHA-256 of item_id (a URL may be long). state is the connector's own JSON (ETag, Last-Modified,
-- links found on the page); metadata is the item's key/value metadata and permissions at the source as
-- JSON, as the connector reported them at the last fetch; error is the last failure ("" when the item is indexed).
CREATE TABLE IF NOT EXISTS connector_items (
  tenant_id   VARCHAR(64)   NOT NULL,
  connector   VARCHAR(128)  NOT NULL,
  item_hash   CHAR(64)      NOT NULL,
  item_id     VARCHAR(2048) NOT NULL,
  source_uri  VARCHAR(2048) NOT NULL,
  version     VARCHAR(255)  NOT NULL,
  state       TEXT          NOT NULL,
  metadata    TEXT          NOT NULL,
  error       TEXT          NOT NULL,
  updated_at  BIGINT        NOT NULL,
  PRIMARY KEY (tenant_id, connector, item_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
