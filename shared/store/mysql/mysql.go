// Package mysql is the Aurora MySQL / MySQL / MariaDB relational store through go-sql-driver/mysql,
// behind the shared sqldb queries. The DSN is normalised for Lambda: parseTime, utf8mb4, rejectReadOnly
// (an Aurora failover turns the old writer read-only: drop that connection instead of failing writes
// forever) and a connection lifetime under 5 minutes (a frozen Lambda must not reuse dead connections).
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/mysql/rdstls"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// MySQL error numbers the store reacts to.
const (
	erDupEntry                = 1062
	erOptionPreventsStatement = 1290 // --read-only: a writer that became a reader in a failover
	erReadOnlyTx              = 1792
	erLockWaitTimeout         = 1205
	erLockDeadlock            = 1213
	erConCount                = 1040
	erServerShutdown          = 1053
	erInnodbReadOnly          = 1836
)

// Dialect classifies MySQL errors and serialises migrations with GET_LOCK.
var Dialect = sqldb.Dialect{
	Name: "mysql",
	IsDuplicate: func(err error) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == erDupEntry
	},
	IsUnavailable: func(err error) bool {
		var me *mysql.MySQLError
		if errors.As(err, &me) {
			switch me.Number {
			case erOptionPreventsStatement, erReadOnlyTx, erLockWaitTimeout, erLockDeadlock, erConCount, erServerShutdown, erInnodbReadOnly:
				return true
			}
			return false
		}
		return errors.Is(err, mysql.ErrInvalidConn)
	},
	Lock: func(ctx context.Context, conn *sql.Conn) error {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, `SELECT GET_LOCK('docmind_migrate', 60)`).Scan(&got); err != nil {
			return err
		}
		if got.Int64 != 1 {
			return errors.New("another migration holds the lock")
		}
		return nil
	},
	Unlock: func(ctx context.Context, conn *sql.Conn) error {
		_, err := conn.ExecContext(ctx, `SELECT RELEASE_LOCK('docmind_migrate')`)
		return err
	},
}

// Options tune the pool.
type Options struct {
	MaxOpenConns    int
	ConnMaxLifetime time.Duration // capped below 5 minutes
	DialTimeout     time.Duration // default 5 s
	// BeforeConnect, when set, runs before every new connection and may change its credentials: the
	// Lambda functions keep the user and password current with a rotated secret (awsenv.SQLCredentials).
	BeforeConnect func(context.Context, *mysql.Config) error
	// CAFile is a PEM file of certificates tls=rds trusts beside the embedded RDS bundle and the system
	// roots (DOCMIND_MYSQL_CA_FILE; package rdstls).
	CAFile string
	// Lazy skips Open's ping: the first query connects (a Lambda's init then pays no round trip).
	Lazy bool
}

// Config parses dsn and applies docmind's required settings. It is exported so operators and tests can
// see exactly what is sent to the driver.
func Config(dsn string, o Options) (*mysql.Config, error) {
	if rdstls.Uses(dsn) {
		if err := rdstls.Register(o.CAFile); err != nil {
			return nil, rag.E("mysql.Config", rag.KindInvalid, fmt.Errorf("tls=rds: %w", err))
		}
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, rag.E("mysql.Config", rag.KindInvalid, fmt.Errorf("parse DSN: %w", err))
	}
	cfg.ParseTime = true
	cfg.RejectReadOnly = true
	// RowsAffected must count matched rows, as SQLite does: an UPDATE that writes the values a row
	// already holds (two writes in one millisecond) would otherwise look like a missing row (NotFound).
	cfg.ClientFoundRows = true
	// SET NAMES utf8mb4 COLLATE utf8mb4_bin on every connection (a "charset" entry in Params would be
	// sent as a system variable, which servers reject)
	if err := cfg.Apply(mysql.Charset("utf8mb4", "utf8mb4_bin")); err != nil {
		return nil, rag.E("mysql.Config", rag.KindInvalid, err)
	}
	cfg.Loc = time.UTC
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if cfg.Timeout == 0 || cfg.Timeout > o.DialTimeout {
		cfg.Timeout = o.DialTimeout
	}
	if cfg.ReadTimeout == 0 {
		cfg.ReadTimeout = 30 * time.Second
	}
	if cfg.WriteTimeout == 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	return cfg, nil
}

// Open connects to MySQL and checks the connection within a few seconds (with o.Lazy it checks
// nothing: the first query connects). A DSN with tls=rds verifies the server's certificate and host
// name (package rdstls). The caller runs Migrate.
func Open(ctx context.Context, dsn string, o Options, now func() time.Time) (*sqldb.DB, error) {
	const op = "mysql.Open"
	cfg, err := Config(dsn, o)
	if err != nil {
		return nil, err
	}
	if o.BeforeConnect != nil {
		if err := cfg.Apply(mysql.BeforeConnect(o.BeforeConnect)); err != nil {
			return nil, rag.E(op, rag.KindInvalid, err)
		}
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, rag.E(op, rag.KindInvalid, err)
	}
	db := sql.OpenDB(conn)
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 10
	}
	if o.ConnMaxLifetime <= 0 || o.ConnMaxLifetime >= 5*time.Minute {
		o.ConnMaxLifetime = 4 * time.Minute
	}
	db.SetMaxOpenConns(o.MaxOpenConns)
	db.SetMaxIdleConns(o.MaxOpenConns)
	db.SetConnMaxLifetime(o.ConnMaxLifetime)
	db.SetConnMaxIdleTime(time.Minute)
	s := sqldb.New(db, Dialect, now)
	if o.Lazy {
		return s, nil
	}
	pctx, cancel := context.WithTimeout(ctx, cfg.Timeout+time.Second)
	defer cancel()
	if err := s.Ping(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to mysql %s: %w", cfg.Addr, err)
	}
	return s, nil
}
