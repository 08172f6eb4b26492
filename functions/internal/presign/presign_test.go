package presign

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// The page's policy names where the PUTs go: S3's virtual-hosted origin for the bucket, or an endpoint
// override's (path style, as moto and gofakes3 need), worked out by signing locally.
func TestOrigin(t *testing.T) {
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "SECRET", "")}
	for name, tc := range map[string]struct {
		opts func(*awss3.Options)
		want string
	}{
		"s3":       {func(*awss3.Options) {}, "https://docs-bucket.s3.eu-west-1.amazonaws.com"},
		"override": {func(o *awss3.Options) { o.BaseEndpoint, o.UsePathStyle = aws.String("http://127.0.0.1:9000"), true }, "http://127.0.0.1:9000"},
	} {
		got, err := Origin(context.Background(), awss3.NewPresignClient(awss3.NewFromConfig(cfg, tc.opts)), "docs-bucket")
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, tc.want)
		}
	}
}
