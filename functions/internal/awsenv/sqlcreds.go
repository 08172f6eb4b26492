package awsenv

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/docmind/docmind/shared/awsrt"
)

// SQLCredentials keeps new MySQL connections' user and password current with the secret
// (DOCMIND_SQL_SECRET_ARN). Load reads every secret once per instance; without this, after a
// single-user rotation of the Aurora password the pooled connections would keep working until their
// lifetime (4 min) ends, and then every new one would fail with access denied until the instance is
// recycled. Before a new connection, the secret is read again when the last read is older than Every
// (default 5 min): one GetSecretValue per instance every few minutes at most, only when connections
// are opened, and none at a cold start (the value Load read seeds it).
type SQLCredentials struct {
	Secrets awsrt.SecretReader // uncached
	ARN     string
	Host    string // DOCMIND_SQL_HOST, which replaces the secret's host (the RDS Proxy endpoint)
	Every   time.Duration
	Log     *slog.Logger
	Now     func() time.Time // nil: time.Now

	mu         sync.Mutex
	at         time.Time
	user, pass string
}

// Seed starts from the credentials of dsn, read at time now.
func (c *SQLCredentials) Seed(dsn string, now time.Time) error {
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.user, c.pass, c.at = cfg.User, cfg.Passwd, now
	return nil
}

func (c *SQLCredentials) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// BeforeConnect is the driver's hook (mysql.Options.BeforeConnect): it refreshes the credentials when
// they are older than Every and sets them on the connection's configuration. A failed read keeps the
// previous ones (logged): a Secrets Manager outage must not stop connections that would still work.
func (c *SQLCredentials) BeforeConnect(ctx context.Context, cfg *mysqldrv.Config) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	every := c.Every
	if every <= 0 {
		every = 5 * time.Minute
	}
	if now := c.now(); now.Sub(c.at) >= every {
		if err := c.refresh(ctx); err != nil && c.Log != nil {
			c.Log.Warn("the MySQL secret was not re-read; connecting with the previous credentials", "err", err)
		}
		c.at = now // failed or not: the next attempt waits Every again
	}
	if c.user != "" {
		cfg.User, cfg.Passwd = c.user, c.pass
	}
	return nil
}

func (c *SQLCredentials) refresh(ctx context.Context) error {
	secret, err := c.Secrets.SecretString(ctx, c.ARN)
	if err != nil {
		return err
	}
	dsn, err := awsrt.MySQLDSN(secret)
	if err != nil {
		return err
	}
	if c.Host != "" {
		if dsn, err = withHost(dsn, c.Host); err != nil {
			return err
		}
	}
	cfg, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		return err
	}
	c.user, c.pass = cfg.User, cfg.Passwd
	return nil
}

// SQLCredentialsFromEnv is the refresher for a function whose DSN came from DOCMIND_SQL_SECRET_ARN,
// seeded with dsn (what Load read); nil when the DSN was given directly (DOCMIND_SQL_DSN) or no secret
// is named.
func SQLCredentialsFromEnv(ctx context.Context, getenv func(string) string, dsn string) (*SQLCredentials, error) {
	arn := getenv("DOCMIND_SQL_SECRET_ARN")
	if arn == "" || getenv("DOCMIND_SQL_DSN") != "" {
		return nil, nil
	}
	ac, err := AWSConfig(ctx)
	if err != nil {
		return nil, err
	}
	c := &SQLCredentials{Secrets: awsrt.SecretsManager{Client: secretsmanager.NewFromConfig(ac)}, ARN: arn,
		Host: getenv("DOCMIND_SQL_HOST"), Log: slog.Default()}
	if err := c.Seed(dsn, time.Now()); err != nil {
		return nil, err
	}
	return c, nil
}
