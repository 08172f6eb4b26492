-- The conversation summary covers the messages up to this created_at (ms); newer turns that leave the
-- prompt window are folded into it, so the small model is not asked again for what it summarised.
ALTER TABLE conversations ADD COLUMN summary_upto BIGINT NOT NULL DEFAULT 0;
