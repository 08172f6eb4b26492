package connector_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/connectortest"
	"github.com/docmind/docmind/shared/rag"
)

// feed is a source with a change feed: each sync returns the changes recorded since the cursor.
type feed struct {
	items   map[string]string // id -> markdown body
	log     []connector.Change
	fail    map[string]error // id -> error returned by Fetch
	listErr error
	cursors []string // cursors Changes was called with
	fetched []string
}

func (f *feed) Validate(context.Context) error { return nil }

func (f *feed) Changes(_ context.Context, cursor string, _ []connector.Known) (connector.Listing, error) {
	f.cursors = append(f.cursors, cursor)
	if f.listErr != nil {
		return connector.Listing{Calls: 1}, f.listErr
	}
	from := 0
	fmt.Sscan(cursor, &from)
	return connector.Listing{Changes: f.log[from:], Cursor: fmt.Sprint(len(f.log)), Calls: 1}, nil
}

func (f *feed) Fetch(_ context.Context, id string, _ connector.Known) (connector.Item, error) {
	f.fetched = append(f.fetched, id)
	if err := f.fail[id]; err != nil {
		return connector.Item{Calls: 1}, err
	}
	body, ok := f.items[id]
	if !ok {
		return connector.Item{Calls: 1}, fmt.Errorf("%w: %s", connector.ErrGone, id)
	}
	name := id + ".md"
	if strings.HasPrefix(id, "bin") {
		name = id + ".exe"
	}
	return connector.Item{ID: id, Name: name, Data: []byte(body), Version: fmt.Sprint(len(body)), Calls: 1,
		Metadata: map[string]string{"author": "ann"}, Permissions: []string{"group:eng"}}, nil
}

func (f *feed) put(id, body string) {
	f.items[id] = body
	f.log = append(f.log, connector.Change{ID: id})
}

func (f *feed) remove(id string) {
	delete(f.items, id)
	f.log = append(f.log, connector.Change{ID: id, Deleted: true})
}

func TestChangeFeedSync(t *testing.T) {
	env := connectortest.New(t, "wiki", "confluence", `{}`)
	f := &feed{items: map[string]string{}, fail: map[string]error{}}
	f.put("alpha", "---\nyear: 2024\n---\n# Alpha\n\nThe alpha page describes the heron protocol.")
	f.put("beta", "# Beta\n\nThe beta page lists the walrus rules.")
	f.put("gamma", "# Gamma\n\nThe gamma page explains the osprey budget.")
	f.put("binary", "not a document")
	f.fail["gamma"] = rag.E("fake", rag.KindUnavailable, errors.New("HTTP 503"))

	res := env.Sync(t, f, connector.Options{})
	if res.Added != 2 || len(res.Failed) != 2 || res.Status != rag.SyncPartial || res.Cursor != "4" || res.Calls != 5 {
		t.Fatalf("first sync = %+v; want 2 added, gamma and binary failed, partial, cursor 4, 5 calls", res)
	}
	st, _ := env.DB.GetConnector(context.Background(), connectortest.Tenant, "wiki")
	if st.Cursor != "4" || st.Status != rag.SyncPartial || st.SucceededAt.IsZero() {
		t.Fatalf("state after a partial sync = %+v; want cursor 4, partial", st.SyncState)
	}
	alpha := env.Docs(t)["alpha.md"]
	if m, _ := env.DB.GetDocumentMetadata(context.Background(), connectortest.Tenant, alpha.ID); m["year"] != 2024.0 || m["author"] != "ann" ||
		m["source"] != "confluence" || m["connector"] != "wiki" {
		t.Errorf("alpha's document metadata = %v; want its front matter joined by the connector's fields", m)
	}
	items, _ := env.DB.ListConnectorItems(context.Background(), connectortest.Tenant, "wiki")
	meta := ""
	for _, it := range items {
		if it.ID == "alpha" {
			meta = it.Metadata
		}
	}
	if !strings.Contains(meta, `"author":"ann"`) || !strings.Contains(meta, "group:eng") {
		t.Errorf("alpha's recorded metadata = %q; want author and permissions", meta)
	}

	// the feed has moved past gamma; the engine fetches it again because it failed
	delete(f.fail, "gamma")
	f.put("beta", "# Beta\n\nThe beta page lists the walrus rules, revised: walruses rest on Sundays.")
	f.remove("alpha")
	f.remove("never-seen") // deleted before any sync saw it: nothing to report
	f.fetched = nil
	res = env.Sync(t, f, connector.Options{})
	if res.Added != 1 || res.Updated != 1 || res.Deleted != 1 || len(res.Failed) != 1 || res.Cursor != "7" {
		t.Fatalf("second sync = %+v; want gamma added, beta updated, alpha deleted, binary still failing, cursor 7", res)
	}
	if f.cursors[1] != "4" {
		t.Errorf("second sync listed from cursor %q; want 4", f.cursors[1])
	}
	docs := env.Docs(t)
	if _, ok := docs["alpha.md"]; ok {
		t.Error("alpha is still indexed after its deletion")
	}
	if !strings.Contains(env.Text(t, docs["beta.md"].ID), "Sundays") || docs["gamma.md"].Status != rag.StatusReady {
		t.Errorf("documents after the second sync = %v; want beta revised and gamma ready", docs)
	}

	// an item the source reports gone on fetch is deleted like a deletion in the feed
	delete(f.items, "gamma")
	f.log = append(f.log, connector.Change{ID: "gamma"})
	res = env.Sync(t, f, connector.Options{})
	if res.Deleted != 1 {
		t.Fatalf("sync with gamma gone at fetch = %+v; want 1 deleted", res)
	}

	// a listing that fails ends the sync failed, with the cursor kept
	f.listErr = rag.E("fake", rag.KindPermission, errors.New("HTTP 401"))
	_, err := env.Engine.Sync(context.Background(), connectortest.Tenant, "wiki", f, connector.Options{})
	if !rag.Is(err, rag.KindPermission) {
		t.Fatalf("sync with a refused listing = %v; want Permission", err)
	}
	st, _ = env.DB.GetConnector(context.Background(), connectortest.Tenant, "wiki")
	if st.Status != rag.SyncFailed || st.Cursor != "8" || !strings.Contains(st.LastError, "401") {
		t.Fatalf("state after a failed listing = %+v; want failed, cursor 8 kept", st.SyncState)
	}
}

func TestSyncHoldsTheConnectorLease(t *testing.T) {
	env := connectortest.New(t, "wiki", "confluence", `{}`)
	ok, err := env.DB.AcquireLease(context.Background(), connector.LeaseName(connectortest.Tenant, "wiki"), "other", time.Hour)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	f := &feed{items: map[string]string{}}
	_, err = env.Engine.Sync(context.Background(), connectortest.Tenant, "wiki", f, connector.Options{})
	if !rag.Is(err, rag.KindConflict) || len(f.cursors) != 0 {
		t.Fatalf("sync while another holds the lease = %v (listed %d times); want Conflict before listing", err, len(f.cursors))
	}
	if _, err := env.Engine.Sync(context.Background(), connectortest.Tenant, "nope", f, connector.Options{}); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("sync of a missing connector = %v; want NotFound", err)
	}
}

func TestRemoveDeletesDocuments(t *testing.T) {
	env := connectortest.New(t, "wiki", "confluence", `{}`)
	f := &feed{items: map[string]string{}}
	f.put("alpha", "# Alpha\n\nheron")
	f.put("beta", "# Beta\n\nwalrus")
	env.Sync(t, f, connector.Options{})
	n, err := env.Engine.Remove(context.Background(), connectortest.Tenant, "wiki")
	if err != nil || n != 2 {
		t.Fatalf("Remove = %d, %v; want 2 documents deleted", n, err)
	}
	if docs := env.Docs(t); len(docs) != 0 {
		t.Fatalf("documents after Remove: %v", docs)
	}
	if _, err := env.DB.GetConnector(context.Background(), connectortest.Tenant, "wiki"); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("connector after Remove: %v; want NotFound", err)
	}
}
