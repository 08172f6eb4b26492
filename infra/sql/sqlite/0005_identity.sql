-- Identity (issue 10): tenants, the JWT subject a user signs in with, and the indexes the
-- authentication path reads on every request.
CREATE TABLE IF NOT EXISTS tenants (
  id         VARCHAR(64)  NOT NULL PRIMARY KEY,
  name       VARCHAR(255) NOT NULL DEFAULT '',
  created_at BIGINT       NOT NULL
);
ALTER TABLE users ADD COLUMN subject VARCHAR(255) NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS ix_user_subject ON users (tenant_id, subject);
CREATE INDEX IF NOT EXISTS ix_member_kb ON kb_members (tenant_id, kb_id);
