// Package aurora opens the Aurora MySQL database and its keyword index from the configuration
// awsenv.Load returns. It is stores' first half without Milvus: the query function opens its vectors
// itself (Late: it never creates a collection).
package aurora

import (
	"context"
	"os"

	"github.com/docmind/docmind/functions/internal/awsenv"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/sqldb"
)

// Open opens Aurora MySQL with the configured pool (DOCMIND_SQL_MAX_OPEN_CONNS per instance), lazily:
// the first query connects, so a cold start pays no round trip to the database here. With the
// DSN from a secret, new connections re-read it every few minutes (awsenv.SQLCredentials), so a
// rotated password reaches a warm instance without recycling it.
func Open(ctx context.Context, cfg config.Config) (*sqldb.DB, error) {
	o := mysql.Options{MaxOpenConns: cfg.SQL.MaxOpenConns, ConnMaxLifetime: cfg.SQL.ConnMaxLifetime,
		CAFile: os.Getenv("DOCMIND_MYSQL_CA_FILE"), Lazy: true}
	creds, err := awsenv.SQLCredentialsFromEnv(ctx, os.Getenv, cfg.SQL.DSN)
	if err != nil {
		return nil, err
	}
	if creds != nil {
		o.BeforeConnect = creds.BeforeConnect
	}
	return mysql.Open(ctx, cfg.SQL.DSN, o, nil)
}

// Keyword is BM25 over the chunk rows in db, with the configured parameters.
func Keyword(db *sqldb.DB, cfg config.Config) *mysql.Keyword {
	r := cfg.Retrieval
	return &mysql.Keyword{DB: db, Params: r.BM25Params()}
}
