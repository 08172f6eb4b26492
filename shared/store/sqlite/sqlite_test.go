package sqlite

import (
	"path/filepath"
	"testing"

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
