-- Pre-analysed keyword terms of child chunks (docmind's analyzer: stems, identifiers, CJK bigrams) per
-- BM25 field with their lengths, and search_terms: every term encoded by bm25.Token (hex, so any
-- MySQL tokenizer keeps it whole). FULLTEXT finds candidates, Go scores them with the embedded
-- index's BM25.
ALTER TABLE chunks ADD COLUMN body_terms MEDIUMTEXT NULL;
ALTER TABLE chunks ADD COLUMN title_terms TEXT NULL;
ALTER TABLE chunks ADD COLUMN context_terms MEDIUMTEXT NULL;
ALTER TABLE chunks ADD COLUMN body_len INT NULL;
ALTER TABLE chunks ADD COLUMN title_len INT NULL;
ALTER TABLE chunks ADD COLUMN context_len INT NULL;
ALTER TABLE chunks ADD COLUMN search_terms MEDIUMTEXT NULL;
ALTER TABLE chunks ADD FULLTEXT INDEX ft_chunk_terms (search_terms);
