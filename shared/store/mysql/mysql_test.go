package mysql

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/storetest"
)

func TestConformance(t *testing.T) {
	if mysqltest.Real() {
		t.Log("against the real server in " + mysqltest.EnvDSN)
	} else {
		t.Log("against the in-process MySQL-protocol server; set " + mysqltest.EnvDSN + " for a real one")
	}
	// go-mysql-server's memory engine does not isolate concurrent transactions (racing inserts of one
	// unique key all "succeed" and one row survives), so against it the pool has one connection; the real
	// server in .ci/run runs the same suite with a full pool.
	opts := Options{}
	if !mysqltest.Real() {
		opts.MaxOpenConns = 1
	}
	storetest.TestRelational(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(context.Background(), mysqltest.Database(t), opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceIdentity(t *testing.T) {
	opts := Options{}
	if !mysqltest.Real() {
		opts.MaxOpenConns = 1
	}
	storetest.TestIdentity(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(context.Background(), mysqltest.Database(t), opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

// TestConformanceLeases runs the lease contract. Against a real server (DOCMIND_TEST_MYSQL_DSN, MariaDB
// in .ci/run) the pool is full, so contenders really race on separate connections. The in-process
// go-mysql-server does not hold the primary key between concurrent INSERTs (two contenders for a new
// lease both inserted it, once in a CI run), so there the pool is one connection: the contract is
// checked, the engine's race is MariaDB's to show.
func TestConformanceLeases(t *testing.T) {
	opts := Options{}
	if !mysqltest.Real() {
		opts.MaxOpenConns = 1
	}
	storetest.TestLeases(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(context.Background(), mysqltest.Database(t), opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceSourceEvents(t *testing.T) {
	storetest.TestSourceEvents(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(context.Background(), mysqltest.Database(t), Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConfigForcesLambdaSettings(t *testing.T) {
	cfg, err := Config("u:p@tcp(db.example:3306)/docmind?timeout=60s&parseTime=false", Options{})
	if err != nil {
		t.Fatal(err)
	}
	dsn := cfg.FormatDSN()
	for _, want := range []string{"parseTime=true", "rejectReadOnly=true", "charset=utf8mb4", "timeout=5s", "collation=utf8mb4_bin"} {
		if !strings.Contains(dsn, want) {
			t.Errorf("DSN %q lacks %s", dsn, want)
		}
	}
	if _, err := Config("not a dsn", Options{}); rag.KindOf(err) != rag.KindInvalid {
		t.Fatalf("bad DSN: %v, want Invalid", err)
	}
}

// A server that is gone gives Unavailable within the context deadline, never a hang.
func TestUnavailable(t *testing.T) {
	// a listener that accepts and never answers: the worst case, a black-holed server
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	start := time.Now()
	_, err = Open(context.Background(), "u:p@tcp("+l.Addr().String()+")/x", Options{DialTimeout: time.Second}, nil)
	if rag.KindOf(err) != rag.KindUnavailable {
		t.Fatalf("Open against a silent server: %v, want Unavailable", err)
	}
	if time.Since(start) > 20*time.Second {
		t.Fatalf("Open took %v", time.Since(start))
	}

	// a working store whose server then stops (every connection cut, new ones refused) or goes silent
	for _, mode := range []string{"stopped", "blackholed"} {
		t.Run(mode, func(t *testing.T) {
			dsn := mysqltest.Database(t)
			cfg, _ := Config(dsn, Options{})
			proxy := storetest.NewProxy(t, cfg.Addr)
			cfg.Addr = proxy.Addr()
			db, err := Open(context.Background(), cfg.FormatDSN(), Options{DialTimeout: time.Second}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if _, err := db.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			if mode == "stopped" {
				proxy.Stop()
			} else {
				proxy.Blackhole()
			}
			storetest.TestUnavailable(t, map[string]func(context.Context) error{
				"Ping":      db.Ping,
				"ListKBs":   func(ctx context.Context) error { _, err := db.ListKBs(ctx, "t1"); return err },
				"GetKB":     func(ctx context.Context) error { _, err := db.GetKB(ctx, "t1", "kb1"); return err },
				"CreateKB":  func(ctx context.Context) error { return db.CreateKB(ctx, &rag.KnowledgeBase{Tenant: "t1", Name: "x"}) },
				"DeleteDoc": func(ctx context.Context) error { return db.DeleteDocument(ctx, "t1", "d1") },
			})
		})
	}
}

func TestConformanceConnectors(t *testing.T) {
	storetest.TestConnectors(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(context.Background(), mysqltest.Database(t), Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceDocumentMetadata(t *testing.T) {
	storetest.TestDocumentMetadata(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(context.Background(), mysqltest.Database(t), Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceMetadataIndexShared(t *testing.T) {
	storetest.TestMetadataIndexShared(t, func(t *testing.T) (*sqldb.DB, *sqldb.DB) {
		dsn := mysqltest.Database(t)
		var dbs [2]*sqldb.DB
		for i := range dbs {
			db, err := Open(context.Background(), dsn, Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			dbs[i] = db
		}
		return dbs[0], dbs[1]
	})
}

func TestConformanceMetadataEdits(t *testing.T) {
	storetest.TestMetadataEdits(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(context.Background(), mysqltest.Database(t), Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceAccessReads(t *testing.T) {
	storetest.TestAccessReads(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(context.Background(), mysqltest.Database(t), Options{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return db
	})
}
