package sqlite

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// TestSetDocumentsMetadata: a batch write lays each document's edits over its sources as the single
// write does, leaves out (and names) a document whose metadata is invalid, moves the generation once
// for the batch, mirrors each document written, and updates a built filter index in place.
func TestSetDocumentsMetadata(t *testing.T) {
	ctx := context.Background()
	db, kb := newKBStore(t)
	var docs []string
	for _, name := range []string{"a", "b", "c"} {
		d := rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "upload/" + name, FileName: name, Status: rag.StatusReady}
		if err := db.CreateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d.ID)
	}
	if _, err := db.EditDocumentMetadata(ctx, "t1", kb.ID, docs[1], rag.Metadata{"team": "legal"}, nil); err != nil {
		t.Fatal(err)
	}
	hr, err := rag.ParseMetaFilter([]byte(`{"key":"team","eq":"hr"}`))
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := db.MatchDocuments(ctx, "t1", []string{kb.ID}, hr); err != nil || len(ids) != 0 {
		t.Fatalf("before: %v, %v", ids, err)
	}
	builds := db.MetaIndexBuilds()
	type call struct {
		doc string
		m   rag.Metadata
		gen int64
	}
	var calls []call
	db.SetMetadataMirror(func(ctx context.Context, tenant, kbID, docID string, m rag.Metadata, gen int64) error {
		calls = append(calls, call{docID, m, gen})
		return nil
	})
	if err := db.SetDocumentMetadata(ctx, "t1", kb.ID, docs[2], rag.Metadata{"x": "1"}); err != nil || len(calls) != 1 {
		t.Fatalf("single write: %v, %d mirror calls", err, len(calls))
	}
	gen0 := calls[0].gen
	calls = nil
	err = db.SetDocumentsMetadata(ctx, "t1", []sqldb.DocumentMetadata{
		{KBID: kb.ID, DocumentID: docs[0], Metadata: rag.Metadata{"team": "hr"}},
		{KBID: kb.ID, DocumentID: docs[1], Metadata: rag.Metadata{"team": "hr", "year": 2025}},
		{KBID: kb.ID, DocumentID: docs[2], Metadata: rag.Metadata{"bad key!": "x"}},
	})
	if !rag.Is(err, rag.KindInvalid) || !strings.Contains(err.Error(), docs[2]) || strings.Contains(err.Error(), docs[0]) {
		t.Fatalf("error %v; want Invalid naming %s only", err, docs[2])
	}
	want := map[string]rag.Metadata{docs[0]: {"team": "hr"}, docs[1]: {"team": "legal", "year": 2025.0}, docs[2]: {"x": "1"}}
	for id, w := range want {
		m, err := db.GetDocumentMetadata(ctx, "t1", id)
		if err != nil || !reflect.DeepEqual(m, w) { // the invalid one keeps what it had
			t.Fatalf("%s: %v, %v; want %v", id, m, err, w)
		}
	}
	if len(calls) != 2 || calls[0].doc != docs[0] || calls[1].doc != docs[1] || calls[0].gen != calls[1].gen || calls[0].gen != gen0+1 {
		t.Fatalf("mirror calls %+v; want the two written documents at one generation, %d", calls, gen0+1)
	}
	ids, err := db.MatchDocuments(ctx, "t1", []string{kb.ID}, hr)
	if err != nil || !slices.Equal(ids, []string{docs[0]}) {
		t.Fatalf("team = hr: %v, %v; want %s (the other's editor set legal)", ids, err, docs[0])
	}
	if db.MetaIndexBuilds() != builds {
		t.Fatal("the filter index was rebuilt, not updated in place")
	}
	// nothing valid: nothing written, the generation stays (the next write takes the next one)
	calls = nil
	if err := db.SetDocumentsMetadata(ctx, "t1", []sqldb.DocumentMetadata{{KBID: kb.ID, DocumentID: "bad id/", Metadata: rag.Metadata{"a": "b"}},
		{KBID: kb.ID, DocumentID: docs[0], Metadata: rag.Metadata{"Bad Key": "b"}}}); !rag.Is(err, rag.KindInvalid) || len(calls) != 0 {
		t.Fatalf("nothing valid: %v, %d mirror calls", err, len(calls))
	}
	if err := db.SetDocumentMetadata(ctx, "t1", kb.ID, docs[0], rag.Metadata{"team": "ops"}); err != nil || len(calls) != 1 || calls[0].gen != gen0+2 {
		t.Fatalf("the write after: %v, mirror calls %+v; want one at generation %d", err, calls, gen0+2)
	}
}
