-- The text encoding a document's source was read from ("utf-8", "gb18030", "big5", "utf-16le", ...), as
-- detected at extraction; empty for binary formats (PDF, Office) and documents ingested before 0008.
ALTER TABLE documents ADD COLUMN source_encoding VARCHAR(32) NOT NULL DEFAULT '';
