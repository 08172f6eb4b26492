// Package awsenv is what docmind's Lambda mains share to start on AWS: configuration with secrets
// resolved once at init, the rule that a Lambda runs on the cloud stores only, and the few AWS clients
// the functions use directly (S3 object versions and uploads, Step Functions). The start-up shape and
// logger are lambdamain's (linked by every function), the store adapters are opened by stores, and the
// ingestion stages are built by ingestenv: each main imports only the packages whose adapters it uses.
package awsenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"
	mysqldrv "github.com/go-sql-driver/mysql"

	"github.com/docmind/docmind/shared/awsrt"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/mysql/rdstls"
)

// AWSConfig loads the SDK configuration with one retry layer (three attempts, capped backoff; SR-17).
func AWSConfig(ctx context.Context) (aws.Config, error) {
	cfg, err := awsrt.LoadConfig(ctx, awsconfig.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3; o.MaxBackoff = 2 * time.Second })
	}))
	if err != nil {
		return aws.Config{}, rag.E("awsenv.AWSConfig", rag.KindInvalid, err)
	}
	return cfg, nil
}

// Load builds a function's configuration: secrets named by the *_SECRET_ARN variables are read once,
// all at the same time (Secrets Manager is called only when one is set), DOCMIND_SQL_HOST replaces the
// database host (the RDS Proxy endpoint), DOCMIND_SQL_TLS sets the DSN's tls parameter (rds: verified
// against the RDS bundle, DOCMIND_MYSQL_CA_FILE and the system roots), and the embedded drivers are
// refused. It opens no connection.
func Load(ctx context.Context, getenv func(string) string) (config.Config, error) {
	cfg, _, err := LoadEnv(ctx, getenv)
	return cfg, err
}

// LoadEnv is Load, also returning the environment with the secrets resolved, for the variables a
// function reads beyond shared/config (DOCMIND_REDIS_USERNAME from the Redis secret).
func LoadEnv(ctx context.Context, getenv func(string) string) (config.Config, func(string) string, error) {
	needSecrets := false
	for _, b := range awsrt.Bindings() {
		if getenv(b.ARNVar) != "" && getenv(b.Var) == "" {
			needSecrets = true
		}
	}
	if needSecrets {
		ac, err := AWSConfig(ctx)
		if err != nil {
			return config.Config{}, nil, err
		}
		sm := &awsrt.Cache{Reader: awsrt.SecretsManager{Client: secretsmanager.NewFromConfig(ac)}}
		if getenv, err = awsrt.Env(ctx, getenv, sm, awsrt.Bindings()); err != nil {
			return config.Config{}, nil, err
		}
	}
	// tls=rds must be known to the driver before a DSN naming it is parsed (withDSN below, mysql.Open)
	if err := rdstls.Register(getenv("DOCMIND_MYSQL_CA_FILE")); err != nil {
		return config.Config{}, nil, rag.E("awsenv.Load", rag.KindInvalid, err)
	}
	if host, mode := getenv("DOCMIND_SQL_HOST"), getenv("DOCMIND_SQL_TLS"); host != "" || mode != "" {
		base := getenv
		getenv = func(k string) string {
			if k == "DOCMIND_SQL_DSN" {
				if dsn, err := withDSN(base(k), host, mode); err == nil {
					return dsn
				}
			}
			return base(k)
		}
	}
	cfg, err := config.Load("", getenv)
	if err != nil {
		return cfg, nil, err
	}
	return cfg, getenv, RequireCloud(cfg)
}

// withHost replaces the host of a MySQL DSN, keeping its port unless host names one.
func withHost(dsn, host string) (string, error) { return withDSN(dsn, host, "") }

// withDSN replaces the host of a MySQL DSN (when host is not empty), keeping its port unless host names
// one, and sets its tls parameter (when mode is not empty: DOCMIND_SQL_TLS, rds on AWS).
func withDSN(dsn, host, mode string) (string, error) {
	c, err := mysqldrv.ParseDSN(dsn)
	if err != nil {
		return "", err
	}
	if mode != "" {
		c.TLS, c.TLSConfig = nil, mode
	}
	if host == "" {
		return c.FormatDSN(), nil
	}
	port := "3306"
	if i := strings.LastIndex(c.Addr, ":"); i >= 0 {
		port = c.Addr[i+1:]
	}
	if !strings.Contains(host, ":") {
		host += ":" + port
	}
	c.Addr = host
	return c.FormatDSN(), nil
}

// RequireCloud refuses the embedded drivers: a Lambda's disk and memory vanish between invocations.
func RequireCloud(cfg config.Config) error {
	var bad []string
	for _, c := range []struct{ name, got, want string }{
		{"DOCMIND_SQL_DRIVER", cfg.SQL.Driver, "mysql"}, {"DOCMIND_VECTOR_DRIVER", cfg.Vector.Driver, "milvus"},
		{"DOCMIND_BLOB_DRIVER", cfg.Blob.Driver, "s3"},
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

// S3Client builds an S3 client for the configured endpoint (path style for S3-compatible servers).
func S3Client(ac aws.Config, cfg config.Config) *awss3.Client {
	return awss3.NewFromConfig(ac, func(o *awss3.Options) {
		if cfg.Blob.Region != "" {
			o.Region = cfg.Blob.Region
		}
		if cfg.Blob.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Blob.Endpoint)
		}
		o.UsePathStyle = cfg.Blob.UsePathStyle
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
}

// Objects reads drop-folder object versions (ingest.ObjectSource).
type Objects struct{ S3 *awss3.Client }

// GetObject implements ingest.ObjectSource: GetObject with VersionId, so a later upload of the same key
// never changes what this execution ingests.
func (o Objects) GetObject(ctx context.Context, bucket, key, versionID string, limit int64) ([]byte, error) {
	const op = "awsenv.GetObject"
	in := &awss3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	if versionID != "" && versionID != "null" {
		in.VersionId = aws.String(versionID)
	}
	out, err := o.S3.GetObject(ctx, in)
	if err != nil {
		var nsk *s3types.NoSuchKey
		var ae smithy.APIError
		if errors.As(err, &nsk) || (errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NoSuchVersion")) {
			return nil, rag.E(op, rag.KindNotFound, err)
		}
		if errors.As(err, &ae) && ae.ErrorCode() == "AccessDenied" {
			return nil, rag.E(op, rag.KindPermission, err)
		}
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, rag.E(op, rag.KindUnavailable, err)
	}
	if int64(len(b)) > limit {
		return nil, rag.Errorf(op, rag.KindTerminal, "s3://%s/%s is larger than %d bytes", bucket, key, limit)
	}
	return b, nil
}

// ObjectMetadata implements ingest.ObjectMetadataSource: the version's user metadata (HeadObject's
// x-amz-meta-* headers) and tags (GetObjectTagging), both for that VersionId. Tags the role may not
// read (AccessDenied) are left out rather than failing the ingestion: the object's text matters more
// than its tags.
func (o Objects) ObjectMetadata(ctx context.Context, bucket, key, versionID string) (user, tags map[string]string, err error) {
	const op = "awsenv.ObjectMetadata"
	var version *string
	if versionID != "" && versionID != "null" {
		version = aws.String(versionID)
	}
	head, err := o.S3.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: version})
	if err != nil {
		var ae smithy.APIError
		if errors.As(err, &ae) && (ae.ErrorCode() == "NotFound" || ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NoSuchVersion") {
			return nil, nil, rag.E(op, rag.KindNotFound, err)
		}
		return nil, nil, rag.E(op, rag.KindUnavailable, err)
	}
	tagging, err := o.S3.GetObjectTagging(ctx, &awss3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: version})
	if err != nil {
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" {
			return nil, nil, rag.E(op, rag.KindUnavailable, err)
		}
		tagging = &awss3.GetObjectTaggingOutput{}
	}
	tags = map[string]string{}
	for _, t := range tagging.TagSet {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return head.Metadata, tags, nil
}
