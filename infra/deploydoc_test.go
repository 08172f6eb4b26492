package infra

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/awsrt"
)

// TestDeployDocMatchesCode: what DEPLOY.md tells an operator to create is what the code reads. The RDS
// CA bundle lands where rdstls embeds it, fetched from the URL rdsca/README.md names; the Redis secret's
// JSON decodes, through the functions' own bindings, into a user, a password and TLS.
func TestDeployDocMatchesCode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "DEPLOY.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "shared", "store", "mysql", "rdstls", "rdsca", "README.md"))
	if err != nil {
		t.Fatal(err)
	}

	t.Run("RDSBundle", func(t *testing.T) {
		fetch := regexp.MustCompile(`curl -fsSL (\S+) \\\s+-o (\S+)`)
		got, want := fetch.FindSubmatch(doc), fetch.FindSubmatch(readme)
		if got == nil || want == nil {
			t.Fatalf("no curl ... -o PATH command in DEPLOY.md (%v) or rdsca/README.md (%v)", got != nil, want != nil)
		}
		if string(got[1]) != string(want[1]) {
			t.Errorf("DEPLOY.md fetches %s, rdsca/README.md %s", got[1], want[1])
		}
		dst := string(got[2])
		if filepath.Dir(dst) != "shared/store/mysql/rdstls/rdsca" || !strings.HasSuffix(dst, ".pem") {
			t.Errorf("DEPLOY.md writes the bundle to %s: rdstls embeds only rdsca/*.pem", dst)
		}
		// rdstls.go's go:embed names the folder the documented path is in
		src, err := os.ReadFile(filepath.Join("..", "shared", "store", "mysql", "rdstls", "rdstls.go"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), "//go:embed "+filepath.Base(filepath.Dir(dst))+"\n") {
			t.Errorf("rdstls.go does not embed %s", filepath.Dir(dst))
		}
		ignore, err := os.ReadFile(filepath.Join("..", filepath.Dir(dst), ".gitignore"))
		if err != nil || !strings.Contains(string(ignore), "*.pem") {
			t.Errorf("%s/.gitignore should keep the fetched bundle out of commits (%v)", filepath.Dir(dst), err)
		}
	})

	t.Run("RedisSecret", func(t *testing.T) {
		m := regexp.MustCompile(`--name docmind/redis \\\s+--secret-string '([^']+)'`).FindSubmatch(doc)
		if m == nil {
			t.Fatal("DEPLOY.md shows no create-secret command for the Redis secret")
		}
		secret := strings.Replace(string(m[1]), "<16-128 characters>", "correct-horse-battery", 1)
		base := map[string]string{"DOCMIND_REDIS_SECRET_ARN": "arn:redis"}
		getenv, err := awsrt.Env(context.Background(), func(k string) string { return base[k] }, secretMap{"arn:redis": secret}, awsrt.Bindings())
		if err != nil {
			t.Fatalf("the documented secret %s does not decode: %v", secret, err)
		}
		want := map[string]string{"DOCMIND_REDIS_USERNAME": "docmind", "DOCMIND_REDIS_PASSWORD": "correct-horse-battery", "DOCMIND_REDIS_TLS": "true"}
		for k, v := range want {
			if got := getenv(k); got != v {
				t.Errorf("the documented secret sets %s=%q, want %q", k, got, v)
			}
		}
		if !strings.Contains(string(doc), "`RedisSecretArn`") {
			t.Error("DEPLOY.md does not name the RedisSecretArn parameter")
		}
	})
}

type secretMap map[string]string

func (m secretMap) SecretString(_ context.Context, id string) (string, error) {
	if v, ok := m[id]; ok {
		return v, nil
	}
	return "", os.ErrNotExist
}
