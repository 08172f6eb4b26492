package ingest

import (
	"context"
	"testing"
)

// taggedBucket is the fake drop bucket with user metadata and tags per object version, as
// awsenv.Objects reads them (HeadObject, GetObjectTagging).
type taggedBucket struct {
	*fakeBucket
	user, tags map[string]map[string]string // by version
}

func (b *taggedBucket) ObjectMetadata(_ context.Context, bucket, key, version string) (map[string]string, map[string]string, error) {
	return b.user[version], b.tags[version], nil
}

// On the AWS path an S3 object's user metadata and tags become the document's metadata, over its
// front matter, through the state machine's payloads; new tags on the same bytes re-ingest it.
func TestWorkflowObjectMetadataAndTags(t *testing.T) {
	w := newWorkflowEnv(t)
	b := &taggedBucket{fakeBucket: w.bucket, user: map[string]map[string]string{}, tags: map[string]map[string]string{}}
	w.wf.Objects = b
	body := []byte("---\nteam: front matter\nyear: 2025\n---\n# Guide\n\nAt most 5 users per seat.\n")
	ch := w.bucket.put("inbox/manuals/guide.md", body)
	b.user[ch.VersionID] = map[string]string{"team": "platform", "Bad Key": "x"}
	b.tags[ch.VersionID] = map[string]string{"Confidential": "yes"}
	w.handle(t, ch)
	if _, err := w.sfn.last(); err != nil {
		t.Fatal(err)
	}
	d, ok := w.doc(t, "manuals", "inbox/manuals/guide.md")
	if !ok {
		t.Fatal("not ingested")
	}
	m, _ := w.sql.GetDocumentMetadata(context.Background(), tenant, d.ID)
	if m["team"] != "platform" || m["confidential"] != "yes" || m["year"] != 2025.0 || m["source"] != "file" || m["bad key"] != nil {
		t.Fatalf("metadata = %v; want the object's metadata and tags over the front matter", m)
	}
	ch2 := w.bucket.put("inbox/manuals/guide.md", body)
	b.tags[ch2.VersionID] = map[string]string{"confidential": "no"}
	w.sql.ReleaseLease(context.Background(), LeaseName(tenant, d.KBID, d.SourceURI), "")
	w.handle(t, ch2)
	tr, err := w.sfn.last()
	if err != nil || tr.States[len(tr.States)-1] == "Skipped" {
		t.Fatalf("same bytes, new tags: %v, states %v; want re-ingested", err, tr.States)
	}
	m, _ = w.sql.GetDocumentMetadata(context.Background(), tenant, d.ID)
	if m["confidential"] != "no" || m["team"] != "front matter" {
		t.Fatalf("metadata after new tags = %v; want confidential no, team from the front matter again", m)
	}
}
