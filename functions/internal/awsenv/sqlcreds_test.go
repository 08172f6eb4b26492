package awsenv

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/mysql/mysqltest"
)

type rotatingSecret struct {
	value string
	err   error
	reads atomic.Int64
}

func (r *rotatingSecret) SecretString(context.Context, string) (string, error) {
	r.reads.Add(1)
	return r.value, r.err
}

// TestSQLCredentialsFollowRotation: a new connection after a rotation uses the rotated password once
// the last read is older than Every; none is read at start (Load's value seeds it) nor more often
// than Every; a failed read keeps the previous credentials.
func TestSQLCredentialsFollowRotation(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	sec := &rotatingSecret{value: `{"username":"docmind","password":"old","host":"aurora.internal","port":3306,"dbname":"docmind"}`}
	c := &SQLCredentials{Secrets: sec, ARN: "arn:secret", Host: "proxy.internal", Every: 5 * time.Minute, Now: func() time.Time { return now }}
	if err := c.Seed("docmind:old@tcp(proxy.internal:3306)/docmind", now); err != nil {
		t.Fatal(err)
	}
	connect := func() *mysqldrv.Config {
		cfg := mysqldrv.NewConfig()
		if err := c.BeforeConnect(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if cfg := connect(); cfg.Passwd != "old" || sec.reads.Load() != 0 {
		t.Fatalf("first connection: password %q, %d reads (want the seed, no read)", cfg.Passwd, sec.reads.Load())
	}
	sec.value = `{"username":"docmind","password":"rotated","host":"aurora.internal","port":3306,"dbname":"docmind"}`
	now = now.Add(4 * time.Minute)
	if cfg := connect(); cfg.Passwd != "old" || sec.reads.Load() != 0 {
		t.Fatalf("within Every: password %q, %d reads", cfg.Passwd, sec.reads.Load())
	}
	now = now.Add(2 * time.Minute)
	if cfg := connect(); cfg.Passwd != "rotated" || cfg.User != "docmind" || sec.reads.Load() != 1 {
		t.Fatalf("after Every: user %q password %q, %d reads (want the rotated password, one read)", cfg.User, cfg.Passwd, sec.reads.Load())
	}
	connect()
	if sec.reads.Load() != 1 {
		t.Fatalf("%d reads: at most one per Every", sec.reads.Load())
	}
	sec.err = errors.New("secretsmanager: throttled")
	now = now.Add(10 * time.Minute)
	if cfg := connect(); cfg.Passwd != "rotated" {
		t.Fatalf("after a failed read: password %q, want the previous one kept", cfg.Passwd)
	}
}

// TestSQLCredentialsHookRuns: mysql.Open installs the hook, and the driver calls it for its connections.
func TestSQLCredentialsHookRuns(t *testing.T) {
	dsn := mysqltest.Database(t)
	var calls atomic.Int64
	db, err := mysql.Open(context.Background(), dsn, mysql.Options{BeforeConnect: func(ctx context.Context, cfg *mysqldrv.Config) error {
		calls.Add(1)
		return nil
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if calls.Load() == 0 {
		t.Fatal("BeforeConnect never ran")
	}
}

// TestSQLCredentialsFromEnv: only a DSN that came from the secret is refreshed.
func TestSQLCredentialsFromEnv(t *testing.T) {
	env := map[string]string{"DOCMIND_SQL_DSN": "u:p@tcp(h:3306)/d", "DOCMIND_SQL_SECRET_ARN": "arn:x"}
	if c, err := SQLCredentialsFromEnv(context.Background(), func(k string) string { return env[k] }, env["DOCMIND_SQL_DSN"]); err != nil || c != nil {
		t.Fatalf("a DSN given directly: %v %v, want no refresher", c, err)
	}
}
