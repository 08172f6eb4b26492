package ingest

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// MetadataWriter keeps documents' key/value metadata (sqldb.DB; docs/metadata-filters.md).
type MetadataWriter interface {
	SetDocumentMetadata(ctx context.Context, tenant, kbID, docID string, m rag.Metadata) error
}

// MetadataBatchWriter writes many documents' metadata at once (sqldb.DB: one transaction); a batch
// ingestion uses it when the store has it.
type MetadataBatchWriter interface {
	SetDocumentsMetadata(ctx context.Context, tenant string, items []sqldb.DocumentMetadata) error
}

var (
	_ MetadataWriter      = (*sqldb.DB)(nil)
	_ MetadataBatchWriter = (*sqldb.DB)(nil)
)

// FileMeta is what a document's file says about it, beside its front matter: the document
// properties the extractor found (extract.Result.Properties: title, author, created, modified,
// keywords) and the language detected in its text. It travels from Extract to the Index stage.
type FileMeta struct {
	Properties map[string]string `json:"properties,omitempty"`
	Language   string            `json:"language,omitempty"`
	// Object is the S3 object's user metadata and tags (the AWS drop folder).
	Object rag.Metadata `json:"object,omitempty"`
	// Sidecar is the <file>.metadata.json metadata (sidecar.go), the top layer.
	Sidecar rag.Metadata `json:"sidecar,omitempty"`
}

// writeMeta records a document's metadata when the relational store keeps it, from three layers,
// each overriding the one before (docs/metadata-filters.md, "Where metadata comes from"):
//
//  1. derived: source ("upload" for an upload, "file" for a dropped, S3 or command-line file; none
//     for a connector's item, whose connector writes its own), file_type, created (first indexed),
//     modified (this version indexed), language (detected);
//  2. the file's properties: title, author, created, modified, keywords (a list);
//  3. the front matter: numbers become numbers (so a range filter works on "year: 2025"), "tags" a
//     list, keys a filter cannot name are left out;
//  4. the S3 object's user metadata and tags (the AWS drop folder);
//  5. the sidecar (<file>.metadata.json).
//
// It replaces what an earlier version of the file set. Best effort: the document is indexed either
// way, and a failure is logged.
func (s *Stages) writeMeta(ctx context.Context, doc rag.Document, fm map[string]string, file FileMeta) {
	w, ok := s.Records.(MetadataWriter)
	if !ok {
		return
	}
	if err := w.SetDocumentMetadata(ctx, doc.Tenant, doc.KBID, doc.ID, documentMetadata(doc, fm, file)); err != nil && s.Log != nil {
		s.Log.Warn("document metadata not written", "document", doc.ID, "err", err)
	}
}

// docMeta is one document's metadata sources, for writeMetas.
type docMeta struct {
	doc  rag.Document
	fm   map[string]string
	file FileMeta
}

// writeMetas is writeMeta for a batch of one tenant's documents: one write when the store takes a
// batch. When that write fails in any way (a document's invalid metadata, a busy database, the
// mirror), each document is written again on its own, so one failure costs that document's metadata
// and not the batch's, and each failure is logged with its document.
func (s *Stages) writeMetas(ctx context.Context, tenant string, docs []docMeta) {
	if w, ok := s.Records.(MetadataBatchWriter); ok {
		items := make([]sqldb.DocumentMetadata, len(docs))
		for i, d := range docs {
			items[i] = sqldb.DocumentMetadata{KBID: d.doc.KBID, DocumentID: d.doc.ID, Metadata: documentMetadata(d.doc, d.fm, d.file)}
		}
		if w.SetDocumentsMetadata(ctx, tenant, items) == nil {
			return
		}
	}
	for _, d := range docs {
		s.writeMeta(ctx, d.doc, d.fm, d.file)
	}
}

// documentMetadata layers a document's metadata sources (writeMeta).
func documentMetadata(doc rag.Document, fm map[string]string, file FileMeta) rag.Metadata {
	m := rag.Metadata{}
	if !strings.HasPrefix(doc.SourceURI, "connector/") {
		m["source"] = "file"
		if strings.HasPrefix(doc.SourceURI, "upload/") {
			m["source"] = "upload"
		}
	}
	if doc.FileType != "" {
		m["file_type"] = doc.FileType
	}
	if !doc.CreatedAt.IsZero() {
		m["created"] = doc.CreatedAt.UTC().Format(time.RFC3339)
	}
	if !doc.UpdatedAt.IsZero() {
		m["modified"] = doc.UpdatedAt.UTC().Format(time.RFC3339)
	}
	if file.Language != "" {
		m["language"] = file.Language
	}
	for k, v := range file.Properties {
		switch {
		case v == "" || !rag.ValidMetaKey(k):
		case k == "keywords":
			m[k] = splitList(v)
		default:
			m[k] = v
		}
	}
	for k, v := range fm {
		if !rag.ValidMetaKey(k) || v == "" {
			continue
		}
		switch {
		case k == "tags":
			m[k] = splitList(strings.Trim(v, "[]"))
		default:
			// a number only when it reads back as written: "1.10" (a version) and "1e3" stay text
			if n, err := strconv.ParseFloat(v, 64); err == nil && strconv.FormatFloat(n, 'f', -1, 64) == v {
				m[k] = n
			} else {
				m[k] = v
			}
		}
	}
	for _, layer := range []rag.Metadata{file.Object, file.Sidecar} {
		for k, v := range layer {
			m[k] = v
		}
	}
	return m
}

// splitList reads "a, b" (or quoted items) as a list of strings.
func splitList(v string) []string {
	var out []string
	for _, t := range strings.Split(v, ",") {
		if t = strings.Trim(strings.TrimSpace(t), `"'`); t != "" {
			out = append(out, t)
		}
	}
	return out
}
