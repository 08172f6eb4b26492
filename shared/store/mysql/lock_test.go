package mysql

import (
	"context"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/go-sql-driver/mysql"
)

// openReadCommitted opens a fresh database whose connections run at READ COMMITTED, where InnoDB's
// INSERT ... SELECT reads a snapshot unless asked to lock (MySQL 8 names the variable
// transaction_isolation, MariaDB before 11.1 tx_isolation).
func openReadCommitted(t *testing.T) *sqldb.DB {
	t.Helper()
	cfg, err := mysql.ParseDSN(mysqltest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"transaction_isolation", "tx_isolation"} {
		cfg.Params = map[string]string{name: "'READ-COMMITTED'"}
		db, err := Open(context.Background(), cfg.FormatDSN(), Options{}, nil)
		if err != nil {
			continue
		}
		t.Cleanup(func() { db.Close() })
		var level string
		if err := db.SQL().QueryRowContext(context.Background(), `SELECT @@`+name).Scan(&level); err != nil || level != "READ-COMMITTED" {
			t.Fatalf("isolation %q, %v", level, err)
		}
		if _, err := db.Migrate(context.Background()); err != nil {
			t.Fatal(err)
		}
		return db
	}
	t.Fatalf("cannot open at READ COMMITTED: %v", err)
	return nil
}

// A document is not created in a knowledge base whose delete is in flight, whatever the isolation level:
// CreateDocument's INSERT ... SELECT reads the knowledge_bases row with a shared lock (LOCK IN SHARE
// MODE), so it waits for the delete and then finds no row. Without the lock, at READ COMMITTED it read the
// row from a snapshot and left a document of a deleted knowledge base. Real server only: go-mysql-server
// has no row locks.
func TestCreateDocumentWaitsForADeleteOfItsKnowledgeBase(t *testing.T) {
	if !mysqltest.Real() {
		t.Skip("needs a real MySQL/MariaDB server in " + mysqltest.EnvDSN + " (row locks)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := openReadCommitted(t)
	kb := rag.KnowledgeBase{Tenant: "t1", Name: "handbook"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	// DeleteKB's statements, held uncommitted
	del, err := db.SQL().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer del.Rollback()
	for _, q := range []string{`DELETE FROM knowledge_bases WHERE tenant_id = ? AND id = ?`, `DELETE FROM documents WHERE tenant_id = ? AND kb_id = ?`} {
		if _, err := del.ExecContext(ctx, q, kb.Tenant, kb.ID); err != nil {
			t.Fatal(err)
		}
	}
	created := make(chan error, 1)
	go func() {
		created <- db.CreateDocument(ctx, &rag.Document{Tenant: "t1", KBID: kb.ID, SourceURI: "upload/a.md"})
	}()
	// wait until the insert blocks on the delete's row lock, or returns without having waited
	for waiting := false; !waiting; {
		select {
		case err := <-created:
			t.Fatalf("CreateDocument returned %v while the delete of its knowledge base was uncommitted; want it to wait for the delete", err)
		case <-ctx.Done():
			t.Fatal("the insert neither waited for the delete's lock nor returned")
		case <-time.After(20 * time.Millisecond):
		}
		var n int
		if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		waiting = n > 0
	}
	if err := del.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-created; !rag.Is(err, rag.KindNotFound) {
		t.Errorf("CreateDocument after the delete committed = %v, want NotFound", err)
	}
	var docs int
	if err := db.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM documents WHERE kb_id = ?`, kb.ID).Scan(&docs); err != nil {
		t.Fatal(err)
	}
	if docs != 0 {
		t.Errorf("%d documents of the deleted knowledge base, want none", docs)
	}
}
