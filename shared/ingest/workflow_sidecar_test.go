package ingest

import (
	"context"
	"testing"
)

// On the S3 drop folder a "<key>.metadata.json" beside an object is its metadata, over its front
// matter, as on disk; the sidecar alone is never a document, its own put or removal re-ingests the file,
// a replayed sidecar event starts nothing, and a bad sidecar loses only its metadata.
func TestWorkflowS3Sidecar(t *testing.T) {
	w := newWorkflowEnv(t)
	ctx := context.Background()
	const key = "inbox/manuals/guide.md"
	meta := func(d string) map[string]any {
		m, err := w.sql.GetDocumentMetadata(ctx, tenant, d)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	runs := func() int64 { return w.sfn.runs.Load() }

	// the sidecar arrives first: nothing to ingest yet, and no document for the sidecar itself
	sc := w.bucket.put(key+SidecarSuffix, []byte(`{"metadataAttributes":{"team":"legal","year":{"value":{"type":"NUMBER","numberValue":2024}}}}`))
	if res := w.handle(t, sc); res.Action != ActionIgnored || runs() != 0 {
		t.Fatalf("sidecar before its file: %+v, %d executions; want ignored, none", res, runs())
	}
	body := []byte("---\nteam: front matter\nowner: ops\n---\n# Guide\n\nAt most 5 users per seat.\n")
	w.handle(t, w.bucket.put(key, body))
	if tr, err := w.sfn.last(); err != nil || tr.States[len(tr.States)-1] != "Done" {
		t.Fatalf("file put: %v", err)
	}
	d, ok := w.doc(t, "manuals", key)
	if !ok {
		t.Fatal("not ingested")
	}
	if _, sidecarDoc := w.doc(t, "manuals", key+SidecarSuffix); sidecarDoc {
		t.Fatal("the sidecar became a document")
	}
	if m := meta(d.ID); m["team"] != "legal" || m["year"] != 2024.0 || m["owner"] != "ops" {
		t.Fatalf("metadata = %v; want the sidecar's team and year over the front matter, the front matter's owner", m)
	}

	// only the sidecar changes: the same bytes are indexed again with the new metadata
	sc2 := w.bucket.put(key+SidecarSuffix, []byte(`{"metadataAttributes":{"team":"finance"}}`))
	before := runs()
	if res := w.handle(t, sc2); res.Action != ActionStarted || res.DocumentID != d.ID {
		t.Fatalf("sidecar change: %+v; want an execution for %s", res, d.ID)
	}
	if tr, err := w.sfn.last(); err != nil || tr.States[len(tr.States)-1] != "Done" {
		t.Fatalf("sidecar change: %v, states %v; want re-ingested", err, tr.States)
	}
	if m := meta(d.ID); m["team"] != "finance" || m["year"] != nil {
		t.Fatalf("metadata after the sidecar changed = %v; want team finance and no year", m)
	}
	if res := w.handle(t, sc2); res.Action != ActionDuplicate || runs() != before+1 {
		t.Fatalf("replayed sidecar event: %+v; want duplicate, no new execution", res)
	}

	// a bad sidecar: the file stays indexed, its metadata falls back to the front matter
	w.handle(t, w.bucket.put(key+SidecarSuffix, []byte(`{"attributes":{}}`)))
	tr, err := w.sfn.last()
	if err != nil || tr.States[len(tr.States)-1] != "Done" {
		t.Fatalf("bad sidecar: %v, %v; want the file re-ingested without it", err, tr.States)
	}
	if d2, _ := w.doc(t, "manuals", key); d2.Status != "ready" {
		t.Fatalf("document %s after a bad sidecar; want ready", d2.Status)
	}
	if m := meta(d.ID); m["team"] != "front matter" {
		t.Fatalf("metadata with a bad sidecar = %v; want the front matter's", m)
	}

	// the sidecar is removed: back to the front matter (unchanged from the bad sidecar: skipped as such)
	w.handle(t, w.bucket.put(key+SidecarSuffix, []byte(`{"metadataAttributes":{"team":"hr"}}`)))
	if m := meta(d.ID); m["team"] != "hr" {
		t.Fatalf("metadata = %v; want team hr", m)
	}
	w.handle(t, w.bucket.remove(key+SidecarSuffix))
	if tr, err := w.sfn.last(); err != nil || tr.States[len(tr.States)-1] != "Done" {
		t.Fatalf("sidecar removed: %v, %v; want re-ingested", err, tr.States)
	}
	if m := meta(d.ID); m["team"] != "front matter" {
		t.Fatalf("metadata after the sidecar was removed = %v; want the front matter's", m)
	}

	// the file is removed: a later sidecar is ignored; a sidecar of a type docmind does not read too
	w.handle(t, w.bucket.remove(key))
	n := runs()
	if res := w.handle(t, w.bucket.put(key+SidecarSuffix, []byte(`{"metadataAttributes":{"team":"x"}}`))); res.Action != ActionIgnored {
		t.Fatalf("sidecar of a removed file: %+v; want ignored", res)
	}
	if res := w.handle(t, w.bucket.put("inbox/manuals/tool.exe"+SidecarSuffix, []byte(`{"metadataAttributes":{}}`))); res.Action != ActionIgnored || runs() != n {
		t.Fatalf("sidecar of an unsupported file: %+v; want ignored", res)
	}
}
