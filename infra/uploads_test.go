package infra

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7"

	"github.com/docmind/docmind/shared/ingest"
	"github.com/docmind/docmind/shared/rag"
)

// TestPresignedUploadsReachTheQueue: a presigned PUT's key (ingest.PresignedKey, a knowledge base's id
// after the tenant) is under a prefix the bucket notifies the ingest queue of on creation, the API's
// direct-upload keys are not (their executions are started by the API), and a browser page may PUT
// with the Content-Type the URL signs.
func TestPresignedUploadsReachTheQueue(t *testing.T) {
	tmpl, err := goformation.Open(filepath.Join("..", "template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tmpl.GetS3BucketWithName("DocumentsBucket")
	if err != nil || b.NotificationConfiguration == nil {
		t.Fatalf("DocumentsBucket and its notifications: %v", err)
	}
	tenant, _ := tmpl.Parameters["Tenant"].Default.(string)
	if tenant == "" {
		t.Fatal("the Tenant parameter has no default")
	}
	presigned := ingest.PresignedKey(tenant, rag.NewID("kb"), rag.NewID("doc"))
	direct := "uploads/" + tenant + "/" + rag.NewID("doc")
	notified := func(key string) bool {
		for _, q := range b.NotificationConfiguration.QueueConfigurations {
			if !strings.HasPrefix(q.Event, "s3:ObjectCreated:") || q.Filter == nil || q.Filter.S3Key == nil {
				continue
			}
			for _, r := range q.Filter.S3Key.Rules {
				if r.Name == "prefix" && strings.HasPrefix(key, r.Value) {
					return true
				}
			}
		}
		return false
	}
	if !notified(presigned) {
		t.Errorf("a presigned upload's object %s is not notified to the ingest queue", presigned)
	}
	if notified(direct) {
		t.Errorf("a direct upload's object %s is notified: its execution would be started twice", direct)
	}
	if b.CorsConfiguration == nil {
		t.Fatal("DocumentsBucket has no CORS rules: a browser cannot PUT to a presigned URL")
	}
	ok := false
	for _, r := range b.CorsConfiguration.CorsRules {
		if slices.Contains(r.AllowedMethods, "PUT") && slices.Contains(r.AllowedHeaders, "content-type") &&
			slices.ContainsFunc(r.AllowedOrigins, func(o string) bool { return strings.Contains(o, ".lambda-url.") }) {
			ok = true
		}
	}
	if !ok {
		t.Errorf("no CORS rule lets the Function URL's page PUT with a Content-Type: %+v", b.CorsConfiguration.CorsRules)
	}
}
