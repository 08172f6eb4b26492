-- Identity (issue 10): tenants, the JWT subject a user signs in with, and the indexes the
-- authentication path reads on every request.
CREATE TABLE IF NOT EXISTS tenants (
  id         VARCHAR(64)  NOT NULL,
  name       VARCHAR(255) NOT NULL DEFAULT '',
  created_at BIGINT       NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
ALTER TABLE users ADD COLUMN subject VARCHAR(255) NOT NULL DEFAULT '';
ALTER TABLE users ADD INDEX ix_user_subject (tenant_id, subject);
ALTER TABLE kb_members ADD INDEX ix_member_kb (tenant_id, kb_id);
