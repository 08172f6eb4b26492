package ingest

import (
	"context"
	"fmt"
	"path"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Sidecars on the S3 drop folder (docs/metadata-filters.md): "inbox/<kb>/<path>.metadata.json" beside
// an object is that object's metadata, with the same precedence as on disk (over S3 user metadata and
// tags, front matter, file properties and derived fields). A sidecar is never a document: its own put
// or removal re-ingests the file it describes (its hash is part of the file's content hash, so an
// unchanged file with a changed sidecar is re-indexed), and is ignored while that file is absent (the
// file's own put reads the sidecar when it arrives).

// sidecarEvent handles a put or removal of main's sidecar: the file's newest recorded version is
// ingested again, under an execution named after the sidecar's event (a replayed event starts nothing).
func (t *Trigger) sidecarEvent(ctx context.Context, ch SourceChange, main string) (TriggerResult, error) {
	kbName, rel, ok := SplitInboxKey(main)
	if !ok {
		return TriggerResult{Action: ActionIgnored}, nil
	}
	if ch.Sequencer == "" || ch.Bucket == "" {
		return TriggerResult{}, rag.Errorf("ingest.Trigger", rag.KindInvalid, "event for %s lacks bucket or sequencer", ch.Key)
	}
	res := TriggerResult{KB: kbName}
	kb, err := t.Service.KB(ctx, t.Tenant, kbName, false)
	if rag.Is(err, rag.KindNotFound) {
		res.Action = ActionIgnored // no file was ever dropped into it
		return res, nil
	}
	if err != nil {
		return res, err
	}
	uri := SourceURI(kbName, rel)
	ev, err := t.Events.GetSourceEvent(ctx, t.Tenant, uri)
	if rag.Is(err, rag.KindNotFound) || err == nil && ev.Event != sqldb.SourcePut {
		res.Action = ActionIgnored // the file is absent: a sidecar alone is not a document
		return res, nil
	}
	if err != nil {
		return res, err
	}
	doc, err := t.document(ctx, kb, uri, rel)
	if err != nil {
		return res, err
	}
	res.DocumentID = doc.ID
	// the job is the file's recorded version (so Prepare still drops it once a newer put of the file is
	// recorded), named after the sidecar's event
	name := t.Name("ingest", t.Tenant, ch.Bucket, ch.Key, ch.VersionID, ch.Sequencer)
	job := Job{Doc: Doc{Tenant: t.Tenant, KBID: kb.ID, DocumentID: doc.ID}, SourceURI: uri, Bucket: ch.Bucket, Key: main,
		VersionID: ev.VersionID, Sequencer: ev.Sequencer, FileName: path.Base(rel), Holder: name}
	return t.start(ctx, name, job, res)
}

// s3Sidecar reads the current version of a drop-folder object's sidecar: nil without one. A sidecar
// that cannot be used (too large, not the Bedrock format) is reported in problem and the file is
// ingested without it, as on disk: a bad sidecar loses its metadata, nothing else. Objects outside
// the drop folder (presigned uploads, connector staging) have none and cost no request.
func (w *Workflow) s3Sidecar(ctx context.Context, j Job) (m rag.Metadata, problem string, err error) {
	if _, _, ok := SplitInboxKey(j.Key); !ok {
		return nil, "", nil
	}
	key := j.Key + SidecarSuffix
	data, err := w.Objects.GetObject(ctx, j.Bucket, key, "", MaxSidecarBytes)
	switch {
	case rag.Is(err, rag.KindNotFound):
		return nil, "", nil
	case rag.Is(err, rag.KindTerminal):
		return nil, fmt.Sprintf("%s is larger than %d bytes: ignored", path.Base(key), MaxSidecarBytes), nil
	case err != nil:
		return nil, "", fmt.Errorf("read s3://%s/%s: %w", j.Bucket, key, err)
	}
	m, perr := ParseSidecar(data)
	if perr != nil {
		return nil, fmt.Sprintf("%s: %v: ignored", path.Base(key), perr), nil
	}
	return m, "", nil
}
