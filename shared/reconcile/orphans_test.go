package reconcile_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
)

// Chunk rows whose document row is gone (a delete racing a write of chunks) are counted under
// rows_of_deleted_documents and deleted by the repair (review of issue #11, finding 4: deleting a
// document row and keeping its chunk rows, reconcile --repair then reconcile said consistent and the
// rows stayed).
func TestChunkRowsWithoutDocument(t *testing.T) {
	w := newWorld(t)
	docs := w.seed(t, 3)
	ctx := context.Background()
	gone := docs[1]
	if _, err := w.db.SQL().ExecContext(ctx, `DELETE FROM documents WHERE tenant_id = ? AND id = ?`, tenant, gone.ID); err != nil {
		t.Fatal(err)
	}
	dry, err := w.checker(2*time.Hour).Run(ctx, reconcile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Drift[reconcile.DeletedDocuments] != 1 {
		t.Fatalf("drift %v; want rows_of_deleted_documents 1 (the document's 4 orphan chunk rows)", dry.Drift)
	}
	i := slices.IndexFunc(dry.Findings, func(f reconcile.Finding) bool { return f.Class == reconcile.DeletedDocuments })
	if f := dry.Findings[i]; f.DocumentID != gone.ID || f.Status != reconcile.StatusChunkOrphans || f.KBID != w.kb.ID {
		t.Fatalf("finding %+v; want document %s, status %s", f, gone.ID, reconcile.StatusChunkOrphans)
	}
	if rep, _ := w.checker(2*time.Hour).Run(ctx, reconcile.Options{KB: "manuals"}); rep.Drift[reconcile.DeletedDocuments] != 1 {
		t.Fatalf("a run scoped to the knowledge base: %v", rep.Drift)
	}
	rep, err := w.checker(2*time.Hour).Run(ctx, reconcile.Options{Repair: true})
	if err != nil || rep.Repaired[reconcile.DeletedDocuments] != 1 || !rep.Clean() {
		t.Fatalf("repair: %+v, %v", rep, err)
	}
	if rows, _ := w.db.ListChunks(ctx, tenant, gone.ID); len(rows) != 0 {
		t.Fatalf("%d chunk rows of the deleted document left after the repair", len(rows))
	}
	if rows, _ := w.db.ListChunks(ctx, tenant, docs[0].ID); len(rows) != 4 {
		t.Fatalf("a live document's rows: %d, want 4", len(rows))
	}
	again, err := w.checker(2*time.Hour).Run(ctx, reconcile.Options{})
	if err != nil || sumMap(again.Drift) != 0 {
		t.Fatalf("second run: %v, %v", again.Drift, err)
	}
	w.assertConsistent(t)
}

// fakeInbox is a drop folder holding files (source uris), every one old enough to ingest.
type fakeInbox struct {
	tenant  string
	files   []string
	ingests []string
}

func (f *fakeInbox) Files(_ context.Context, tenant string) ([]string, error) {
	if tenant != f.tenant {
		return nil, nil
	}
	return f.files, nil
}

func (f *fakeInbox) Present(_ context.Context, tenant string) ([]string, bool, error) {
	if tenant != f.tenant {
		return nil, false, nil
	}
	return f.files, true, nil
}

func (f *fakeInbox) Ingest(_ context.Context, _, uri string) error {
	f.ingests = append(f.ingests, uri)
	return nil
}

// A ready drop-folder document whose file left the drop folder without its removal being applied (an
// S3 event lost or dead-lettered, a file removed while no watcher ran) is documents_without_source and
// the repair deletes it (review of issue #11, finding 5). A document changed within Grace is left to
// the event path, and a tenant the drop folder does not feed is never compared with it.
func TestDropFolderDocumentWithoutFile(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	ids := map[string]string{}
	for _, name := range []string{"kept.md", "removed.md"} {
		uri := ingest.SourceURI("manuals", name)
		rep, err := w.svc.Ingest(ctx, tenant, ingest.Source{KBName: "manuals", URI: uri, Name: name, Data: []byte("# " + name + "\n\nThe waiting period is ninety days.")})
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = rep.DocumentID
	}
	inbox := &fakeInbox{tenant: tenant, files: []string{"inbox/manuals/kept.md"}}
	chk := func(later time.Duration) *reconcile.Checker {
		c := w.checker(later)
		c.Inbox = inbox
		return c
	}
	if rep, err := chk(0).Run(ctx, reconcile.Options{}); err != nil || !rep.Clean() {
		t.Fatalf("within Grace: %v, %v; want no drift (the removal's own event may be on its way)", rep.Drift, err)
	}
	other := chk(2 * time.Hour)
	other.Inbox = &fakeInbox{tenant: "someone-else"}
	if rep, err := other.Run(ctx, reconcile.Options{}); err != nil || !rep.Clean() {
		t.Fatalf("a drop folder that feeds another tenant: %v, %v", rep.Drift, err)
	}
	dry, err := chk(2*time.Hour).Run(ctx, reconcile.Options{})
	if err != nil || dry.Drift[reconcile.DocumentsWithoutSource] != 1 || sumMap(dry.Drift) != 1 {
		t.Fatalf("drift %v, %v; want documents_without_source 1", dry.Drift, err)
	}
	if f := dry.Findings[0]; f.DocumentID != ids["removed.md"] || !slices.Equal(f.IDs, []string{"inbox/manuals/removed.md"}) {
		t.Fatalf("finding %+v", f)
	}
	rep, err := chk(2*time.Hour).Run(ctx, reconcile.Options{Repair: true})
	if err != nil || rep.Repaired[reconcile.DocumentsWithoutSource] != 1 || !rep.Clean() {
		t.Fatalf("repair: %+v, %v", rep, err)
	}
	if _, err := w.db.GetDocument(ctx, tenant, ids["removed.md"]); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("the document of the removed file: %v; want it deleted", err)
	}
	if d, err := w.db.GetDocument(ctx, tenant, ids["kept.md"]); err != nil || d.Status != rag.StatusReady {
		t.Fatalf("the document whose file is there: %+v, %v", d, err)
	}
	if len(inbox.ingests) != 0 {
		t.Fatalf("the repair ingested %v", inbox.ingests)
	}
	if again, err := chk(2*time.Hour).Run(ctx, reconcile.Options{}); err != nil || !again.Clean() {
		t.Fatalf("second run: %v, %v", again.Drift, err)
	}
}

// versionedInbox is a fakeInbox that also knows the newest recorded put per source (SourceVersions).
type versionedInbox struct {
	fakeInbox
	newest  map[string]string // uri -> sequencer of the newest recorded put
	started []string
}

func (v *versionedInbox) NewerPut(_ context.Context, _, uri, seq string) (bool, error) {
	n, ok := v.newest[uri]
	return ok && seq != "" && n > seq, nil // the test's sequencers have one width
}

func (v *versionedInbox) IngestNewest(_ context.Context, _, uri string) error {
	v.started = append(v.started, uri)
	return nil
}

// A ready drop-folder document prepared at an older sequencer than the newest put recorded for its
// source serves an older version (that version's execution gave up on the lease and its follow-up never
// started): stale_versions, repaired by starting the newest put's ingestion. Within Grace it is left to
// the event path; a document at the newest sequencer is not stale.
func TestStaleDropFolderVersion(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	ids := map[string]string{}
	for _, name := range []string{"current.md", "stale.md"} {
		uri := ingest.SourceURI("manuals", name)
		rep, err := w.svc.Ingest(ctx, tenant, ingest.Source{KBName: "manuals", URI: uri, Name: name, Data: []byte("# " + name + "\n\nThe waiting period is ninety days.")})
		if err != nil {
			t.Fatal(err)
		}
		d, err := w.db.GetDocument(ctx, tenant, rep.DocumentID)
		if err != nil {
			t.Fatal(err)
		}
		d.SourceSequencer = "00A1"
		if err := w.db.UpdateDocument(ctx, &d); err != nil {
			t.Fatal(err)
		}
		ids[name] = d.ID
	}
	inbox := &versionedInbox{fakeInbox: fakeInbox{tenant: tenant, files: []string{"inbox/manuals/current.md", "inbox/manuals/stale.md"}},
		newest: map[string]string{"inbox/manuals/current.md": "00A1", "inbox/manuals/stale.md": "00B7"}}
	chk := func(later time.Duration) *reconcile.Checker {
		c := w.checker(later)
		c.Inbox = inbox
		return c
	}
	if rep, err := chk(0).Run(ctx, reconcile.Options{}); err != nil || !rep.Clean() {
		t.Fatalf("within Grace: %v, %v; want no drift", rep.Drift, err)
	}
	dry, err := chk(2*time.Hour).Run(ctx, reconcile.Options{})
	if err != nil || dry.Drift[reconcile.StaleVersions] != 1 || sumMap(dry.Drift) != 1 {
		t.Fatalf("drift %v, %v; want stale_versions 1", dry.Drift, err)
	}
	if f := dry.Findings[0]; f.DocumentID != ids["stale.md"] || !slices.Equal(f.IDs, []string{"inbox/manuals/stale.md"}) {
		t.Fatalf("finding %+v", f)
	}
	rep, err := chk(2*time.Hour).Run(ctx, reconcile.Options{Repair: true})
	if err != nil || rep.Repaired[reconcile.StaleVersions] != 1 || !slices.Equal(inbox.started, []string{"inbox/manuals/stale.md"}) {
		t.Fatalf("repair: %+v, %v, started %v", rep, err, inbox.started)
	}
	// the started execution prepares the newest put: the document is at its sequencer, and clean
	d, _ := w.db.GetDocument(ctx, tenant, ids["stale.md"])
	d.SourceSequencer = "00B7"
	if err := w.db.UpdateDocument(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if again, err := chk(4*time.Hour).Run(ctx, reconcile.Options{}); err != nil || !again.Clean() {
		t.Fatalf("after the newest version was prepared: %v, %v", again.Drift, err)
	}
	if len(inbox.ingests) != 0 {
		t.Fatalf("the repair ingested files %v", inbox.ingests)
	}
}
