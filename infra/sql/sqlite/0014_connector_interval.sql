-- A connector's own sync interval (issue #23, the page's knowledge-base settings); kept equal to
-- ../mysql/0014_connector_interval.sql, which explains it.
ALTER TABLE connectors ADD COLUMN sync_interval_s BIGINT NOT NULL DEFAULT 0;
