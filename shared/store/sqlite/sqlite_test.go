package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
	"github.com/docmind/docmind/shared/store/storetest"
)

func TestConformanceFile(t *testing.T) {
	storetest.TestRelational(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(filepath.Join(t.TempDir(), "x", "docmind.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceMemory(t *testing.T) {
	storetest.TestRelational(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(":memory:", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceLeases(t *testing.T) {
	storetest.TestLeases(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceSourceEvents(t *testing.T) {
	storetest.TestSourceEvents(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceIdentity(t *testing.T) {
	storetest.TestIdentity(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestOpenUnwritableDir(t *testing.T) {
	if _, err := Open("/proc/docmind-cannot-exist/x.db", nil); err == nil {
		t.Fatal("opening under /proc succeeded")
	}
}

func TestConformanceConnectors(t *testing.T) {
	storetest.TestConnectors(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceDocumentMetadata(t *testing.T) {
	storetest.TestDocumentMetadata(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceMetadataIndexShared(t *testing.T) {
	storetest.TestMetadataIndexShared(t, func(t *testing.T) (*sqldb.DB, *sqldb.DB) {
		path := filepath.Join(t.TempDir(), "docmind.db")
		var dbs [2]*sqldb.DB
		for i := range dbs {
			db, err := Open(path, nil)
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
		db, err := Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestConformanceAccessReads(t *testing.T) {
	storetest.TestAccessReads(t, func(t *testing.T) *sqldb.DB {
		db, err := Open(filepath.Join(t.TempDir(), "docmind.db"), nil)
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

// TestConformanceFileUnmapped runs the suite with the memory map off, the read-call path.
func TestConformanceFileUnmapped(t *testing.T) {
	storetest.TestRelational(t, func(t *testing.T) *sqldb.DB {
		db, err := OpenWith(filepath.Join(t.TempDir(), "docmind.db"), nil, Options{MmapMB: 0})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

// TestMemoryMap: every pooled connection maps what Options says, out-of-range sizes are refused, and a
// reader mapping the file sees another writer's rows, before and after they are checkpointed into it.
func TestMemoryMap(t *testing.T) {
	ctx := context.Background()
	for _, mb := range []int{0, 8, MaxMmapMB} {
		db, err := OpenWith(filepath.Join(t.TempDir(), "m.db"), nil, Options{MmapMB: mb})
		if err != nil {
			t.Fatal(err)
		}
		var conns []*sql.Conn
		for range 3 { // held at once: three distinct connections of the pool
			c, err := db.SQL().Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			var got int64
			if err := c.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != int64(mb)<<20 {
				t.Errorf("MmapMB %d: connection %d maps %d bytes, want %d", mb, len(conns), got, int64(mb)<<20)
			}
		}
		for _, c := range conns {
			c.Close()
		}
		db.Close()
	}
	for _, mb := range []int{-1, MaxMmapMB + 1} {
		if _, err := OpenWith(filepath.Join(t.TempDir(), "bad.db"), nil, Options{MmapMB: mb}); rag.KindOf(err) != rag.KindInvalid {
			t.Errorf("MmapMB %d: got %v, want an invalid-input error", mb, err)
		}
	}

	path := filepath.Join(t.TempDir(), "shared.db")
	w, err := OpenWith(path, nil, Options{MmapMB: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := OpenWith(path, nil, Options{MmapMB: 64}) // a second process on the same file
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.SQL().ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	sum := func() (n, total int64) {
		t.Helper()
		if err := r.SQL().QueryRowContext(ctx, "SELECT count(*), coalesce(sum(v), 0) FROM t").Scan(&n, &total); err != nil {
			t.Fatal(err)
		}
		return n, total
	}
	exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, pad TEXT)")
	pad := strings.Repeat("x", 1000) // two thousand rows of a kilobyte: hundreds of pages, most of them mapped
	for i := range 2000 {
		exec("INSERT INTO t (id, v, pad) VALUES (?, ?, ?)", i, i, pad)
	}
	if n, total := sum(); n != 2000 || total != 1999*2000/2 {
		t.Fatalf("reader sees %d rows summing to %d from the log, want 2000 and %d", n, total, 1999*2000/2)
	}
	exec("PRAGMA wal_checkpoint(TRUNCATE)")
	exec("UPDATE t SET v = v + 1 WHERE id % 2 = 0")
	exec("PRAGMA wal_checkpoint(TRUNCATE)")
	if n, total := sum(); n != 2000 || total != 1999*2000/2+1000 {
		t.Fatalf("reader sees %d rows summing to %d from the mapped file, want 2000 and %d", n, total, 1999*2000/2+1000)
	}
}
