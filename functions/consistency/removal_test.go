package main

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
)

// The review of issue #11, finding 5, on AWS: a drop-folder object removed with its ObjectRemoved
// notification never delivered ("dropped"), or delivered while an ingestion held the source's lease
// until the message was dead-lettered ("dead-lettered"), left its document ready and searchable and
// nothing noticed. The scheduled run reports documents_without_source and its repair deletes the
// document, starting no execution; the next run is clean.
func TestRemovalNeverAppliedIsRepaired(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deliverDLQ bool
	}{{"dropped", false}, {"dead-lettered", true}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newAWSWorld(t)
			ctx := context.Background()
			ids := map[string]string{}
			for _, k := range []string{"inbox/manuals/kept.md", "inbox/manuals/gone.md"} {
				w.put(t, k, doc(k))
				rep, err := w.svc.Ingest(ctx, testTenant, ingest.Source{KBName: "manuals", URI: k, Name: k, Data: []byte(doc(k))})
				if err != nil {
					t.Fatal(err)
				}
				ids[k] = rep.DocumentID
			}
			gone := "inbox/manuals/gone.md"
			if _, err := w.s3.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: aws.String(testBucket), Key: aws.String(gone)}); err != nil {
				t.Fatal(err)
			}
			if tc.deliverDLQ {
				d, _ := w.db.GetDocument(ctx, testTenant, ids[gone])
				lease := ingest.LeaseName(testTenant, d.KBID, gone)
				if ok, err := w.db.AcquireLease(ctx, lease, "an-execution", time.Hour); err != nil || !ok {
					t.Fatalf("hold the lease: %v, %v", ok, err)
				}
				_, err := w.trigger.Handle(ctx, ingest.SourceChange{Removed: true, Bucket: testBucket, Key: gone, Sequencer: "0055AED6DCD90281E5"})
				if !rag.Is(err, rag.KindConflict) {
					t.Fatalf("the removal under a held lease: %v; want Conflict (SQS redelivers, then dead-letters)", err)
				}
				w.db.ReleaseLease(ctx, lease, "an-execution") // the execution ended; the message is in the dead-letter queue
			}
			chk := w.checker()
			chk.Now = func() time.Time { return time.Now().Add(time.Hour) } // past the grace of the document and its blobs
			res, err := chk.Run(ctx, reconcile.Options{Repair: true})
			if err != nil {
				t.Fatal(err)
			}
			if res.Drift[reconcile.DocumentsWithoutSource] != 1 || res.Repaired[reconcile.DocumentsWithoutSource] != 1 || !res.Clean() {
				t.Fatalf("report drift %v repaired %v errors %v; want documents_without_source found and repaired", res.Drift, res.Repaired, res.Errors)
			}
			if _, err := w.db.GetDocument(ctx, testTenant, ids[gone]); !rag.Is(err, rag.KindNotFound) {
				t.Fatalf("the removed object's document: %v; want it deleted", err)
			}
			if d, err := w.db.GetDocument(ctx, testTenant, ids["inbox/manuals/kept.md"]); err != nil || d.Status != rag.StatusReady {
				t.Fatalf("the document whose object is there: %+v, %v", d, err)
			}
			if n, _ := w.vec.Count(ctx, rag.Filter{Tenant: testTenant, DocumentIDs: []string{ids[gone]}}); n != 0 {
				t.Fatalf("%d vectors of the deleted document still searchable", n)
			}
			if jobs := w.sfn.jobs(t); len(jobs) != 0 {
				t.Fatalf("the repair started executions: %+v", jobs)
			}
			again, err := chk.Run(ctx, reconcile.Options{})
			if err != nil || !again.Clean() {
				t.Fatalf("second run: %v, %v", again.Drift, err)
			}
		})
	}
}
