package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/functions/internal/lambdatest"
	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/deptest"
	"github.com/docmind/docmind/shared/embed"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/reconcile"
	"github.com/docmind/docmind/shared/store/fsblob"
	"github.com/docmind/docmind/shared/store/memvec"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/sqlite"
)

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/consistency") }

// env is a checker over the embedded stores (the binary links only the cloud ones; the check is the same).
type env struct {
	db  *sqldb.DB
	vec *memvec.Index
	svc *ingest.Service
	emb ingest.Embedder
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, err := sqlite.Open(":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	blobs, err := fsblob.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	e := &env{db: db, vec: memvec.New(32), emb: embed.NewOffline(32)}
	st := &ingest.Stages{Records: db, Vectors: e.vec, Blobs: blobs, Embedder: e.emb, Chunking: chunk.Options{ChildChars: 120, Overlap: 20, ParentChars: 400}}
	e.svc = &ingest.Service{Runner: &ingest.Runner{Stages: st}}
	ctx := context.Background()
	for _, name := range []string{"a.md", "b.md"} {
		text := "# " + name + "\n\n" + strings.Repeat("The waiting period is ninety days for "+name+". ", 12)
		if _, err := e.svc.Ingest(ctx, "t1", ingest.Source{KBName: "manuals", URI: "upload/" + name, Name: name, Data: []byte(text)}); err != nil {
			t.Fatal(err)
		}
	}
	// drift: one document loses a vector, an orphan vector appears
	refs, _ := e.vec.ListVectors(ctx, rag.Filter{Tenant: "t1"})
	e.vec.Delete(ctx, "t1", []string{refs[0].ID})
	v, _ := e.emb.Embed(ctx, []string{"orphan"})
	e.vec.Upsert(ctx, []rag.VectorRecord{{ID: "orphan1", Tenant: "t1", KBID: refs[0].KBID, DocumentID: "doc_gone", ChunkID: "c", Vector: v[0]}})
	return e
}

func (e *env) checker(emb reconcile.Embedder) *reconcile.Checker {
	if emb == nil {
		emb = e.emb
	}
	return &reconcile.Checker{Records: e.db, Vectors: e.vec, Blobs: e.svc.Runner.Stages.Blobs, Embedder: emb, Documents: e.svc, Lease: e.db,
		Now: func() time.Time { return time.Now().Add(2 * time.Hour) }}
}

func event(t *testing.T, file string) Event { return lambdatest.ReadJSON[Event](t, "testdata/"+file) }

// parseEMF parses the metric lines: records by class, and the run record.
func parseEMF(t *testing.T, out string) (map[string]emfClass, emfRun) {
	t.Helper()
	classes := map[string]emfClass{}
	var run emfRun
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var probe struct {
			Class string `json:"Class"`
		}
		line := sc.Bytes()
		if err := json.Unmarshal(line, &probe); err != nil {
			t.Fatalf("metric line is not JSON: %s", line)
		}
		if probe.Class != "" {
			var c emfClass
			json.Unmarshal(line, &c)
			if c.AWS.Timestamp == 0 || len(c.AWS.CloudWatchMetrics) != 1 || c.AWS.CloudWatchMetrics[0].Namespace != Namespace ||
				len(c.AWS.CloudWatchMetrics[0].Dimensions) != 1 || c.AWS.CloudWatchMetrics[0].Dimensions[0][0] != "Class" {
				t.Fatalf("bad EMF class record: %s", line)
			}
			classes[c.Class] = c
			continue
		}
		json.Unmarshal(line, &run)
		if len(run.AWS.CloudWatchMetrics) != 1 || run.AWS.CloudWatchMetrics[0].Namespace != Namespace {
			t.Fatalf("bad EMF run record: %s", line)
		}
	}
	return classes, run
}

func TestScheduledRunRepairsAndReports(t *testing.T) {
	for _, file := range []string{"scheduler-input.json", "eventbridge-scheduled-event.json"} {
		t.Run(file, func(t *testing.T) {
			e := newEnv(t)
			var metrics bytes.Buffer
			h := &handler{check: e.checker(nil), log: slog.New(slog.DiscardHandler), metrics: &metrics, now: time.Now}
			res, err := h.handle(context.Background(), event(t, file))
			if err != nil {
				t.Fatal(err)
			}
			if res.LockHeld || res.Drift[reconcile.ReadyWithoutVectors] != 1 || res.Drift[reconcile.VectorsWithoutRows] != 1 ||
				res.Repaired[reconcile.ReadyWithoutVectors] != 1 || res.Repaired[reconcile.VectorsWithoutRows] != 1 {
				t.Fatalf("report: %+v", res)
			}
			b, _ := json.Marshal(res)
			var back map[string]map[string]int
			json.Unmarshal(b, &back)
			for _, cl := range reconcile.Classes {
				for _, part := range []string{"drift", "repaired", "remaining"} {
					if _, ok := back[part][cl]; !ok {
						t.Fatalf("report JSON lacks %s.%s: %s", part, cl, b)
					}
				}
			}
			classes, run := parseEMF(t, metrics.String())
			if len(classes) != len(reconcile.Classes) || classes[reconcile.VectorsWithoutRows].Drift != 1 || classes[reconcile.VectorsWithoutRows].Repaired != 1 {
				t.Fatalf("EMF classes: %+v", classes)
			}
			if run.DriftTotal != 2 || run.RemainingTotal != 0 || run.LockHeld != 0 || run.Documents != 2 {
				t.Fatalf("EMF run: %+v", run)
			}
		})
	}
}

func TestReportOnly(t *testing.T) {
	e := newEnv(t)
	var metrics bytes.Buffer
	h := &handler{check: e.checker(nil), log: slog.New(slog.DiscardHandler), metrics: &metrics, now: time.Now}
	res, err := h.handle(context.Background(), event(t, "report-only.json"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Drift[reconcile.ReadyWithoutVectors] != 1 || res.Repaired[reconcile.ReadyWithoutVectors] != 0 || res.Remaining[reconcile.ReadyWithoutVectors] != 1 {
		t.Fatalf("report only: %+v", res)
	}
	if _, run := parseEMF(t, metrics.String()); run.RemainingTotal != 2 {
		t.Fatalf("the drift alarm's metric: RemainingTotal %d, want 2 (a missing vector and an orphan)", run.RemainingTotal)
	}
}

// gate holds the first run inside its lease.
type gate struct {
	ingest.Embedder
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (g *gate) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	g.once.Do(func() { close(g.entered); <-g.release })
	return g.Embedder.Embed(ctx, texts)
}

// XS-02 through the function: a second invocation during a run exits cleanly with lock_held.
func TestOverlappingInvocations(t *testing.T) {
	e := newEnv(t)
	g := &gate{Embedder: e.emb, entered: make(chan struct{}), release: make(chan struct{})}
	var m1, m2 bytes.Buffer
	first := &handler{check: e.checker(g), log: slog.New(slog.DiscardHandler), metrics: &m1, now: time.Now}
	second := &handler{check: e.checker(nil), log: slog.New(slog.DiscardHandler), metrics: &m2, now: time.Now}
	done := make(chan Result, 1)
	go func() {
		r, err := first.handle(context.Background(), Event{})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	<-g.entered
	r2, err := second.handle(context.Background(), Event{})
	if err != nil || !r2.LockHeld {
		t.Fatalf("second invocation: %+v, %v; want lock_held", r2, err)
	}
	if _, run := parseEMF(t, m2.String()); run.LockHeld != 1 {
		t.Fatalf("lock_held metric: %+v", run)
	}
	close(g.release)
	r1 := <-done
	if r1.LockHeld || r1.Repaired[reconcile.ReadyWithoutVectors] != 1 || r1.Repaired[reconcile.VectorsWithoutRows] != 1 {
		t.Fatalf("first invocation: %+v", r1)
	}
}

func TestWireRefusesEmbeddedStores(t *testing.T) {
	lambdatest.RefusesEmbeddedStores(t, func(getenv func(string) string) error {
		_, err := wire(context.Background(), getenv, slog.New(slog.DiscardHandler))
		return err
	})
}
