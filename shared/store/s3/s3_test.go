package s3

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store"
	"github.com/docmind/docmind/shared/store/storetest"
)

var testCreds = credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")

// fake starts an in-process S3 (gofakes3) with one bucket and returns its URL.
func fake(t *testing.T, bucket string) string {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

func open(t *testing.T, endpoint, prefix string) *Store {
	t.Helper()
	s, err := New(context.Background(), Options{Bucket: "docs", Prefix: prefix, Region: "us-east-1", Endpoint: endpoint, UsePathStyle: true, Credentials: testCreds})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.TestBlobs(t, func(t *testing.T) store.Blobs { return open(t, fake(t, "docs"), "") })
}

func TestConformanceWithPrefix(t *testing.T) {
	storetest.TestBlobs(t, func(t *testing.T) store.Blobs { return open(t, fake(t, "docs"), "tenant-a") })
}

func TestPrefixIsolation(t *testing.T) {
	url := fake(t, "docs")
	a, b := open(t, url, "tenant-a/"), open(t, url, "tenant-b/")
	ctx := context.Background()
	if _, err := a.Put(ctx, "secret.txt", strings.NewReader("A"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, "secret.txt"); rag.KindOf(err) != rag.KindNotFound {
		t.Fatalf("prefix b sees prefix a's object: %v", err)
	}
	if list, _ := b.List(ctx, ""); len(list) != 0 {
		t.Fatalf("prefix b lists %v", list)
	}
}

func TestUnavailable(t *testing.T) {
	url := fake(t, "docs")
	proxy := storetest.NewProxy(t, strings.TrimPrefix(url, "http://"))
	s := open(t, "http://"+proxy.Addr(), "")
	if _, err := s.Put(context.Background(), "k", strings.NewReader("v"), ""); err != nil {
		t.Fatal(err)
	}
	proxy.Stop()
	storetest.TestUnavailable(t, map[string]func(context.Context) error{
		"Get":  func(ctx context.Context) error { _, _, err := s.Get(ctx, "k"); return err },
		"Put":  func(ctx context.Context) error { _, err := s.Put(ctx, "k", strings.NewReader("v"), ""); return err },
		"List": func(ctx context.Context) error { _, err := s.List(ctx, ""); return err },
	})
}

func TestNeedsBucket(t *testing.T) {
	if _, err := New(context.Background(), Options{Region: "us-east-1", Credentials: aws.AnonymousCredentials{}}); rag.KindOf(err) != rag.KindInvalid {
		t.Fatalf("no bucket: %v", err)
	}
}
