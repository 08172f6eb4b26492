package retrieve

import (
	"context"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
)

// oneAtATime hides the store's batch look-up, so the chain asks for each document on its own.
type oneAtATime struct{ Chunks }

// TestNotReadyDocumentNeverReturned: a document that is no longer ready in SQL (the indexes lag) never
// reaches the evidence, whether the chain reads the candidates' documents in one query or one by one,
// and both ways name the same files.
func TestNotReadyDocumentNeverReturned(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	q := Query{Text: "安心保 投保年龄", Filter: rag.Filter{Tenant: "t1"}}
	before, err := e.r.Retrieve(ctx, q)
	if err != nil || len(before.Evidence) == 0 {
		t.Fatalf("before: %v, %d passages", err, len(before.Evidence))
	}
	batch := *e.r
	single := *e.r
	single.Chunks = oneAtATime{e.db}
	for name, r := range map[string]*Retriever{"batch": &batch, "single": &single} {
		got, err := r.Retrieve(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Evidence) != len(before.Evidence) || got.Evidence[0].FileName != before.Evidence[0].FileName {
			t.Fatalf("%s: %d passages from %q, want %d from %q", name, len(got.Evidence), got.Evidence[0].FileName, len(before.Evidence), before.Evidence[0].FileName)
		}
	}
	top := before.Evidence[0].DocumentID
	d, err := e.db.GetDocument(ctx, "t1", top)
	if err != nil {
		t.Fatal(err)
	}
	d.Status = rag.StatusFailed
	if err := e.db.UpdateDocument(ctx, &d); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Retriever{"batch": &batch, "single": &single} {
		got, err := r.Retrieve(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range got.Evidence {
			if ev.DocumentID == top {
				t.Fatalf("%s: a document that is not ready reached the evidence: %q", name, strings.SplitN(ev.Text, "\n", 2)[0])
			}
		}
	}
}
