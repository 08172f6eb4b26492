package manage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// Due: a connector's own interval over the default, counted from its last sync's start; never
// synced is due at once; off and a default of 0 are never due.
func TestDue(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, tc := range []struct {
		name     string
		interval int64
		started  time.Time
		def      time.Duration
		want     bool
	}{
		{"never synced, default on", 0, time.Time{}, time.Hour, true},
		{"default, not yet", 0, ago(59 * time.Minute), time.Hour, false},
		{"default, due", 0, ago(time.Hour), time.Hour, true},
		{"default off", 0, ago(48 * time.Hour), 0, false},
		{"never synced, default off", 0, time.Time{}, 0, false},
		{"own 15m over a 1h default", 900, ago(15 * time.Minute), time.Hour, true},
		{"own 6h over a 1h default", 6 * 3600, ago(2 * time.Hour), time.Hour, false},
		{"own interval with the default off", 900, ago(20 * time.Minute), 0, true},
		{"off", rag.IntervalNever, ago(1000 * time.Hour), time.Hour, false},
		{"off, never synced", rag.IntervalNever, time.Time{}, time.Hour, false},
	} {
		c := rag.Connector{IntervalSeconds: tc.interval}
		c.StartedAt = tc.started
		if got := Due(c, tc.def, now); got != tc.want {
			t.Errorf("%s: Due = %v; want %v", tc.name, got, tc.want)
		}
	}
	if got := ScheduleTick(time.Hour); got != time.Minute {
		t.Errorf("ScheduleTick(1h) = %s; want 1m", got)
	}
	if got := ScheduleTick(10 * time.Second); got != 10*time.Second {
		t.Errorf("ScheduleTick(10s) = %s; want 10s", got)
	}
}
