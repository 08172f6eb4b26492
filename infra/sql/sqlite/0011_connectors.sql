-- Connectors and their items; kept column for column equal to ../mysql/0011_connectors.sql, which
-- explains both tables.
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
);

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
);
