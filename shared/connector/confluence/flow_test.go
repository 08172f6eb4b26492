package confluence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/aslrun"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/connector"
	"github.com/docmind/docmind/shared/connector/syncflow"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/memblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// blobObjects serves the ingestion workflow's S3 reads from the in-memory bucket.
type blobObjects struct{ b *memblob.Store }

func (o blobObjects) GetObject(ctx context.Context, bucket, key, _ string, limit int64) ([]byte, error) {
	rc, _, err := o.b.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func machine(t *testing.T, file string) *aslrun.Machine {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m, err := aslrun.Parse(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return m
}

// TestPagedSyncThroughStateMachine runs the AWS sync state machine (connector-sync.asl.json, with the
// ingestion state machine under it) with aslrun over the real steps, SQLite and an in-memory bucket,
// and the real Confluence connector against its fake, with a listing budget so small that each
// invocation makes one listing request: the listing is carried from invocation to invocation by the
// connector's own token through the state machine's JSON.
func TestPagedSyncThroughStateMachine(t *testing.T) {
	ctx := context.Background()
	const tenant, bucket = "t1", "docs-bucket"
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	blobs := memblob.New()
	st := &ingest.Stages{Records: db, Vectors: memvec.New(64), Blobs: blobs, Staging: blobs, Embedder: embed.NewOffline(64),
		Chunking: chunk.Options{ChildChars: 120, Overlap: 20, ParentChars: 400}}
	svc := &ingest.Service{Runner: &ingest.Runner{Stages: st}, InboxTenant: tenant, Leases: db}
	wf := &ingest.Workflow{Stages: st, Leases: db, Events: db, Objects: blobObjects{blobs}, BatchSize: 4}
	f := newFake(t)
	for i := range 7 {
		f.put(fmt.Sprint(1001+i), fmt.Sprintf("Runbook %d", i), fmt.Sprintf("<p>Runbook %d keeps the ledger for %d years.</p>", i, i+3))
	}
	f.advance(10 * time.Minute)
	flow := &syncflow.Flow{Tenant: tenant, Bucket: bucket, Blobs: blobs, Store: db, Docs: svc, Name: awsrt.ExecutionName,
		Engine:     &connector.Engine{Indexer: svc, Documents: db, State: db, Leases: db, Metadata: db},
		ListBudget: time.Nanosecond, // spent at once: one listing request per invocation
		Source: func(context.Context, rag.Connector) (connector.Source, error) {
			c, _ := newConnector(t, f, goodCreds)
			return c, nil
		}}
	var mu sync.Mutex
	started := map[string]bool{}
	noSleep := func(context.Context, time.Duration) error { return nil }
	ingestRunner := &aslrun.Runner{Machine: machine(t, "../../../infra/statemachines/ingest.asl.json"), ErrorName: awsrt.ErrorType, Sleep: noSleep,
		Invoke: func(ctx context.Context, _ string, in json.RawMessage) (json.RawMessage, error) {
			var env ingest.Envelope
			if err := json.Unmarshal(in, &env); err != nil {
				return nil, err
			}
			out, err := wf.Dispatch(ctx, env)
			if err != nil {
				return nil, err
			}
			return json.Marshal(out)
		}}
	syncRunner := &aslrun.Runner{Machine: machine(t, "../../../infra/statemachines/connector-sync.asl.json"), ErrorName: awsrt.ErrorType, Sleep: noSleep,
		Invoke: func(ctx context.Context, res string, in json.RawMessage) (json.RawMessage, error) {
			switch res {
			case "${ConnectorFunctionArn}":
				var env syncflow.Envelope
				if err := json.Unmarshal(in, &env); err != nil {
					return nil, err
				}
				out, err := flow.Dispatch(ctx, env)
				if err != nil {
					return nil, err
				}
				return json.Marshal(out)
			case "arn:aws:states:::s3:getObject":
				var p struct{ Bucket, Key string }
				json.Unmarshal(in, &p)
				b, err := blobObjects{blobs}.GetObject(ctx, p.Bucket, p.Key, "", 0)
				if err != nil || p.Bucket != bucket {
					return nil, &aslrun.Error{Name: "S3.NoSuchKey", Cause: p.Bucket + "/" + p.Key}
				}
				return b, nil
			case "arn:aws:states:::states:startExecution.sync:2":
				var p struct {
					Name  string
					Input json.RawMessage
				}
				if err := json.Unmarshal(in, &p); err != nil {
					return nil, err
				}
				mu.Lock()
				dup := started[p.Name]
				started[p.Name] = true
				mu.Unlock()
				if dup {
					return nil, &aslrun.Error{Name: "StepFunctions.ExecutionAlreadyExistsException", Cause: p.Name}
				}
				out, _, err := ingestRunner.Run(ctx, p.Name, p.Input)
				if err != nil {
					var ae *aslrun.Error
					errors.As(err, &ae)
					cause, _ := json.Marshal(map[string]string{"Error": ae.Name, "Cause": ae.Cause, "Status": "FAILED"})
					return nil, &aslrun.Error{Name: "States.TaskFailed", Cause: string(cause)}
				}
				return json.Marshal(map[string]any{"Output": json.RawMessage(out), "Status": "SUCCEEDED", "Name": p.Name})
			}
			return nil, &aslrun.Error{Name: "States.Runtime", Cause: "unknown resource " + res}
		}}
	kb := rag.KnowledgeBase{Tenant: tenant, Name: "wiki"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateConnector(ctx, &rag.Connector{Tenant: tenant, Name: "eng-wiki", KBID: kb.ID, Type: "confluence", Config: "{}"}); err != nil {
		t.Fatal(err)
	}
	runs := 0
	syncNow := func() (connector.Result, int) {
		t.Helper()
		runs++
		out, tr, err := syncRunner.Run(ctx, fmt.Sprintf("sched-eng-wiki-%d", runs), json.RawMessage(`{"connector":"eng-wiki"}`))
		if err != nil {
			t.Fatalf("sync %d: %v (states %v)", runs, err, tr.States)
		}
		lists := 0
		for _, s := range tr.States {
			if s == "ListMore" {
				lists++
			}
		}
		var res struct {
			Result connector.Result `json:"result"`
		}
		json.Unmarshal(out, &res)
		return res.Result, lists
	}
	indexed := func(id string) bool {
		d, err := db.GetDocumentBySource(ctx, tenant, kb.ID, connector.SourceURI("eng-wiki", id))
		return err == nil && d.Status == rag.StatusReady
	}

	// the first sync: 7 pages in 4 requests of 2, one per invocation (Begin and three List steps)
	f.limit = 1 // and a 429 on the way
	res, lists := syncNow()
	if lists != 3 || res.Added != 7 || res.Listed != 7 || len(res.Failed) != 0 || res.Status != rag.SyncOK || f.limit != 0 {
		t.Fatalf("first sync = %+v over %d List steps; want 7 added over Begin and 3 List steps", res, lists)
	}
	for i := range 7 {
		if id := fmt.Sprint(1001 + i); !indexed(id) {
			t.Errorf("page %s is not indexed", id)
		}
	}
	c, _ := db.GetConnector(ctx, tenant, "eng-wiki")
	if c.Cursor != "2026/05/01 09:08" {
		t.Fatalf("cursor after the first sync = %q; want the listing's start minus 2 minutes", c.Cursor)
	}

	// edit two pages, add one, trash one, purge one: the search (3 results, 2 requests) and the check
	// of the 7 known pages (1 request) take three invocations
	f.advance(10 * time.Minute)
	f.put("1001", "Runbook 0", "<p>Runbook 0 now keeps the lantern ledger.</p>")
	f.put("1002", "Runbook 1", "<p>Runbook 1 moved to the heron archive.</p>")
	f.put("1010", "Incidents", "<p>Every incident gets a kestrel number.</p>")
	f.pages["1003"].status = "trashed"
	delete(f.pages, "1004")
	f.advance(10 * time.Minute)
	res, lists = syncNow()
	if lists != 2 || res.Added != 1 || res.Updated != 2 || res.Deleted != 2 || len(res.Failed) != 0 || res.Status != rag.SyncOK {
		t.Fatalf("incremental sync = %+v over %d List steps; want 1 added, 2 updated, 2 deleted over Begin and 2 List steps", res, lists)
	}
	for id, want := range map[string]bool{"1001": true, "1002": true, "1010": true, "1003": false, "1004": false, "1005": true} {
		if indexed(id) != want {
			t.Errorf("page %s indexed = %v; want %v", id, !want, want)
		}
	}
	if c, _ := db.GetConnector(ctx, tenant, "eng-wiki"); c.Cursor != "2026/05/01 09:28" {
		t.Fatalf("cursor after the incremental sync = %q; want its listing's start minus 2 minutes", c.Cursor)
	}
}
