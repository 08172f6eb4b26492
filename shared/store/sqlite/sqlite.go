// Package sqlite is the embedded relational store: SQLite through modernc.org/sqlite (pure Go, no cgo),
// in WAL mode with a busy timeout, behind the shared sqldb queries.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Dialect classifies SQLite errors.
var Dialect = sqldb.Dialect{
	Name: "sqlite",
	IsDuplicate: func(err error) bool {
		var se *sqlite.Error
		return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
	},
	IsUnavailable: func(err error) bool {
		var se *sqlite.Error
		if !errors.As(err, &se) {
			return false
		}
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
			return true
		}
		return false
	},
}

// DefaultMmapMB is how much of the database file Open reads through a memory map: all of it up to
// MaxMmapMB, SQLite's own ceiling on 64-bit builds.
const DefaultMmapMB = MaxMmapMB

// MaxMmapMB is SQLite's largest memory map (SQLITE_MAX_MMAP_SIZE, 0x7fff0000 bytes); a larger mmap_size
// is silently lowered to it.
const MaxMmapMB = 2047

// Options tune Open.
type Options struct {
	// MmapMB is how many MiB of the database file the retrieval chain's look-ups (sqldb.DB.ReadSQL) read
	// through a memory map (PRAGMA mmap_size) instead of read calls copying each page into a
	// connection's page cache. The chain reads about 70 scattered chunk rows a question: with read
	// calls, a fresh process (a restart, a Lambda's cold start) paid a system call and a newly allocated
	// cache page for each, per connection, until every connection's 64 MiB cache was full
	// (docs/bench/million.md, fourth pass). The look-ups get a pool of their own, read-only, whose
	// connections map the file; the map's pages are the operating system's page cache, shared by them
	// all. Writers keep read calls, so a write never meets a mapped page, and a question never waits for
	// a connection that ingestion holds. 0: no map and no second pool; at most MaxMmapMB. A read error
	// on a mapped page is a SIGBUS instead of an error: keep the file on a local disk.
	MmapMB int
}

// Open opens (creating if needed) the database file at path with the default options. ":memory:" gives
// a private in-memory database (one connection, so every query sees the same data). The caller runs
// Migrate.
func Open(path string, now func() time.Time) (*sqldb.DB, error) {
	return OpenWith(path, now, Options{MmapMB: DefaultMmapMB})
}

// busyTimeout is how long a connection of either pool waits for a lock; poolConns is each file pool's size.
const (
	busyTimeout = "busy_timeout(10000)"
	poolConns   = 8
)

// OpenWith is Open with options.
func OpenWith(path string, now func() time.Time, o Options) (*sqldb.DB, error) {
	const op = "sqlite.Open"
	if o.MmapMB < 0 || o.MmapMB > MaxMmapMB {
		return nil, rag.Errorf(op, rag.KindInvalid, "memory map of %d MiB: want 0 to %d", o.MmapMB, MaxMmapMB)
	}
	dsn := "file::memory:"
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, rag.E(op, rag.KindUnavailable, err)
		}
		dsn = "file:" + (&url.URL{Path: path}).EscapedPath()
	}
	q := url.Values{}
	q.Add("_pragma", busyTimeout)
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "cache_size(-65536)") // 64 MiB of page cache per connection: chunk reads stay in memory
	if path != ":memory:" {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	q.Set("_txlock", "immediate") // writers queue on the busy timeout instead of failing on upgrade
	db, err := sql.Open("sqlite", dsn+"?"+q.Encode())
	if err != nil {
		return nil, rag.E(op, rag.KindInternal, err)
	}
	if path == ":memory:" {
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(poolConns)
	}
	s := sqldb.New(db, Dialect, now)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Ping(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if path == ":memory:" || o.MmapMB == 0 {
		return s, nil
	}
	// the look-ups' pool, opened once the file is in WAL mode (its readers never write, so never set it)
	r := url.Values{}
	r.Add("_pragma", busyTimeout)
	r.Add("_pragma", "query_only(1)")
	r.Add("_pragma", fmt.Sprintf("mmap_size(%d)", int64(o.MmapMB)<<20))
	rdb, err := sql.Open("sqlite", dsn+"?"+r.Encode())
	if err != nil {
		db.Close()
		return nil, rag.E(op, rag.KindInternal, err)
	}
	rdb.SetMaxOpenConns(poolConns)
	if err := rdb.PingContext(ctx); err != nil {
		rdb.Close()
		db.Close()
		return nil, fmt.Errorf("open sqlite %s for reading: %w", path, err)
	}
	s.SetReadPool(rdb)
	return s, nil
}
