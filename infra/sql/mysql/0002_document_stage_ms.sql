-- Per-stage timings of a document's last ingestion, as JSON ({"extract":12,"chunk":3,...} in ms).
ALTER TABLE documents ADD COLUMN stage_ms VARCHAR(1024) NOT NULL DEFAULT '';
