// Command query is the chat Lambda behind a Function URL in RESPONSE_STREAM mode. It wires the AWS
// adapters (Aurora MySQL, Milvus/Zilliz, ElastiCache Redis, S3) into the shared HTTP handler, which
// lambdaurl serves exactly as `docmind serve` serves it locally. The chat pipeline arrives with a later
// issue; today the function answers /healthz with the state of every store.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambdaurl"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/httpapi"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/milvus"
	"github.com/docmind/docmind/shared/store/mysql"
	"github.com/docmind/docmind/shared/store/redis"
	"github.com/docmind/docmind/shared/store/s3"
)

var version = "dev"

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	if err := run(context.Background(), log); err != nil {
		log.Error("query function failed to start", "err", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger) error {
	cfg, err := config.Load("", os.Getenv)
	if err != nil {
		return err
	}
	if err := requireCloud(cfg); err != nil {
		return err
	}
	db, err := mysql.Open(ctx, cfg.SQL.DSN, mysql.Options{MaxOpenConns: cfg.SQL.MaxOpenConns, ConnMaxLifetime: cfg.SQL.ConnMaxLifetime}, nil)
	if err != nil {
		return err
	}
	vec, err := milvus.Open(ctx, milvus.Options{Addr: cfg.Vector.MilvusAddr, Token: cfg.Vector.MilvusToken, Collection: cfg.Vector.Collection,
		Dim: cfg.Vector.Dim, CallTimeout: cfg.Vector.CallTimeout})
	if err != nil {
		return err
	}
	kv := redis.New(redis.Options{Addr: cfg.KV.RedisAddr, Password: cfg.KV.RedisPassword, DB: cfg.KV.RedisDB, TLS: cfg.KV.RedisTLS, Prefix: cfg.KV.Prefix})
	blobs, err := s3.New(ctx, s3.Options{Bucket: cfg.Blob.Bucket, Region: cfg.Blob.Region, Endpoint: cfg.Blob.Endpoint, UsePathStyle: cfg.Blob.UsePathStyle})
	if err != nil {
		return err
	}
	h := httpapi.New(httpapi.Deps{Version: version, Logger: log, Checks: []httpapi.Check{
		{Name: "sql", Driver: "mysql", Probe: db.Ping},
		{Name: "vector", Driver: "milvus", Probe: func(ctx context.Context) error {
			_, err := vec.Count(ctx, rag.Filter{Tenant: cfg.Tenant})
			return err
		}},
		{Name: "kv", Driver: "redis", Probe: kv.Ping},
		{Name: "blob", Driver: "s3", Probe: func(ctx context.Context) error {
			_, err := blobs.Stat(ctx, "healthz")
			if rag.Is(err, rag.KindNotFound) {
				return nil
			}
			return err
		}},
	}})
	lambdaurl.Start(h)
	return nil
}

// requireCloud refuses the embedded drivers: a Lambda's disk and memory vanish between invocations.
func requireCloud(cfg config.Config) error {
	var bad []string
	for _, c := range []struct{ name, got, want string }{
		{"DOCMIND_SQL_DRIVER", cfg.SQL.Driver, "mysql"}, {"DOCMIND_VECTOR_DRIVER", cfg.Vector.Driver, "milvus"},
		{"DOCMIND_KV_DRIVER", cfg.KV.Driver, "redis"}, {"DOCMIND_BLOB_DRIVER", cfg.Blob.Driver, "s3"},
	} {
		if c.got != c.want {
			bad = append(bad, fmt.Sprintf("%s must be %s in a Lambda, got %s", c.name, c.want, c.got))
		}
	}
	if len(bad) > 0 {
		return &config.ValidationError{Problems: bad}
	}
	return nil
}
