-- What OCR did to a document ("OCR (eng) on 3 page(s), mean confidence 91%; low confidence on page(s)
-- 2: check the scan"), as extract.OCRReport.Note gives it; empty when no page was recognised and for
-- documents ingested before 0010.
ALTER TABLE documents ADD COLUMN ocr_note VARCHAR(512) NOT NULL DEFAULT '';
