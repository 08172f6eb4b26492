package manage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// A member's credentials file is a bare name resolved in its own knowledge base's folder, must hold
// every key (no variables are read for it), and its path is stored, never the credentials.
func TestAddMemberCredentialsFile(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: "acme", Name: "eng"}
	if err := db.CreateKB(ctx, &kb); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := map[string]string{"DOCMIND_CONNECTOR_WIKI_TOKEN": "from-a-variable"}
	m := &Manager{Store: db, CredentialsDir: dir, Config: config.Default(), Getenv: func(k string) string { return env[k] }}
	settings := `{"url":"https://acme.atlassian.net/wiki","space":"ENG","credentials_file":"wiki.json"}`
	os.MkdirAll(filepath.Join(dir, kb.ID), 0o700)
	// the file lacks the token; the variable that would supply it for the CLI is not read for a member
	os.WriteFile(filepath.Join(dir, kb.ID, "wiki.json"), []byte(`{"email":"bot@acme.example"}`), 0o600)
	c := rag.Connector{Tenant: "acme", Name: "wiki", KBID: kb.ID, Type: "confluence", Config: settings}
	if err := m.AddMember(ctx, &c, false); err == nil || !strings.Contains(err.Error(), "lacks credentials: token") {
		t.Fatalf("AddMember with an incomplete file = %v; want the token missing", err)
	}
	os.WriteFile(filepath.Join(dir, kb.ID, "wiki.json"), []byte(`{"email":"bot@acme.example","token":"s3cret"}`), 0o600)
	c = rag.Connector{Tenant: "acme", Name: "wiki", KBID: kb.ID, Type: "confluence", Config: settings}
	if err := m.AddMember(ctx, &c, false); err != nil {
		t.Fatal(err)
	}
	got, err := db.GetConnector(ctx, "acme", "wiki")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, kb.ID, "wiki.json"); !strings.Contains(got.Config, want) || strings.Contains(got.Config, "s3cret") {
		t.Fatalf("stored settings %s; want the path %s and no credential", got.Config, want)
	}
	// the same name in another knowledge base's folder is not this one's file
	kb2 := rag.KnowledgeBase{Tenant: "acme", Name: "ops"}
	if err := db.CreateKB(ctx, &kb2); err != nil {
		t.Fatal(err)
	}
	c = rag.Connector{Tenant: "acme", Name: "wiki2", KBID: kb2.ID, Type: "confluence", Config: settings}
	if err := m.AddMember(ctx, &c, false); err == nil || !strings.Contains(err.Error(), "no credentials file \"wiki.json\"") {
		t.Fatalf("AddMember naming another knowledge base's file = %v; want it not found", err)
	}
}
