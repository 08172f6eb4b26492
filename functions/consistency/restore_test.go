package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
)

// restoreFakes records what sourceRestore asks of the ingestion service.
type restoreFakes struct {
	kb      rag.KnowledgeBase
	refuse  error // CheckOperator's answer
	checked []string
	ingests []ingest.Source
}

func (f *restoreFakes) KB(_ context.Context, _, name string, create bool) (rag.KnowledgeBase, error) {
	if create || name != f.kb.Name {
		return rag.KnowledgeBase{}, rag.E("fake.KB", rag.KindNotFound, nil)
	}
	return f.kb, nil
}

func (f *restoreFakes) CheckOperator(_ context.Context, kb rag.KnowledgeBase, channel string) error {
	f.checked = append(f.checked, kb.ID+" "+channel)
	return f.refuse
}

func (f *restoreFakes) Ingest(_ context.Context, _ string, src ingest.Source) (ingest.Report, error) {
	f.ingests = append(f.ingests, src)
	return ingest.Report{}, nil
}

func (f *restoreFakes) GetDocumentBySource(_ context.Context, _, kbID, uri string) (rag.Document, error) {
	return rag.Document{ID: "doc_1", KBID: kbID, SourceURI: uri, Status: rag.StatusReady}, nil
}

func (f *restoreFakes) AcquireLease(context.Context, string, string, time.Duration) (bool, error) {
	return true, nil
}
func (f *restoreFakes) ReleaseLease(context.Context, string, string) error { return nil }
func (f *restoreFakes) GetObject(context.Context, string, string, string, int64) ([]byte, error) {
	return []byte("# Plan\n"), nil
}

// The restore ingests into the knowledge base it looked up and leased, by id: looked up again by name,
// a delete and re-create of the name in between sent the object to the new knowledge base, past the
// operator rule. The rule is applied to the knowledge base it found (the restore is an operator channel).
func TestRestoreIngestsByTheIDItLeased(t *testing.T) {
	f := &restoreFakes{kb: rag.KnowledgeBase{ID: "kb_1", Tenant: testTenant, Name: "handbook"}}
	r := &sourceRestore{Service: f, Records: f, Leases: f, Objects: f}
	ok, err := r.Restore(context.Background(), testTenant, ingest.SourceChange{Bucket: "b", Key: "inbox/handbook/plan.md", VersionID: "v1"})
	if !ok || err != nil {
		t.Fatalf("Restore = %v, %v; want true, nil", ok, err)
	}
	if len(f.ingests) != 1 || f.ingests[0].KBID != "kb_1" {
		t.Fatalf("ingested %+v, want one source with KBID kb_1", f.ingests)
	}
	if len(f.checked) != 1 || f.checked[0] != "kb_1 restore" {
		t.Errorf("operator rule checked on %v, want kb_1 by the restore channel", f.checked)
	}

	f.ingests, f.refuse = nil, rag.E("ingest.CheckOperator", rag.KindPermission, errors.New("a member created it"))
	if _, err := r.Restore(context.Background(), testTenant, ingest.SourceChange{Bucket: "b", Key: "inbox/handbook/plan.md", VersionID: "v1"}); !rag.Is(err, rag.KindPermission) {
		t.Errorf("Restore into a refused knowledge base = %v, want Permission", err)
	}
	if len(f.ingests) != 0 {
		t.Errorf("a refused knowledge base was ingested into: %+v", f.ingests)
	}
}
