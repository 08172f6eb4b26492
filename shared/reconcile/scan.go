package reconcile

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
)

// tenantState is what one scan of a tenant read.
type tenantState struct {
	tenant  string
	kbs     map[string]rag.KnowledgeBase // by id
	docs    map[string]rag.Document      // by id
	byURI   map[string]bool              // "<kb name>\x00<source uri>" of every document
	vectors map[string][]store.VectorRef // by document id
	sources map[string][]store.BlobInfo  // by document id
	staging map[string][]store.BlobInfo  // by document id
	young   map[string]bool              // documents with a blob younger than Grace
	// deleting are the knowledge bases whose delete did not finish: everything of theirs goes with them
	deleting []rag.KnowledgeBase
	skipKB   map[string]bool
	// present are the drop folder's files (source uris), listed after the documents; nil when the
	// Inbox cannot list them or does not feed the tenant
	present map[string]bool
	// chunkOrphans are chunk rows whose document row is gone, per document id
	chunkOrphans []store.ChunkOrphans
}

// scan reads the tenant's stores and returns its findings, counted (n) but not yet added to rep.
func (c *Checker) scan(ctx context.Context, tenant, kbName string, start time.Time, rep *Report) ([]Finding, error) {
	st, err := c.read(ctx, tenant, kbName, start)
	if err != nil {
		return nil, err
	}
	rep.Documents += len(st.docs)
	for _, v := range st.vectors {
		rep.Vectors += len(v)
	}
	for _, b := range st.sources {
		rep.Blobs += len(b)
	}
	for _, b := range st.staging {
		rep.Blobs += len(b)
	}
	stuckBefore := start.Add(-orDefault(c.StuckAfter, time.Hour))
	graceBefore := start.Add(-orDefault(c.Grace, 10*time.Minute))
	var out []Finding
	for _, kb := range st.deleting {
		out = append(out, Finding{Class: DeletedKnowledgeBases, Tenant: tenant, KBID: kb.ID, IDs: []string{kb.Name}, n: 1})
	}
	ids := make([]string, 0, len(st.docs))
	for id := range st.docs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		d := st.docs[id]
		f := Finding{Tenant: tenant, KBID: d.KBID, DocumentID: d.ID, Status: d.Status, seen: d.UpdatedAt}
		switch d.Status {
		case rag.StatusDeleted:
			f.Class, f.n = DeletedDocuments, 1
			out = append(out, f)
			continue
		case rag.StatusPending, rag.StatusProcessing:
			if d.UpdatedAt.Before(stuckBefore) {
				f.Class, f.n = StuckDocuments, 1
				out = append(out, f)
			}
			continue // in flight: its vectors, rows and blobs are moving
		}
		rows, err := c.Records.ListChunks(ctx, tenant, d.ID)
		if err != nil {
			return nil, fmt.Errorf("list chunks of %s: %w", d.ID, err)
		}
		want := map[string]bool{}
		for _, r := range rows {
			if r.Level == rag.LevelChild && r.VectorID != "" {
				want[r.VectorID] = true
			}
		}
		have := map[string]bool{}
		var extra []string
		for _, v := range st.vectors[d.ID] {
			have[v.ID] = true
			if !want[v.ID] {
				extra = append(extra, v.ID)
			}
		}
		if len(extra) > 0 {
			out = append(out, Finding{Class: VectorsWithoutRows, Tenant: tenant, KBID: d.KBID, DocumentID: d.ID, Status: d.Status, IDs: extra, n: len(extra), seen: d.UpdatedAt})
		}
		if d.Status != rag.StatusReady {
			continue
		}
		var missing []string
		for id := range want {
			if !have[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			f.Class, f.IDs, f.n = ReadyWithoutVectors, missing, 1
			out = append(out, f)
		}
		switch {
		case len(st.sources[d.ID]) == 0 && !st.young[d.ID]:
			f.Class, f.IDs, f.n = DocumentsWithoutSource, nil, 1
			out = append(out, f)
		case st.lostInboxFile(d, graceBefore):
			f.Class, f.IDs, f.n = DocumentsWithoutSource, []string{d.SourceURI}, 1
			out = append(out, f)
		default:
			stale, err := c.staleVersion(ctx, st, d, graceBefore)
			if err != nil {
				return nil, err
			}
			if stale {
				f.Class, f.IDs, f.n = StaleVersions, []string{d.SourceURI}, 1
				out = append(out, f)
			}
		}
	}
	for _, o := range st.chunkOrphans {
		out = append(out, Finding{Class: DeletedDocuments, Tenant: tenant, KBID: o.KBID, DocumentID: o.DocumentID, Status: StatusChunkOrphans, n: 1})
	}
	out = append(out, c.orphans(st)...)
	if c.Inbox != nil {
		files, err := c.Inbox.Files(ctx, tenant)
		if err != nil {
			return nil, fmt.Errorf("list the drop folder: %w", err)
		}
		deleting := map[string]bool{}
		for _, kb := range st.deleting {
			deleting[kb.Name] = true
		}
		for _, uri := range files {
			kb, ok := inboxKB(uri)
			// a knowledge base being deleted has its folder moved aside by the delete's repair: ingesting
			// its files would re-create it, and after the move they are gone (the repair failed with "no
			// such file" and the run exited 1: review of #11)
			if !ok || (kbName != "" && kb != kbName) || st.byURI[kb+"\x00"+uri] || deleting[kb] {
				continue
			}
			out = append(out, Finding{Class: SourcesWithoutDocument, Tenant: tenant, Status: StatusInbox, IDs: []string{uri}, n: 1})
		}
	}
	return out, nil
}

// lostInboxFile reports whether d is a drop-folder document whose file is gone from the drop folder: its
// removal was missed (an S3 event never delivered or dead-lettered, a file removed while no watcher ran).
// A document changed within Grace is left to the event path, which may be applying that very removal.
func (st tenantState) lostInboxFile(d rag.Document, graceBefore time.Time) bool {
	if st.present == nil || !d.UpdatedAt.Before(graceBefore) {
		return false
	}
	kb, ok := inboxKB(d.SourceURI)
	return ok && kb == st.kbs[d.KBID].Name && !st.present[d.SourceURI]
}

// staleVersion reports whether d is a drop-folder document of its knowledge base's folder, unchanged
// for Grace, with a newer put recorded for its source than the one it was prepared at (SourceVersions).
// Within Grace the version's own execution or follow-up may still be on its way.
func (c *Checker) staleVersion(ctx context.Context, st tenantState, d rag.Document, graceBefore time.Time) (bool, error) {
	sv, ok := c.Inbox.(SourceVersions)
	if !ok || d.SourceSequencer == "" || !d.UpdatedAt.Before(graceBefore) {
		return false, nil
	}
	if kb, ok := inboxKB(d.SourceURI); !ok || kb != st.kbs[d.KBID].Name {
		return false, nil
	}
	newer, err := sv.NewerPut(ctx, st.tenant, d.SourceURI, d.SourceSequencer)
	if err != nil {
		return false, fmt.Errorf("newest event of %s: %w", d.SourceURI, err)
	}
	return newer, nil
}

// orphans are the vectors and blobs whose document does not exist.
func (c *Checker) orphans(st tenantState) []Finding {
	var out []Finding
	for _, doc := range sortedKeys(st.vectors) {
		if _, ok := st.docs[doc]; ok {
			continue
		}
		vs := st.vectors[doc]
		ids := make([]string, len(vs))
		for i, v := range vs {
			ids[i] = v.ID
		}
		out = append(out, Finding{Class: VectorsWithoutRows, Tenant: st.tenant, KBID: vs[0].KBID, DocumentID: doc, IDs: ids, n: len(ids)})
	}
	for _, doc := range sortedKeys(st.sources) {
		if _, ok := st.docs[doc]; ok {
			continue
		}
		out = append(out, blobFinding(SourcesWithoutDocument, st.tenant, doc, st.sources[doc]))
	}
	for _, doc := range sortedKeys(st.staging) {
		if d, ok := st.docs[doc]; ok && (d.Status == rag.StatusPending || d.Status == rag.StatusProcessing || d.Status == rag.StatusDeleted) {
			continue // in flight (or stuck, retried), or removed with its document
		}
		out = append(out, blobFinding(StagingLeftovers, st.tenant, doc, st.staging[doc]))
	}
	return out
}

func blobFinding(class, tenant, doc string, objs []store.BlobInfo) Finding {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return Finding{Class: class, Tenant: tenant, DocumentID: doc, IDs: keys, n: len(keys)}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// inboxKB returns the knowledge-base name of an "inbox/<kb>/<path>" uri.
func inboxKB(uri string) (string, bool) {
	rest, ok := strings.CutPrefix(uri, "inbox/")
	if !ok {
		return "", false
	}
	kb, _, ok := strings.Cut(rest, "/")
	return kb, ok && kb != "" && !strings.HasPrefix(kb, ".")
}

// read lists what the check compares, vectors before documents (see the package comment).
func (c *Checker) read(ctx context.Context, tenant, kbName string, start time.Time) (tenantState, error) {
	st := tenantState{tenant: tenant, kbs: map[string]rag.KnowledgeBase{}, docs: map[string]rag.Document{}, byURI: map[string]bool{},
		vectors: map[string][]store.VectorRef{}, sources: map[string][]store.BlobInfo{}, staging: map[string][]store.BlobInfo{}, young: map[string]bool{},
		skipKB: map[string]bool{}}
	kbs, err := c.Records.ListKBs(ctx, tenant)
	if err != nil {
		return st, fmt.Errorf("list knowledge bases: %w", err)
	}
	if kd, ok := c.Records.(KBDeletions); ok {
		dels, err := kd.ListKBDeletions(ctx, tenant)
		if err != nil {
			return st, fmt.Errorf("list knowledge-base deletes: %w", err)
		}
		for _, kb := range dels {
			if kbName == "" || kb.Name == kbName {
				st.deleting = append(st.deleting, kb)
				st.skipKB[kb.ID] = true
			}
		}
		if kbName != "" && len(st.deleting) > 0 {
			return st, nil // the knowledge base is being deleted: finishing that is all there is to do
		}
	}
	vf := rag.Filter{Tenant: tenant}
	sourcePrefix := "sources/" + tenant + "/"
	if kbName != "" {
		i := slices.IndexFunc(kbs, func(k rag.KnowledgeBase) bool { return k.Name == kbName })
		if i < 0 {
			return st, rag.Errorf("reconcile.Run", rag.KindInvalid, "no knowledge base named %q", kbName)
		}
		kbs = kbs[i : i+1]
		vf.KBIDs = []string{kbs[0].ID}
		sourcePrefix += kbs[0].ID + "/"
	}
	vecs, err := c.Vectors.ListVectors(ctx, vf)
	if err != nil {
		return st, fmt.Errorf("list vectors: %w", err)
	}
	for _, v := range vecs {
		if !st.skipKB[v.KBID] {
			st.vectors[v.DocumentID] = append(st.vectors[v.DocumentID], v)
		}
	}
	skipDoc := map[string]bool{}
	for _, kb := range kbs {
		if st.skipKB[kb.ID] {
			docs, err := c.Records.ListDocuments(ctx, tenant, kb.ID, "")
			if err != nil {
				return st, fmt.Errorf("list documents of %s: %w", kb.Name, err)
			}
			for _, d := range docs {
				skipDoc[d.ID] = true
			}
			continue
		}
		st.kbs[kb.ID] = kb
		docs, err := c.Records.ListDocuments(ctx, tenant, kb.ID, "")
		if err != nil {
			return st, fmt.Errorf("list documents of %s: %w", kb.Name, err)
		}
		for _, d := range docs {
			st.docs[d.ID] = d
			st.byURI[kb.Name+"\x00"+d.SourceURI] = true
		}
	}
	if err := c.readOrphanChunks(ctx, &st, kbName, kbs); err != nil {
		return st, err
	}
	if err := c.readPresent(ctx, &st); err != nil {
		return st, err
	}
	young := start.Add(-orDefault(c.Grace, 10*time.Minute))
	group := func(prefix string, into map[string][]store.BlobInfo) error {
		objs, err := c.Blobs.List(ctx, prefix)
		if err != nil {
			return err
		}
		for _, o := range objs {
			// sources/<tenant>/<kb>/<doc>/... or staging/<tenant>/<doc>/...
			parts := strings.Split(strings.TrimPrefix(o.Key, "sources/"+tenant+"/"), "/")
			if strings.HasPrefix(o.Key, "staging/") {
				parts = append([]string{""}, strings.Split(strings.TrimPrefix(o.Key, "staging/"+tenant+"/"), "/")...)
			}
			if len(parts) < 3 {
				continue
			}
			doc := parts[1]
			if st.skipKB[parts[0]] || skipDoc[doc] {
				continue
			}
			if o.ModTime.After(young) {
				st.young[doc] = true
				continue // possibly written by an ingestion that started after the document listing
			}
			if kbName != "" && strings.HasPrefix(o.Key, "staging/") {
				if _, ok := st.docs[doc]; !ok {
					continue // a knowledge-base scoped run cannot tell whose staging this is
				}
			}
			into[doc] = append(into[doc], o)
		}
		return nil
	}
	if err := group(sourcePrefix, st.sources); err != nil {
		return st, fmt.Errorf("list sources: %w", err)
	}
	if err := group("staging/"+tenant+"/", st.staging); err != nil {
		return st, fmt.Errorf("list staging: %w", err)
	}
	return st, nil
}

// readOrphanChunks lists the chunk rows whose document row is gone, in the knowledge bases checked.
func (c *Checker) readOrphanChunks(ctx context.Context, st *tenantState, kbName string, kbs []rag.KnowledgeBase) error {
	co, ok := c.Records.(ChunkOrphanRecords)
	if !ok {
		return nil
	}
	all, err := co.ListChunkOrphans(ctx, st.tenant)
	if err != nil {
		return fmt.Errorf("list chunk rows without a document: %w", err)
	}
	scope := map[string]bool{}
	for _, kb := range kbs {
		scope[kb.ID] = true
	}
	for _, o := range all {
		// a knowledge base being deleted is skipped: finishing its delete removes them
		if (kbName == "" || scope[o.KBID]) && !st.skipKB[o.KBID] {
			st.chunkOrphans = append(st.chunkOrphans, o)
		}
	}
	return nil
}

// readPresent lists every file of the drop folder, after the documents (a document listed whose file is
// missing from this later listing had its file removed).
func (c *Checker) readPresent(ctx context.Context, st *tenantState) error {
	p, ok := c.Inbox.(InboxPresence)
	if !ok {
		return nil
	}
	uris, serves, err := p.Present(ctx, st.tenant)
	if err != nil {
		return fmt.Errorf("list the drop folder: %w", err)
	}
	if !serves {
		return nil
	}
	st.present = make(map[string]bool, len(uris))
	for _, u := range uris {
		st.present[u] = true
	}
	return nil
}
