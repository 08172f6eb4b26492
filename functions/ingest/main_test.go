package main

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/docmind/docmind/functions/internal/lambdatest"
	"github.com/docmind/docmind/shared/deptest"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
)

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/ingest") }

type fakeTrigger struct {
	mu   sync.Mutex
	got  []ingest.SourceChange
	fail map[string]error
}

func (f *fakeTrigger) Handle(_ context.Context, ch ingest.SourceChange) (ingest.TriggerResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got = append(f.got, ch)
	if err := f.fail[ch.Key]; err != nil {
		return ingest.TriggerResult{}, err
	}
	return ingest.TriggerResult{Action: ingest.ActionStarted}, nil
}

func load(t *testing.T, name string) events.SQSEvent {
	return lambdatest.ReadJSON[events.SQSEvent](t, "testdata/"+name)
}

// ING-03 and the poisoned record: keys with spaces, "+", "%", CJK and emoji reach the trigger exactly as
// stored, with the object's size (a presigned upload over the limit is refused by it); the malformed message alone is reported for redelivery (and, after maxReceiveCount, the DLQ).
func TestBatchDecodesKeysAndReportsThePoisonedRecord(t *testing.T) {
	f := &fakeTrigger{}
	h := &handler{trigger: f, log: slog.New(slog.DiscardHandler)}
	resp, err := h.handle(context.Background(), load(t, "sqs-batch.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "msg-6" {
		t.Fatalf("batch item failures %+v; want only msg-6", resp.BatchItemFailures)
	}
	want := []ingest.SourceChange{
		{Bucket: "docmind-dev-documents", Key: "inbox/handbook/HR policy v2.md", VersionID: "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY", Sequencer: "0055AED6DCD90281E5", Size: 1024},
		{Bucket: "docmind-dev-documents", Key: "inbox/handbook/a+b=c.txt", VersionID: "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY", Sequencer: "0055AED6DCD90281E6", Size: 1024},
		{Bucket: "docmind-dev-documents", Key: "inbox/手册/员工 手册（2026）.md", VersionID: "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY", Sequencer: "0055AED6DCD90281E7", Size: 1024},
		{Bucket: "docmind-dev-documents", Key: "inbox/handbook/100% done 📄.md", VersionID: "3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY", Sequencer: "0055AED6DCD90281E8", Size: 1024},
		{Removed: true, Bucket: "docmind-dev-documents", Key: "inbox/handbook/HR policy v2.md", VersionID: "null", Sequencer: "0055AED6DCD90281F0"},
	}
	if len(f.got) != len(want) {
		t.Fatalf("trigger got %d events, want %d: %+v", len(f.got), len(want), f.got)
	}
	for i := range want {
		if f.got[i] != want[i] {
			t.Errorf("event %d: got %+v\nwant %+v", i, f.got[i], want[i])
		}
	}
}

// A trigger failure (another ingestion holds the source) returns only that message to the queue.
func TestBatchReportsTriggerFailures(t *testing.T) {
	f := &fakeTrigger{fail: map[string]error{"inbox/handbook/a+b=c.txt": rag.Errorf("t", rag.KindConflict, "lease held")}}
	h := &handler{trigger: f, log: slog.New(slog.DiscardHandler)}
	resp, _ := h.handle(context.Background(), load(t, "sqs-batch.json"))
	var ids []string
	for _, x := range resp.BatchItemFailures {
		ids = append(ids, x.ItemIdentifier)
	}
	if strings.Join(ids, ",") != "msg-2,msg-6" {
		t.Fatalf("failures %v, want msg-2 and msg-6", ids)
	}
}

func TestS3TestEventIsAcknowledged(t *testing.T) {
	f := &fakeTrigger{}
	h := &handler{trigger: f, log: slog.New(slog.DiscardHandler)}
	resp, _ := h.handle(context.Background(), load(t, "sqs-s3-test-event.json"))
	if len(resp.BatchItemFailures) != 0 || len(f.got) != 0 {
		t.Fatalf("s3:TestEvent: failures %+v, events %+v; want it acknowledged and ignored", resp.BatchItemFailures, f.got)
	}
}

func TestSettingsRequireTheStateMachine(t *testing.T) {
	if _, err := loadSettings(func(string) string { return "" }); err == nil {
		t.Fatal("missing DOCMIND_INGEST_STATE_MACHINE_ARN accepted")
	}
}
