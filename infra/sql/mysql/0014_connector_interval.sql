-- A connector's own sync interval in seconds (issue #23, the page's knowledge-base settings): 0 syncs
-- it every DOCMIND_CONNECTOR_SYNC_INTERVAL (the server's default), -1 never on a schedule (only by
-- hand: `docmind connector sync`, the page's Sync now), a positive value every that many seconds.
ALTER TABLE connectors ADD COLUMN sync_interval_s BIGINT NOT NULL DEFAULT 0;
