-- Pre-analysed keyword terms of child chunks; the embedded mode keeps its BM25 index in memory, so
-- SQLite only stores them (kept column for column equal to MySQL).
ALTER TABLE chunks ADD COLUMN body_terms TEXT NULL;
ALTER TABLE chunks ADD COLUMN title_terms TEXT NULL;
ALTER TABLE chunks ADD COLUMN context_terms TEXT NULL;
ALTER TABLE chunks ADD COLUMN body_len INT NULL;
ALTER TABLE chunks ADD COLUMN title_len INT NULL;
ALTER TABLE chunks ADD COLUMN context_len INT NULL;
ALTER TABLE chunks ADD COLUMN search_terms TEXT NULL;
