-- docmind schema v1 for SQLite (the embedded mode). Kept column for column equal to ../mysql/0001_init.sql.
-- Every table carries tenant_id and every query filters on it (security model: scoping in the query itself).
-- Times are Unix milliseconds (BIGINT) so the SQLite and MySQL adapters share one mapping.

CREATE TABLE IF NOT EXISTS knowledge_bases (
  id          VARCHAR(64)  NOT NULL,
  tenant_id   VARCHAR(64)  NOT NULL,
  name        VARCHAR(255) NOT NULL,
  description TEXT         NOT NULL,
  version     BIGINT       NOT NULL DEFAULT 0,
  created_at  BIGINT       NOT NULL,
  updated_at  BIGINT       NOT NULL,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS documents (
  id               VARCHAR(64)   NOT NULL,
  tenant_id        VARCHAR(64)   NOT NULL,
  kb_id            VARCHAR(64)   NOT NULL,
  source_uri       VARCHAR(2048) NOT NULL,
  source_hash      CHAR(64)      NOT NULL,
  source_etag      VARCHAR(255)  NOT NULL DEFAULT '',
  source_sequencer VARCHAR(64)   NOT NULL DEFAULT '',
  file_name        VARCHAR(1024) NOT NULL,
  file_type        VARCHAR(32)   NOT NULL DEFAULT '',
  content_hash     VARCHAR(64)   NOT NULL DEFAULT '',
  status           VARCHAR(16)   NOT NULL,
  error            TEXT          NOT NULL,
  doc_version      VARCHAR(64)   NOT NULL DEFAULT '',
  effective_date   VARCHAR(32)   NOT NULL DEFAULT '',
  chunk_count      INT           NOT NULL DEFAULT 0,
  created_at       BIGINT        NOT NULL,
  updated_at       BIGINT        NOT NULL,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS chunks (
  id           VARCHAR(64)  NOT NULL,
  tenant_id    VARCHAR(64)  NOT NULL,
  kb_id        VARCHAR(64)  NOT NULL,
  document_id  VARCHAR(64)  NOT NULL,
  parent_id    VARCHAR(64)  NOT NULL DEFAULT '',
  level        VARCHAR(8)   NOT NULL,
  chunk_index  INT          NOT NULL,
  content      TEXT         NOT NULL,
  content_hash CHAR(64)     NOT NULL,
  vector_id    VARCHAR(64)  NOT NULL DEFAULT '',
  chapter      TEXT         NOT NULL,
  content_type VARCHAR(16)  NOT NULL,
  tags         TEXT         NOT NULL,
  page         INT          NOT NULL DEFAULT 0,
  token_count  INT          NOT NULL DEFAULT 0,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS users (
  id         VARCHAR(64)  NOT NULL,
  tenant_id  VARCHAR(64)  NOT NULL,
  email      VARCHAR(320) NOT NULL,
  name       VARCHAR(255) NOT NULL DEFAULT '',
  role       VARCHAR(16)  NOT NULL DEFAULT 'member',
  created_at BIGINT       NOT NULL,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS api_keys (
  id           VARCHAR(64)  NOT NULL,
  tenant_id    VARCHAR(64)  NOT NULL,
  user_id      VARCHAR(64)  NOT NULL,
  key_hash     CHAR(64)     NOT NULL,
  prefix       VARCHAR(16)  NOT NULL,
  name         VARCHAR(255) NOT NULL DEFAULT '',
  created_at   BIGINT       NOT NULL,
  last_used_at BIGINT       NOT NULL DEFAULT 0,
  revoked_at   BIGINT       NOT NULL DEFAULT 0,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS kb_members (
  kb_id      VARCHAR(64) NOT NULL,
  user_id    VARCHAR(64) NOT NULL,
  tenant_id  VARCHAR(64) NOT NULL,
  role       VARCHAR(16) NOT NULL,
  created_at BIGINT      NOT NULL,
  PRIMARY KEY (kb_id, user_id)
);

CREATE TABLE IF NOT EXISTS conversations (
  id         VARCHAR(64)  NOT NULL,
  tenant_id  VARCHAR(64)  NOT NULL,
  user_id    VARCHAR(64)  NOT NULL,
  kb_ids     TEXT         NOT NULL,
  title      VARCHAR(512) NOT NULL DEFAULT '',
  summary    TEXT         NOT NULL,
  created_at BIGINT       NOT NULL,
  updated_at BIGINT       NOT NULL,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS messages (
  id                VARCHAR(64) NOT NULL,
  tenant_id         VARCHAR(64) NOT NULL,
  conversation_id   VARCHAR(64) NOT NULL,
  role              VARCHAR(16) NOT NULL,
  content           TEXT        NOT NULL,
  sources           TEXT        NOT NULL,
  trace             TEXT        NOT NULL,
  confidence        DOUBLE      NOT NULL DEFAULT 0,
  band              VARCHAR(8)  NOT NULL DEFAULT '',
  from_cache        TINYINT     NOT NULL DEFAULT 0,
  is_fallback       TINYINT     NOT NULL DEFAULT 0,
  prompt_tokens     INT         NOT NULL DEFAULT 0,
  completion_tokens INT         NOT NULL DEFAULT 0,
  cost_usd          DOUBLE      NOT NULL DEFAULT 0,
  created_at        BIGINT      NOT NULL,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS memories (
  id             VARCHAR(64) NOT NULL,
  tenant_id      VARCHAR(64) NOT NULL,
  user_id        VARCHAR(64) NOT NULL,
  kind           VARCHAR(32) NOT NULL,
  content        TEXT        NOT NULL,
  access_count   INT         NOT NULL DEFAULT 0,
  invalidated_at BIGINT      NOT NULL DEFAULT 0,
  superseded_by  VARCHAR(64) NOT NULL DEFAULT '',
  created_at     BIGINT      NOT NULL,
  updated_at     BIGINT      NOT NULL,
  PRIMARY KEY (id)
);

CREATE TABLE IF NOT EXISTS idempotency (
  idem_key     VARCHAR(255) NOT NULL,
  tenant_id    VARCHAR(64)  NOT NULL,
  status       VARCHAR(16)  NOT NULL,
  payload_hash CHAR(64)     NOT NULL,
  result       TEXT         NOT NULL,
  expires_at   BIGINT       NOT NULL,
  created_at   BIGINT       NOT NULL,
  PRIMARY KEY (idem_key)
);

CREATE TABLE IF NOT EXISTS audit_log (
  id           INTEGER      PRIMARY KEY AUTOINCREMENT,
  tenant_id    VARCHAR(64)  NOT NULL,
  actor        VARCHAR(128) NOT NULL,
  action       VARCHAR(64)  NOT NULL,
  target       VARCHAR(255) NOT NULL,
  content_hash VARCHAR(64)  NOT NULL DEFAULT '',
  detail       TEXT         NOT NULL,
  created_at   BIGINT       NOT NULL
);

CREATE UNIQUE INDEX IF NOT EXISTS uq_kb_tenant_name ON knowledge_bases (tenant_id, name);
CREATE UNIQUE INDEX IF NOT EXISTS uq_doc_source ON documents (tenant_id, kb_id, source_hash);
CREATE INDEX IF NOT EXISTS ix_doc_kb_status ON documents (tenant_id, kb_id, status);
CREATE INDEX IF NOT EXISTS ix_chunk_doc ON chunks (tenant_id, document_id, chunk_index);
CREATE INDEX IF NOT EXISTS ix_chunk_kb_level ON chunks (tenant_id, kb_id, level);
CREATE INDEX IF NOT EXISTS ix_chunk_vector ON chunks (vector_id);
CREATE UNIQUE INDEX IF NOT EXISTS uq_user_email ON users (tenant_id, email);
CREATE UNIQUE INDEX IF NOT EXISTS uq_api_key_hash ON api_keys (key_hash);
CREATE INDEX IF NOT EXISTS ix_api_key_user ON api_keys (tenant_id, user_id);
CREATE INDEX IF NOT EXISTS ix_member_user ON kb_members (tenant_id, user_id);
CREATE INDEX IF NOT EXISTS ix_conv_user ON conversations (tenant_id, user_id, updated_at);
CREATE INDEX IF NOT EXISTS ix_msg_conv ON messages (tenant_id, conversation_id, created_at);
CREATE INDEX IF NOT EXISTS ix_memory_user ON memories (tenant_id, user_id, invalidated_at);
CREATE INDEX IF NOT EXISTS ix_audit_tenant ON audit_log (tenant_id, created_at);
