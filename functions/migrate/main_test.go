package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/deptest"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
)

func TestDeps(t *testing.T) { deptest.Check(t, "github.com/docmind/docmind/functions/migrate") }

// cloudFormation records what the custom resource answered.
func cloudFormation(t *testing.T) (*httptest.Server, *[]cfnResponse) {
	var got []cfnResponse
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			t.Errorf("method %s, want PUT", r.Method)
		}
		b, _ := io.ReadAll(r.Body)
		var resp cfnResponse
		json.Unmarshal(b, &resp)
		got = append(got, resp)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestCustomResourceMigratesAgainstMySQL(t *testing.T) {
	dsn := mysqltest.Database(t)
	env := map[string]string{"DOCMIND_SQL_DRIVER": "mysql", "DOCMIND_VECTOR_DRIVER": "milvus", "DOCMIND_BLOB_DRIVER": "s3",
		"DOCMIND_KV_DRIVER": "redis", "DOCMIND_SQL_DSN": dsn, "DOCMIND_MILVUS_ADDR": "127.0.0.1:1", "DOCMIND_S3_BUCKET": "b", "DOCMIND_REDIS_ADDR": "127.0.0.1:1"}
	srv, got := cloudFormation(t)
	m := &migrator{log: slog.New(slog.DiscardHandler), getenv: func(k string) string { return env[k] }, http: srv.Client(), migrate: migrateDB}
	ev := Event{RequestType: "Create", ResponseURL: srv.URL, StackID: "arn:stack", RequestID: "r1", LogicalResourceID: "Schema"}
	res, err := m.handle(context.Background(), ev)
	if err != nil || len(res.Applied) == 0 || res.Version < 6 {
		t.Fatalf("first run: %+v, %v", res, err)
	}
	ev.RequestType, ev.PhysicalResourceID = "Update", "docmind-schema"
	res, err = m.handle(context.Background(), ev)
	if err != nil || len(res.Applied) != 0 {
		t.Fatalf("second run applied %v, %v; want nothing", res.Applied, err)
	}
	if len(*got) != 2 || (*got)[0].Status != "SUCCESS" || (*got)[0].RequestID != "r1" || (*got)[1].Data.Version != res.Version {
		t.Fatalf("CloudFormation got %+v", *got)
	}
}

func TestCustomResourceReportsFailureAndDeleteKeepsData(t *testing.T) {
	srv, got := cloudFormation(t)
	calls := 0
	m := &migrator{log: slog.New(slog.DiscardHandler), getenv: func(string) string { return "" }, http: srv.Client(),
		migrate: func(context.Context, func(string) string) (Result, error) {
			calls++
			return Result{}, rag.Errorf("t", rag.KindUnavailable, "aurora is resuming")
		}}
	if _, err := m.handle(context.Background(), Event{RequestType: "Create", ResponseURL: srv.URL}); err != nil {
		t.Fatalf("handler error %v: a custom resource must answer FAILED, not leave CloudFormation waiting", err)
	}
	if len(*got) != 1 || (*got)[0].Status != "FAILED" || !strings.Contains((*got)[0].Reason, "aurora is resuming") {
		t.Fatalf("CloudFormation got %+v", *got)
	}
	m.handle(context.Background(), Event{RequestType: "Delete", ResponseURL: srv.URL, PhysicalResourceID: "docmind-schema"})
	if calls != 1 || (*got)[1].Status != "SUCCESS" || (*got)[1].PhysicalResourceID != "docmind-schema" {
		t.Fatalf("delete: calls %d, response %+v", calls, (*got)[1])
	}
	// a direct invocation returns the error with its kind
	_, err := m.handle(context.Background(), Event{})
	if err == nil || !strings.Contains(err.Error(), "Unavailable") {
		t.Fatalf("direct invocation: %v", err)
	}
}
