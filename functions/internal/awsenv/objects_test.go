package awsenv

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/docmind/docmind/shared/awspreflight/mototest"
	"github.com/docmind/docmind/shared/rag"
)

// ObjectMetadata against moto_server (S3's API): a version's user metadata and tags, that version's
// and not a later one's; NotFound for a version that does not exist.
func TestObjectMetadata(t *testing.T) {
	url := mototest.Start(t)
	ctx := context.Background()
	c := awss3.New(awss3.Options{Region: "us-east-1", BaseEndpoint: aws.String(url), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	if _, err := c.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String("docs")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(ctx, &awss3.PutBucketVersioningInput{Bucket: aws.String("docs"),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	put := func(team, tagging string) string {
		out, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String("docs"), Key: aws.String("inbox/hr/a.md"),
			Body: strings.NewReader("# A"), Metadata: map[string]string{"team": team}, Tagging: aws.String(tagging)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.VersionId)
	}
	v1 := put("people", "confidential=yes&year=2025")
	put("finance", "confidential=no")
	user, tags, err := Objects{S3: c}.ObjectMetadata(ctx, "docs", "inbox/hr/a.md", v1)
	if err != nil || user["team"] != "people" || tags["confidential"] != "yes" || tags["year"] != "2025" {
		t.Fatalf("ObjectMetadata(v1) = %v %v %v; want v1's metadata and tags", user, tags, err)
	}
	if _, _, err := (Objects{S3: c}).ObjectMetadata(ctx, "docs", "inbox/hr/gone.md", ""); !rag.Is(err, rag.KindNotFound) {
		t.Fatalf("ObjectMetadata of a missing object = %v; want NotFound", err)
	}
}
