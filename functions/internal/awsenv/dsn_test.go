package awsenv

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
)

// DOCMIND_SQL_TLS sets the DSN's tls parameter, with or without DOCMIND_SQL_HOST, whatever the
// secret's DSN said; tls=rds parses because Load registered it first.
func TestLoadSetsTLS(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"DOCMIND_SQL_TLS": "rds"}, "@tcp(db.cluster:3306)/docmind?"},
		{map[string]string{"DOCMIND_SQL_TLS": "rds", "DOCMIND_SQL_HOST": "proxy.internal"}, "@tcp(proxy.internal:3306)/docmind?"},
	} {
		env := map[string]string{"DOCMIND_SQL_DRIVER": "mysql", "DOCMIND_SQL_DSN": "u:p@tcp(db.cluster:3306)/docmind?tls=false",
			"DOCMIND_VECTOR_DRIVER": "milvus", "DOCMIND_MILVUS_ADDR": "m:19530", "DOCMIND_BLOB_DRIVER": "s3", "DOCMIND_S3_BUCKET": "b"}
		for k, v := range c.env {
			env[k] = v
		}
		cfg, err := Load(context.Background(), func(k string) string { return env[k] })
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cfg.SQL.DSN, c.want) || !strings.Contains(cfg.SQL.DSN, "tls=rds") || strings.Contains(cfg.SQL.DSN, "tls=false") {
			t.Errorf("%v: DSN %s, want %s... with tls=rds", c.env, cfg.SQL.DSN, c.want)
		}
	}
}

type recordStart struct{ in *sfn.StartExecutionInput }

func (r *recordStart) StartExecution(_ context.Context, in *sfn.StartExecutionInput, _ ...func(*sfn.Options)) (*sfn.StartExecutionOutput, error) {
	r.in = in
	return &sfn.StartExecutionOutput{}, nil
}

// An execution started while serving a Lambda invocation carries the invocation's X-Ray trace header.
func TestStartCarriesTrace(t *testing.T) {
	const h = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	r := &recordStart{}
	ctx := context.WithValue(context.Background(), "x-amzn-trace-id", h) //nolint:staticcheck // aws-lambda-go's own key
	if _, err := (Executions{Client: r, StateMachineARN: "arn:m"}).Start(ctx, "n", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(r.in.TraceHeader); got != h {
		t.Errorf("TraceHeader %q, want %q", got, h)
	}
}
