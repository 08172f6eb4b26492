package connector

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type secretMap map[string]string

func (m secretMap) SecretString(_ context.Context, id string) (string, error) { return m[id], nil }

func TestLoadCredentials(t *testing.T) {
	ctx := context.Background()
	env := map[string]string{"DOCMIND_CONNECTOR_TEAM_WIKI_TOKEN": "from-env"}
	getenv := func(k string) string { return env[k] }

	file := filepath.Join(t.TempDir(), "creds.json")
	os.WriteFile(file, []byte(`{"email":"bot@example.com"}`), 0o600)
	c, err := LoadCredentials(ctx, "team-wiki", CredentialRef{File: file}, []string{"email", "token"}, getenv, nil)
	if err != nil || c["email"] != "bot@example.com" || c["token"] != "from-env" {
		t.Fatalf("file + variables = %v, %v", c, err)
	}
	if s := fmt.Sprintf("%v %+v %#v %s", c, c, c, c); strings.Contains(s, "from-env") || strings.Contains(s, "bot@") {
		t.Errorf("credentials printed their values: %s", s)
	}

	c, err = LoadCredentials(ctx, "w", CredentialRef{Secret: "arn:s"}, []string{"token"}, nil, secretMap{"arn:s": `{"token":"sm"}`})
	if err != nil || c["token"] != "sm" {
		t.Fatalf("secret = %v, %v", c, err)
	}
	_, err = LoadCredentials(ctx, "w", CredentialRef{Secret: "arn:s"}, []string{"token"}, nil, secretMap{"arn:s": `hunter2-not-json`})
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad secret error = %v; want an error that does not quote the secret", err)
	}
	_, err = LoadCredentials(ctx, "w", CredentialRef{}, []string{"email", "token"}, getenv, nil)
	if err == nil || !strings.Contains(err.Error(), "DOCMIND_CONNECTOR_W_EMAIL") || !strings.Contains(err.Error(), "DOCMIND_CONNECTOR_W_TOKEN") {
		t.Fatalf("missing keys error = %v; want both variables named", err)
	}
}
