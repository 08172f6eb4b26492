// Command migrate applies docmind's SQL migrations (infra/sql/mysql) to Aurora. Migrations are a deploy
// step, never a cold start: the template invokes this function from a CloudFormation custom resource on
// every stack create and update (`make migrate` runs the same code from a workstation). It answers the
// custom resource's pre-signed ResponseURL itself, so a failed migration fails the deployment instead of
// leaving CloudFormation waiting for an hour. Invoked directly (not by CloudFormation) it returns the
// applied versions.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/docmind/docmind/functions/internal/awsenv"
	"github.com/docmind/docmind/functions/internal/lambdamain"
	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/store/mysql"
)

var version = "dev"

func main() { lambdamain.Run("migrate", version, run) }

// run starts the runtime at once: migrating is the invocation's work, never the cold start's.
func run(_ context.Context, log *slog.Logger) error {
	m := &migrator{log: log, getenv: os.Getenv, http: &http.Client{Timeout: 30 * time.Second}, migrate: migrateDB}
	lambda.Start(m.handle)
	return nil
}

// Event is a CloudFormation custom resource request; every field is empty on a direct invocation.
type Event struct {
	RequestType        string `json:"RequestType"` // Create, Update or Delete
	ResponseURL        string `json:"ResponseURL"`
	StackID            string `json:"StackId"`
	RequestID          string `json:"RequestId"`
	LogicalResourceID  string `json:"LogicalResourceId"`
	PhysicalResourceID string `json:"PhysicalResourceId"`
}

// Result is the function's answer (and the custom resource's Data).
type Result struct {
	Applied []int `json:"applied"`
	Version int   `json:"version"`
}

type cfnResponse struct {
	Status             string `json:"Status"`
	Reason             string `json:"Reason,omitempty"`
	PhysicalResourceID string `json:"PhysicalResourceId"`
	StackID            string `json:"StackId"`
	RequestID          string `json:"RequestId"`
	LogicalResourceID  string `json:"LogicalResourceId"`
	Data               Result `json:"Data"`
}

type migrator struct {
	log     *slog.Logger
	getenv  func(string) string
	http    *http.Client
	migrate func(ctx context.Context, getenv func(string) string) (Result, error)
}

// handle migrates (except on a stack's Delete, which keeps the data) and answers CloudFormation.
func (m *migrator) handle(ctx context.Context, ev Event) (Result, error) {
	var res Result
	var err error
	if ev.RequestType != "Delete" {
		res, err = m.migrate(ctx, m.getenv)
	}
	if err != nil {
		m.log.Error("migration failed", "version", version, "error_type", awsrt.ErrorType(err), "err", err)
	} else {
		m.log.Info("migrated", "version", version, "applied", res.Applied, "schema_version", res.Version)
	}
	if ev.ResponseURL == "" {
		return res, awsrt.LambdaError(err)
	}
	resp := cfnResponse{Status: "SUCCESS", PhysicalResourceID: "docmind-schema", StackID: ev.StackID, RequestID: ev.RequestID,
		LogicalResourceID: ev.LogicalResourceID, Data: res}
	if ev.PhysicalResourceID != "" {
		resp.PhysicalResourceID = ev.PhysicalResourceID
	}
	if err != nil {
		resp.Status, resp.Reason = "FAILED", truncate(err.Error(), 1000)
	}
	if perr := m.respond(ctx, ev.ResponseURL, resp); perr != nil {
		return res, awsrt.LambdaError(perr)
	}
	return res, nil
}

// respond PUTs the result to the pre-signed URL (an empty Content-Type, as the signature expects).
func (m *migrator) respond(ctx context.Context, url string, r cfnResponse) error {
	b, _ := json.Marshal(r)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "")
	resp, err := m.http.Do(req)
	if err != nil {
		return fmt.Errorf("answer CloudFormation: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("answer CloudFormation: HTTP %d", resp.StatusCode)
	}
	return nil
}

// migrateDB opens the database (one connection) and applies what is missing.
func migrateDB(ctx context.Context, getenv func(string) string) (Result, error) {
	cfg, err := awsenv.Load(ctx, getenv)
	if err != nil {
		return Result{}, err
	}
	db, err := mysql.Open(ctx, cfg.SQL.DSN, mysql.Options{MaxOpenConns: 1, ConnMaxLifetime: cfg.SQL.ConnMaxLifetime}, nil)
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return Result{Applied: applied}, err
	}
	v, err := db.SchemaVersion(ctx)
	return Result{Applied: applied, Version: v}, err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
