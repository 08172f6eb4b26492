// Package sqldb is the relational store shared by the sqlite and mysql adapters: knowledge bases,
// documents and chunks over database/sql, with versioned migrations from infra/sql. The adapters supply a
// Dialect (driver-specific error classification and locking); the queries are portable SQL with "?"
// placeholders, and every one of them filters on tenant_id.
package sqldb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	sqlschema "github.com/docmind/docmind/infra/sql"
	"github.com/docmind/docmind/shared/rag"
)

// Dialect is what differs between SQL engines.
type Dialect struct {
	Name string // "sqlite" or "mysql": selects the migrations folder
	// IsDuplicate reports a unique-constraint violation.
	IsDuplicate func(error) bool
	// IsUnavailable reports an error that means the server is unreachable, busy or read-only (a failover).
	IsUnavailable func(error) bool
	// Lock and Unlock serialise migrations across processes (nil: the engine serialises DDL itself).
	Lock   func(ctx context.Context, conn *sql.Conn) error
	Unlock func(ctx context.Context, conn *sql.Conn) error
}

// DB is the relational store.
type DB struct {
	db      *sql.DB
	dialect Dialect
	now     func() time.Time
	meta    *metaIndex
	mirror  MetadataMirror // nil: none (SetMetadataMirror)
	reads   readStmts      // prepared read statements (readQuery)
	readDB  *sql.DB        // the pool readQuery runs on (SetReadPool); nil: db
}

// New wraps an open *sql.DB. now may be nil (time.Now).
func New(db *sql.DB, d Dialect, now func() time.Time) *DB {
	if now == nil {
		now = time.Now
	}
	return &DB{db: db, dialect: d, now: now, meta: newMetaIndex(DefaultMetaIndexBytes)}
}

// SQL exposes the pool for adapters and tests.
func (s *DB) SQL() *sql.DB { return s.db }

// SetReadPool makes the hot read queries (the retrieval chain's look-ups: readQuery) run on r, a second
// pool over the same database, which Close then closes too. The sqlite adapter's is read-only and reads
// through a memory map, which speeds those look-ups; writers and the other reads keep the first pool.
// Call it before the store is used.
func (s *DB) SetReadPool(r *sql.DB) { s.readDB = r }

// ReadSQL is the pool the hot read queries run on: SetReadPool's, or SQL.
func (s *DB) ReadSQL() *sql.DB {
	if s.readDB != nil {
		return s.readDB
	}
	return s.db
}

// Dialect names the engine.
func (s *DB) Dialect() string { return s.dialect.Name }

// Close closes the pool.
func (s *DB) Close() error {
	s.closeReads()
	if s.readDB != nil {
		s.readDB.Close()
	}
	return s.db.Close()
}

// Ping checks the server within ctx.
func (s *DB) Ping(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return s.classify("sqldb.Ping", err)
	}
	return nil
}

// classify turns a driver error into a rag.Error of the right kind.
func (s *DB) classify(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sql.ErrNoRows):
		return rag.E(op, rag.KindNotFound, err)
	case s.dialect.IsDuplicate != nil && s.dialect.IsDuplicate(err):
		return rag.E(op, rag.KindConflict, err)
	case isUnavailable(err) || (s.dialect.IsUnavailable != nil && s.dialect.IsUnavailable(err)):
		return rag.E(op, rag.KindUnavailable, err)
	}
	return rag.E(op, rag.KindInternal, err)
}

func isUnavailable(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || errors.As(err, &ne)
}

// Migrate applies every migration not yet recorded in schema_migrations and returns the versions it
// applied. It is idempotent and safe to run from several processes at once.
func (s *DB) Migrate(ctx context.Context) ([]int, error) {
	const op = "sqldb.Migrate"
	migs, err := sqlschema.Migrations(s.dialect.Name)
	if err != nil {
		return nil, rag.E(op, rag.KindInternal, err)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.classify(op, err)
	}
	defer conn.Close()
	if s.dialect.Lock != nil {
		if err := s.dialect.Lock(ctx, conn); err != nil {
			return nil, s.classify(op, fmt.Errorf("take migration lock: %w", err))
		}
		defer s.dialect.Unlock(context.WithoutCancel(ctx), conn)
	}
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return nil, s.classify(op, err)
	}
	applied := map[int]bool{}
	rows, err := conn.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, s.classify(op, err)
	}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return nil, s.classify(op, err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.classify(op, err)
	}
	var done []int
	for _, m := range migs {
		if applied[m.Version] {
			continue
		}
		for i, stmt := range m.Statements {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				return done, s.classify(op, fmt.Errorf("migration %04d_%s statement %d: %w", m.Version, m.Name, i+1, err))
			}
		}
		_, err := conn.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, s.now().UnixMilli())
		if err != nil && !(s.dialect.IsDuplicate != nil && s.dialect.IsDuplicate(err)) {
			return done, s.classify(op, err)
		}
		done = append(done, m.Version)
	}
	return done, nil
}

// SchemaVersion returns the highest applied migration, 0 for an empty database.
func (s *DB) SchemaVersion(ctx context.Context) (int, error) {
	var v sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MAX(version) FROM schema_migrations`).Scan(&v)
	if err != nil {
		if strings.Contains(strings.ToLower(err.Error()), "schema_migrations") {
			return 0, nil // table does not exist yet
		}
		return 0, s.classify("sqldb.SchemaVersion", err)
	}
	return int(v.Int64), nil
}

// inTx runs fn in a transaction and commits, or rolls back on error.
func (s *DB) inTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.classify(op, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		if _, ok := err.(*rag.Error); ok {
			return err
		}
		return s.classify(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.classify(op, err)
	}
	return nil
}

func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func sourceHash(uri string) string {
	h := sha256.Sum256([]byte(uri))
	return hex.EncodeToString(h[:])
}

func validIDs(op string, pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := rag.ValidateID(pairs[i], pairs[i+1]); err != nil {
			return rag.E(op, rag.KindInvalid, err)
		}
	}
	return nil
}

// placeholders returns "?, ?, ?" for n values.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
