// Package mysqltest gives tests a MySQL server: a real one when DOCMIND_TEST_MYSQL_DSN is set, otherwise
// an in-process MySQL-protocol server (dolthub/go-mysql-server, memory backend). Each call to Database
// creates a fresh, empty database and drops it when the test ends. Only tests import this package.
package mysqltest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	sqle "github.com/dolthub/go-mysql-server"
	"github.com/dolthub/go-mysql-server/memory"
	"github.com/dolthub/go-mysql-server/server"
	gmssql "github.com/dolthub/go-mysql-server/sql"
	"github.com/go-sql-driver/mysql"
	"github.com/sirupsen/logrus"
)

// EnvDSN names the variable that points the tests at a real server (a user allowed to CREATE DATABASE).
const EnvDSN = "DOCMIND_TEST_MYSQL_DSN"

var (
	once    sync.Once
	baseDSN string
	srvErr  error
)

// Real reports whether tests run against a real server.
func Real() bool { return os.Getenv(EnvDSN) != "" }

// Server returns the DSN of the shared server (without a database), starting the in-process one on first use.
func Server(t testing.TB) string {
	t.Helper()
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return dsn
	}
	once.Do(func() { baseDSN, srvErr = startInProcess() })
	if srvErr != nil {
		t.Fatalf("start in-process MySQL server: %v", srvErr)
	}
	return baseDSN
}

func startInProcess() (string, error) { return startServer(nil) }

// TLSServer starts another in-process server that requires TLS with cfg (its certificate) and stops it
// when the test ends; it returns the server's host:port. A client without TLS is refused.
func TLSServer(t testing.TB, cfg *tls.Config) string {
	t.Helper()
	dsn, err := startServer(func(c *server.Config) { c.TLSConfig, c.RequireSecureTransport = cfg, true }, t.Cleanup)
	if err != nil {
		t.Fatalf("start in-process MySQL server with TLS: %v", err)
	}
	c, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return c.Addr
}

func startServer(configure func(*server.Config), cleanup ...func(func())) (string, error) {
	logrus.SetLevel(logrus.ErrorLevel)
	seed := memory.NewDatabase("docmind_seed")
	seed.EnablePrimaryKeyIndexes()
	// native primary-key indexes: FULLTEXT indexes need them in the memory engine
	pro := memory.NewDBProviderWithOpts(memory.NativeIndexProvider(true), memory.WithDbsOption([]gmssql.Database{seed})).(*memory.DbProvider)
	engine := sqle.NewDefault(pro)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	l.Close()
	sc := server.Config{Protocol: "tcp", Address: addr}
	if configure != nil {
		configure(&sc)
	}
	s, err := server.NewServer(sc, engine, gmssql.NewContext, memory.NewSessionBuilder(pro), nil)
	if err != nil {
		return "", err
	}
	go s.Start()
	for _, c := range cleanup {
		c(func() { s.Close() })
	}
	return fmt.Sprintf("root@tcp(%s)/", addr), nil
}

// Database creates a fresh database on the server and returns a DSN that selects it.
func Database(t testing.TB) string {
	t.Helper()
	base := Server(t)
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvDSN, err)
	}
	var b [6]byte
	rand.Read(b[:])
	name := "docmind_test_" + hex.EncodeToString(b[:])
	cfg.DBName = ""
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		admin.Close()
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin.ExecContext(ctx, "DROP DATABASE "+name)
		admin.Close()
	})
	cfg.DBName = name
	return cfg.FormatDSN()
}
