package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/reconcile"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
)

// TestXS01OnMySQLAndMilvus runs every drift class against the conformance suites' servers: the
// in-process MySQL-protocol server (or DOCMIND_TEST_MYSQL_DSN) and the fake Milvus gRPC server, through
// the production adapters, so the vector listing pages and the SQL queries are the ones Aurora and Zilliz
// see.
func TestXS01OnMySQLAndMilvus(t *testing.T) {
	ctx := context.Background()
	db, err := mysql.Open(ctx, mysqltest.Database(t), mysql.Options{MaxOpenConns: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	vec, err := milvus.Open(ctx, milvus.Options{Addr: fakemilvus.Start(t).Addr(), Collection: "chunks", Dim: 32, CallTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vec.Close() })
	w := newWorldOn(t, db, vec)
	dry, rep := runXS01On(t, w, 40, 1)
	t.Logf("drift %v, repaired %v", dry.Drift, rep.Repaired)
	interruptedKBDelete(t, w)
	// tenants from SQL (ListDataTenants), as the scheduled function finds them without DOCMIND_TENANT
	c := w.checker(2 * time.Hour)
	c.Tenants = nil
	all, err := c.Run(ctx, reconcile.Options{})
	if err != nil || !all.Clean() || all.Documents == 0 {
		t.Fatalf("every tenant from SQL: %+v, %v", all, err)
	}
}
