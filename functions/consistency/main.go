// Command consistency is the scheduled consistency check: an EventBridge Scheduler schedule invokes it
// (template.yaml: ConsistencySchedule), it runs shared/reconcile's Checker once under the SQL lease
// "docmind-reconcile" (a run that finds the lease held returns lock_held and changes nothing), returns a
// JSON report, logs it, and writes one CloudWatch embedded-metric-format record per drift class (metrics
// Drift, Repaired, Remaining with dimension Class) plus a run total, on which the template's drift alarm is
// set.
//
// The drop folder is checked too (inbox.go): an inbox/<kb>/... object older than ten minutes that has no
// document (its S3 notification was lost, RELIABILITY ING-08) is reported under sources_without_document
// and repaired by starting the ingestion state machine (DOCMIND_INGEST_STATE_MACHINE_ARN) through the
// ingest function's own trigger; without that variable the drop folder is not checked.
// DOCMIND_RECONCILE_INBOX_MIN_AGE (default 10m) is the age below which an object's event may still be queued.
//
// The scheduled input is {"repair": true}; {"repair": false} only reports, {"kb": "<name>"} scopes a
// direct invocation to one knowledge base. An EventBridge rule's "Scheduled Event" works too (its fields
// are ignored and repair defaults to on).
package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/bucket"
	"github.com/docmind/docmind/functions/internal/emf"
	"github.com/docmind/docmind/functions/internal/ingestenv"
	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/reconcile"
)

var version = "dev"

func main() { lambdamain.Run("consistency", version, run) }

func run(ctx context.Context, log *slog.Logger) error {
	chk, err := wire(ctx, os.Getenv, log)
	if err != nil {
		return err
	}
	h := &handler{check: chk, log: log, metrics: os.Stdout, now: time.Now}
	lambda.Start(awsrt.Handler(h.handle))
	return nil
}

// Event is the schedule's input (or a direct invocation's).
type Event struct {
	KB     string `json:"kb,omitempty"`
	Repair *bool  `json:"repair,omitempty"` // default true
}

// Result is the function's JSON report: every class present in drift, repaired and remaining.
type Result struct {
	Drift      map[string]int `json:"drift"`
	Repaired   map[string]int `json:"repaired"`
	Remaining  map[string]int `json:"remaining"`
	LockHeld   bool           `json:"lock_held"`
	Documents  int            `json:"documents"`
	Vectors    int            `json:"vectors"`
	Blobs      int            `json:"blobs"`
	DurationMS int64          `json:"duration_ms"`
	Errors     []string       `json:"errors,omitempty"`
}

// checker is the one method the handler calls (reconcile.Checker).
type checker interface {
	Run(ctx context.Context, o reconcile.Options) (reconcile.Report, error)
}

type handler struct {
	check   checker
	log     *slog.Logger
	metrics io.Writer // stdout: Lambda ships it to CloudWatch Logs, which extracts the EMF records
	now     func() time.Time
}

// reserve is kept from the invocation's deadline so the report and metrics are written even when the
// run is cut short (the repairs still pending are picked up by the next run).
const reserve = 10 * time.Second

func (h *handler) handle(ctx context.Context, ev Event) (Result, error) {
	repair := ev.Repair == nil || *ev.Repair
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) > 2*reserve {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-reserve))
		defer cancel()
	}
	rep, err := h.check.Run(ctx, reconcile.Options{KB: ev.KB, Repair: repair})
	if err != nil {
		h.log.Error("consistency check failed", "version", version, "error_type", awsrt.ErrorType(err), "err", err)
		return Result{}, err
	}
	res := Result{Drift: rep.Drift, Repaired: rep.Repaired, Remaining: rep.Remaining, LockHeld: rep.LockHeld, Documents: rep.Documents,
		Vectors: rep.Vectors, Blobs: rep.Blobs, DurationMS: rep.Duration.Milliseconds(), Errors: rep.Errors}
	if rep.LockHeld {
		h.log.Info("consistency check skipped", "reason", "lock_held")
	} else {
		h.log.Info("consistency check", "version", version, "repair", repair, "drift", rep.Drift, "repaired", rep.Repaired,
			"remaining", rep.Remaining, "documents", rep.Documents, "duration_ms", res.DurationMS, "errors", len(rep.Errors))
	}
	if err := writeMetrics(h.metrics, h.now(), rep); err != nil {
		h.log.Warn("metrics not written", "err", err)
	}
	return res, nil
}

// emfClass is one drift class's record.
type emfClass struct {
	AWS       emf.Meta `json:"_aws"`
	Class     string   `json:"Class"`
	Drift     int      `json:"Drift"`
	Repaired  int      `json:"Repaired"`
	Remaining int      `json:"Remaining"`
}

// emfRun is the run's totals (no dimension): the drift alarm watches RemainingTotal.
type emfRun struct {
	AWS            emf.Meta `json:"_aws"`
	DriftTotal     int      `json:"DriftTotal"`
	RemainingTotal int      `json:"RemainingTotal"`
	LockHeld       int      `json:"LockHeld"`
	Documents      int      `json:"DocumentsChecked"`
	DurationMS     int64    `json:"DurationMs"`
}

// Namespace is the CloudWatch namespace of the metrics.
const Namespace = "Docmind/Consistency"

// writeMetrics writes one EMF record per class and one for the run, one JSON object per line. A run that
// found the lease held reports LockHeld 1 and no class records (it measured nothing).
func writeMetrics(w io.Writer, now time.Time, rep reconcile.Report) error {
	enc := json.NewEncoder(w)
	run := emfRun{AWS: emf.New(now, Namespace, nil, emf.Count("DriftTotal"), emf.Count("RemainingTotal"), emf.Count("LockHeld"), emf.Count("DocumentsChecked"),
		emf.Metric{Name: "DurationMs", Unit: "Milliseconds"}),
		Documents: rep.Documents, DurationMS: rep.Duration.Milliseconds()}
	if rep.LockHeld {
		run.LockHeld = 1
		return enc.Encode(run)
	}
	for _, cl := range reconcile.Classes {
		rec := emfClass{AWS: emf.New(now, Namespace, []string{"Class"}, emf.Count("Drift"), emf.Count("Repaired"), emf.Count("Remaining")),
			Class: cl, Drift: rep.Drift[cl], Repaired: rep.Repaired[cl], Remaining: rep.Remaining[cl]}
		if err := enc.Encode(rec); err != nil {
			return err
		}
		run.DriftTotal += rep.Drift[cl]
		run.RemainingTotal += rep.Remaining[cl]
	}
	return enc.Encode(run)
}

// wire opens the cloud stores and builds the checker; nothing is opened per invocation.
func wire(ctx context.Context, getenv func(string) string, log *slog.Logger) (*reconcile.Checker, error) {
	cfg, err := awsenv.Load(ctx, getenv)
	if err != nil {
		return nil, err
	}
	c, err := bucket.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	emb, err := ingestenv.Embedder(cfg)
	if err != nil {
		return nil, err
	}
	// a stuck document is retried here, in process, with the same stages the state machine runs
	svc := ingestenv.Service(cfg, ingestenv.Stages(cfg, ingestenv.Stores{Records: c.SQL, Vectors: c.Vectors, Blobs: c.Blobs}, emb, log))
	chk := &reconcile.Checker{Records: c.SQL, Vectors: c.Vectors, Blobs: c.Blobs, Embedder: emb, Documents: svc, Lease: c.SQL, Log: log,
		StuckAfter: durationEnv(getenv, "DOCMIND_RECONCILE_STUCK_AFTER", time.Hour)}
	if getenv("DOCMIND_TENANT") != "" {
		// a stack serves one tenant and its role reaches only that tenant's prefixes; without the
		// variable every tenant owning data in SQL is checked
		chk.Tenants = []string{cfg.Tenant}
	}
	arn := getenv("DOCMIND_INGEST_STATE_MACHINE_ARN")
	if arn == "" {
		log.Warn("drop folder not checked: DOCMIND_INGEST_STATE_MACHINE_ARN is not set")
		return chk, nil
	}
	ac, err := awsenv.AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	s3c := awsenv.S3Client(ac, cfg)
	// the drop folder is the configured tenant's, as in the ingest function: its objects are repaired
	// through the same trigger, so an object without a document starts an execution of the state machine
	trig := &ingest.Trigger{Service: svc, Events: c.SQL, Leases: c.SQL, Tenant: cfg.Tenant, Name: repairName,
		Executions: awsenv.Executions{Client: sfn.NewFromConfig(ac), StateMachineARN: arn}}
	chk.Inbox = &s3Inbox{Bucket: cfg.Blob.Bucket, Tenant: cfg.Tenant, Objects: c.Blobs, Heads: s3c, Events: c.SQL, Trigger: trig, Log: log,
		MinAge:  durationEnv(getenv, "DOCMIND_RECONCILE_INBOX_MIN_AGE", 10*time.Minute),
		Restore: &sourceRestore{Service: svc, Records: c.SQL, Leases: c.SQL, Objects: awsenv.Objects{S3: s3c}, MaxBytes: cfg.Server.MaxBodyBytes}}
	return chk, nil
}

func durationEnv(getenv func(string) string, name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(getenv(name)); err == nil && d > 0 {
		return d
	}
	return def
}
