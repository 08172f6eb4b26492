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

// TestMemoryMap: the look-ups' pool maps what Options says on every connection and refuses writes,
// writers do not map, out-of-range sizes are refused, and a mapped reader sees the rows its own store
// and another writer committed, before and after they are checkpointed into the file.
func TestMemoryMap(t *testing.T) {
	ctx := context.Background()
	mapped := func(t *testing.T, pool *sql.DB, want int64) {
		t.Helper()
		var conns []*sql.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range 3 { // held at once: three distinct connections of the pool
			c, err := pool.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			var got int64
			if err := c.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("connection %d maps %d bytes, want %d", len(conns), got, want)
			}
		}
	}
	for _, mb := range []int{0, 8, MaxMmapMB} {
		db, err := OpenWith(filepath.Join(t.TempDir(), "m.db"), nil, Options{MmapMB: mb})
		if err != nil {
			t.Fatal(err)
		}
		mapped(t, db.SQL(), 0)
		mapped(t, db.ReadSQL(), int64(mb)<<20)
		if (db.ReadSQL() == db.SQL()) != (mb == 0) {
			t.Errorf("MmapMB %d: a read pool of its own is %t", mb, db.ReadSQL() != db.SQL())
		}
		if mb > 0 {
			if _, err := db.ReadSQL().ExecContext(ctx, "CREATE TABLE x (a)"); err == nil {
				t.Errorf("MmapMB %d: the read pool wrote", mb)
			}
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
	other, err := OpenWith(path, nil, Options{MmapMB: 64}) // a second process on the same file
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := w.SQL().ExecContext(ctx, q, args...); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(r *sql.DB) (n, total int64) {
		t.Helper()
		if err := r.QueryRowContext(ctx, "SELECT count(*), coalesce(sum(v), 0) FROM t").Scan(&n, &total); err != nil {
			t.Fatal(err)
		}
		return n, total
	}
	exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER, pad TEXT)")
	pad := strings.Repeat("x", 1000) // two thousand rows of a kilobyte: hundreds of pages, most of them mapped
	for i := range 2000 {
		exec("INSERT INTO t (id, v, pad) VALUES (?, ?, ?)", i, i, pad)
	}
	for name, r := range map[string]*sql.DB{"its own store": w.ReadSQL(), "another store": other.ReadSQL()} {
		if n, total := sum(r); n != 2000 || total != 1999*2000/2 {
			t.Fatalf("%s's reader sees %d rows summing to %d from the log, want 2000 and %d", name, n, total, 1999*2000/2)
		}
	}
	exec("PRAGMA wal_checkpoint(TRUNCATE)")
	exec("UPDATE t SET v = v + 1 WHERE id % 2 = 0")
	exec("PRAGMA wal_checkpoint(TRUNCATE)")
	for name, r := range map[string]*sql.DB{"its own store": w.ReadSQL(), "another store": other.ReadSQL()} {
		if n, total := sum(r); n != 2000 || total != 1999*2000/2+1000 {
			t.Fatalf("%s's reader sees %d rows summing to %d from the mapped file, want 2000 and %d", name, n, total, 1999*2000/2+1000)
		}
	}
}
