package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
)

// serveOn runs a Main on data until stop is called (a restart is stop, then serveOn again).
func serveOn(t *testing.T, data string, progress *syncBuffer) (m *Main, base string, stop func()) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = data
	cfg.Server.Addr = "127.0.0.1:0"
	m = &Main{Config: cfg, Version: "test", NoDemo: true, NoWatch: true}
	if progress != nil {
		m.Progress = progress
	}
	if err := m.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		m.Close()
	}
	t.Cleanup(stop)
	return m, "http://" + m.Addr(), stop
}

// uploadReady uploads a markdown file to the knowledge base and waits until it is ready.
func uploadReady(t *testing.T, c client, kb, name, text string) rag.Document {
	t.Helper()
	code, body := c.upload(t, kb, name, text)
	var d rag.Document
	if code != 202 || json.Unmarshal(body, &d) != nil {
		t.Fatalf("upload: %d %s", code, body)
	}
	poll(t, name+" to be ready", func() bool {
		_, b := c.json(t, http.MethodGet, "/api/documents/"+d.ID, nil)
		return strings.Contains(string(b), `"status":"ready"`)
	})
	return d
}

// A document marked deleted by a delete that a crash interrupted is gone for every reader at once (its
// record, its chunks, the list, the counts, chat's document scope), and a repeated DELETE finishes it.
func TestDeletedDocumentIsInvisibleAtOnce(t *testing.T) {
	m, base, _ := serveOn(t, t.TempDir(), nil)
	c := client{base: base}
	if code, b := c.json(t, http.MethodPost, "/api/kbs", map[string]string{"name": "manuals"}); code != 201 {
		t.Fatalf("create: %d %s", code, b)
	}
	keep := uploadReady(t, c, "manuals", "keep.md", "# Keep\n\nThe warranty lasts two years.")
	gone := uploadReady(t, c, "manuals", "gone.md", "# Gone\n\nRefunds take five days.")
	// the state a crash leaves right after the tombstone is written: every row and vector still there
	d, err := m.Stores.SQL.GetDocument(t.Context(), m.Config.Tenant, gone.ID)
	if err != nil {
		t.Fatal(err)
	}
	d.Status = rag.StatusDeleted
	if err := m.Stores.SQL.UpdateDocument(t.Context(), &d); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/documents/" + gone.ID, "/api/documents/" + gone.ID + "/chunks"} {
		if code, b := c.json(t, http.MethodGet, path, nil); code != 404 {
			t.Errorf("GET %s: %d %s, want 404", path, code, b)
		}
	}
	if code, b := c.json(t, http.MethodPost, "/api/documents/"+gone.ID+"/reprocess", nil); code != 404 {
		t.Errorf("reprocess a deleted document: %d %s", code, b)
	}
	for _, path := range []string{"/api/kbs/manuals/documents", "/api/kbs/manuals/documents?status=deleted"} {
		_, b := c.json(t, http.MethodGet, path, nil)
		if strings.Contains(string(b), gone.ID) {
			t.Errorf("GET %s lists the deleted document: %s", path, b)
		}
	}
	var sum struct{ Documents int }
	if _, b := c.json(t, http.MethodGet, "/api/kbs/manuals", nil); json.Unmarshal(b, &sum) != nil || sum.Documents != 1 {
		t.Errorf("knowledge-base summary counts the deleted document: %s", b)
	}
	if code, b := c.json(t, http.MethodPost, "/api/chat", map[string]any{"question": "refunds?", "documents": []string{gone.ID}}); code != 404 {
		t.Errorf("chat scoped to the deleted document: %d %.200s", code, b)
	}
	if code, _ := c.json(t, http.MethodGet, "/api/documents/"+keep.ID, nil); code != 200 {
		t.Errorf("the other document: %d", code)
	}
	// repeating the delete finishes it
	if code, b := c.json(t, http.MethodDelete, "/api/documents/"+gone.ID, nil); code != 204 {
		t.Fatalf("repeat DELETE: %d %s", code, b)
	}
	if _, err := m.Stores.SQL.GetDocument(t.Context(), m.Config.Tenant, gone.ID); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("the row outlived the finished delete: %v", err)
	}
}

// A knowledge base whose delete is recorded is gone for every reader at once and its name is free;
// `docmind serve` finishes the delete (and a document's) at its next start, leaving the new knowledge
// base of the same name alone.
func TestInterruptedDeletesFinishAtStart(t *testing.T) {
	data := t.TempDir()
	m, base, stop := serveOn(t, data, nil)
	c := client{base: base}
	var old rag.KnowledgeBase
	if code, b := c.json(t, http.MethodPost, "/api/kbs", map[string]string{"name": "manuals"}); code != 201 || json.Unmarshal(b, &old) != nil {
		t.Fatalf("create: %d %s", code, b)
	}
	oldDoc := uploadReady(t, c, "manuals", "old.md", "# Old\n\nThe old policy says thirty days.")
	if code, b := c.json(t, http.MethodPost, "/api/kbs", map[string]string{"name": "other"}); code != 201 {
		t.Fatalf("create other: %d %s", code, b)
	}
	tomb := uploadReady(t, c, "other", "tomb.md", "# Tomb\n\nA document whose delete was cut short.")
	ctx := t.Context()
	// the crash states: the knowledge base's delete recorded and nothing else done; a document tombstoned
	if err := m.Stores.SQL.MarkKBDeleting(ctx, old); err != nil {
		t.Fatal(err)
	}
	d, _ := m.Stores.SQL.GetDocument(ctx, m.Config.Tenant, tomb.ID)
	d.Status = rag.StatusDeleted
	if err := m.Stores.SQL.UpdateDocument(ctx, &d); err != nil {
		t.Fatal(err)
	}
	// invisible at once, by name and by id, with its documents
	if _, b := c.json(t, http.MethodGet, "/api/kbs", nil); strings.Contains(string(b), old.ID) || strings.Contains(string(b), rag.RetiredKBPrefix) {
		t.Errorf("the deleted knowledge base is listed: %s", b)
	}
	for _, path := range []string{"/api/kbs/manuals", "/api/kbs/" + old.ID, "/api/kbs/" + old.ID + "/documents", "/api/documents/" + oldDoc.ID, "/api/documents/" + oldDoc.ID + "/chunks"} {
		if code, b := c.json(t, http.MethodGet, path, nil); code != 404 {
			t.Errorf("GET %s: %d %s, want 404", path, code, b)
		}
	}
	if code, b := c.json(t, http.MethodPost, "/api/chat", map[string]any{"question": "old policy?", "kbs": []string{old.ID}}); code != 404 {
		t.Errorf("chat in the deleted knowledge base: %d %.200s", code, b)
	}
	// its name is free
	var fresh rag.KnowledgeBase
	if code, b := c.json(t, http.MethodPost, "/api/kbs", map[string]string{"name": "manuals"}); code != 201 || json.Unmarshal(b, &fresh) != nil || fresh.ID == old.ID {
		t.Fatalf("re-create the name: %d %s", code, b)
	}
	newDoc := uploadReady(t, c, "manuals", "new.md", "# New\n\nThe new policy says fourteen days.")
	stop()

	var progress syncBuffer
	m, base, _ = serveOn(t, data, &progress)
	c = client{base: base}
	poll(t, "the interrupted deletes to finish", func() bool {
		return strings.Contains(progress.String(), "docmind: finished 2 deletes interrupted at the last stop")
	})
	if pending, err := m.Stores.SQL.ListKBDeletions(ctx, m.Config.Tenant); err != nil || len(pending) != 0 {
		t.Fatalf("deletes still recorded: %v %v", pending, err)
	}
	for _, id := range []string{oldDoc.ID, tomb.ID} {
		if _, err := m.Stores.SQL.GetDocument(ctx, m.Config.Tenant, id); !rag.Is(err, rag.KindNotFound) {
			t.Errorf("document %s outlived its delete: %v", id, err)
		}
	}
	if n, err := m.Stores.Vectors.Count(ctx, rag.Filter{Tenant: m.Config.Tenant, KBIDs: []string{old.ID}}); err != nil || n != 0 {
		t.Errorf("vectors of the deleted knowledge base: %d %v", n, err)
	}
	if _, err := m.Stores.SQL.GetKB(ctx, m.Config.Tenant, old.ID); !rag.Is(err, rag.KindNotFound) {
		t.Errorf("the deleted knowledge base's row: %v", err)
	}
	// the new knowledge base of the same name is untouched
	if code, b := c.json(t, http.MethodGet, "/api/documents/"+newDoc.ID, nil); code != 200 || !strings.Contains(string(b), `"status":"ready"`) {
		t.Fatalf("the new knowledge base's document: %d %s", code, b)
	}
	done, _ := chat(t, base, "How many days does the new policy say?", "manuals")
	if !strings.Contains(done.Answer, "fourteen") {
		t.Fatalf("answer from the re-created knowledge base: %q", done.Answer)
	}
}
