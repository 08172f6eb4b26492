package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/auth"
	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/identity"
)

// The identity commands: users, keys shown once and stored hashed, grants, revocation, --tenant.
func TestIdentityCommands(t *testing.T) {
	data := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, append(args, "--data", data)...)
	}
	if code, out, errOut := cli("user", "create", "Alice@Team.example", "--tenant", "team", "--role", "admin", "--json"); code != 0 || !strings.Contains(out, `"email": "alice@team.example"`) {
		t.Fatalf("user create: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := cli("user", "create", "alice@team.example", "--tenant", "team"); code == 0 || !strings.Contains(errOut, "already has a user") {
		t.Fatalf("duplicate user: %d %s", code, errOut)
	}
	if code, _, _ := cli("user", "create", "bob@team.example", "--tenant", "team", "--role", "root"); code == 0 {
		t.Fatal("a role outside admin|member was accepted")
	}
	code, out, errOut := cli("key", "create", "--tenant", "team", "--user", "alice@team.example", "--name", "laptop", "--json")
	var k struct{ ID, Key, Prefix, Tenant, User string }
	if code != 0 || json.Unmarshal([]byte(out), &k) != nil || !auth.LooksLikeAPIKey(k.Key) || k.Tenant != "team" || k.User != "alice@team.example" || !strings.HasPrefix(k.Key, k.Prefix) {
		t.Fatalf("key create --json: %d %s %s", code, out, errOut)
	}
	if code, out, _ := cli("key", "list", "--tenant", "team"); code != 0 || strings.Contains(out, k.Key) || !strings.Contains(out, k.ID) || !strings.Contains(out, "active") {
		t.Fatalf("key list must show the key's id and prefix, never the key: %d %s", code, out)
	}
	// the key authenticates as alice, in tenant team
	cfg := config.Default()
	cfg.DataDir = data
	db, err := openSQL(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	a := &identity.Authenticator{Mode: identity.Mode{Keys: true}, Store: db}
	p, err := a.Authenticate(context.Background(), "Bearer "+k.Key)
	if err != nil || p.Tenant != "team" || p.Email != "alice@team.example" || !p.IsAdmin() {
		t.Fatalf("Authenticate with the new key = %+v, %v", p, err)
	}
	db.Close()
	// knowledge bases and grants in the tenant
	if code, _, errOut := cli("kb", "create", "handbook", "--tenant", "team"); code != 0 {
		t.Fatalf("kb create --tenant: %d %s", code, errOut)
	}
	if code, out, _ := cli("kb", "list"); code != 0 || strings.Contains(out, "handbook") {
		t.Fatalf("the local tenant lists another tenant's knowledge base: %s", out)
	}
	cli("user", "create", "carol@team.example", "--tenant", "team")
	if code, out, errOut := cli("kb", "grant", "handbook", "carol@team.example", "--tenant", "team", "--role", "editor", "--json"); code != 0 || !strings.Contains(out, `"role": "editor"`) {
		t.Fatalf("kb grant: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := cli("kb", "grant", "handbook", "nobody@team.example", "--tenant", "team"); code == 0 || !strings.Contains(errOut, "no user") {
		t.Fatalf("grant to an unknown user: %d %s", code, errOut)
	}
	if code, _, errOut := cli("kb", "revoke", "handbook", "carol@team.example", "--tenant", "team"); code != 0 {
		t.Fatalf("kb revoke: %d %s", code, errOut)
	}
	if code, _, errOut := cli("kb", "revoke", "handbook", "carol@team.example", "--tenant", "team"); code == 0 || !strings.Contains(errOut, "no role") {
		t.Fatalf("second revoke: %d %s", code, errOut)
	}
	// revoke by id alone (an operator with a leaked key's id)
	if code, out, errOut := cli("key", "revoke", k.ID); code != 0 || !strings.Contains(out, "revoked") {
		t.Fatalf("key revoke: %d %s %s", code, out, errOut)
	}
	if code, out, _ := cli("key", "list", "--tenant", "team", "--json"); code != 0 || !strings.Contains(out, "revoked_at") {
		t.Fatalf("key list after revoke: %s", out)
	}
	// deleting the knowledge base from the command line is audited like the API's delete
	if code, _, errOut := cli("kb", "delete", "handbook", "--tenant", "team"); code != 0 {
		t.Fatalf("kb delete --tenant: %d %s", code, errOut)
	}
	db, _ = openSQL(context.Background(), cfg)
	defer db.Close()
	a.Store = db
	if _, err := a.Authenticate(context.Background(), "Bearer "+k.Key); err == nil {
		t.Fatal("a revoked key still authenticates")
	}
	entries, err := db.ListAudit(context.Background(), "team", 100)
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]int{}
	for _, en := range entries {
		actions[en.Action]++
		if !strings.HasPrefix(en.Actor, "cli:") {
			t.Errorf("audit entry %s names actor %q, want cli:<os user>", en.Action, en.Actor)
		}
	}
	for _, want := range []string{"user.create", "key.create", "key.revoke", "kb.create", "kb.grant", "kb.revoke", "kb.delete"} {
		if actions[want] == 0 {
			t.Errorf("the audit log lacks %s: %v", want, actions)
		}
	}
}

// docmind search and ask with --tenant and --user see only what that user may read, as the server's
// requests of that user do; the operator (no --user) sees the whole tenant.
func TestSearchAskAsUser(t *testing.T) {
	data, docs := t.TempDir(), t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, append(args, "--data", data)...)
	}
	for name, text := range map[string]string{
		"open.md":   "# Open handbook\n\nThe cafeteria opens at eight. Its password is zqxopenword.\n",
		"secret.md": "# Board minutes\n\nThe acquisition code word is zqxsecretword. Board members only.\n",
	} {
		if err := os.WriteFile(filepath.Join(docs, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for kb, file := range map[string]string{"handbook": "open.md", "board": "secret.md"} {
		if code, _, errOut := cli("ingest", "--tenant", "team", "--kb", kb, filepath.Join(docs, file)); code != 0 {
			t.Fatalf("ingest %s: %d %s", kb, code, errOut)
		}
	}
	cli("user", "create", "ben@team.example", "--tenant", "team")
	cli("user", "create", "nobody@team.example", "--tenant", "team")
	if code, _, errOut := cli("kb", "grant", "handbook", "ben@team.example", "--tenant", "team", "--role", "reader"); code != 0 {
		t.Fatalf("grant: %d %s", code, errOut)
	}
	// the operator finds the board's word: the checks below could fail
	if code, out, errOut := cli("search", "--tenant", "team", "--json", "acquisition code word zqxsecretword"); code != 0 || !strings.Contains(out, "zqxsecretword") {
		t.Fatalf("operator search: %d %s %s", code, out, errOut)
	}
	if code, out, errOut := cli("ask", "--tenant", "team", "--json", "What is the acquisition code word?"); code != 0 || !strings.Contains(out, "zqxsecretword") {
		t.Fatalf("operator ask: %d %.300s %s", code, out, errOut)
	}
	// ben reads the handbook only
	if code, out, errOut := cli("search", "--tenant", "team", "--user", "ben@team.example", "--json", "acquisition code word zqxsecretword"); code != 0 || strings.Contains(out, "zqxsecretword") {
		t.Fatalf("ben's search shows the board's document: %d %.300s %s", code, out, errOut)
	}
	if code, out, errOut := cli("search", "--tenant", "team", "--user", "ben@team.example", "--json", "cafeteria password zqxopenword"); code != 0 || !strings.Contains(out, "zqxopenword") {
		t.Fatalf("ben's search misses his own handbook: %d %.300s %s", code, out, errOut)
	}
	if code, out, errOut := cli("ask", "--tenant", "team", "--user", "ben@team.example", "--json", "What is the acquisition code word?"); code != 0 || strings.Contains(out, "zqxsecretword") {
		t.Fatalf("ben's ask shows the board's document: %d %.300s %s", code, out, errOut)
	}
	if code, _, errOut := cli("search", "--tenant", "team", "--user", "ben@team.example", "--kb", "board", "code word"); code == 0 {
		t.Fatalf("ben searching the board by name: exit 0 %s, want refused", errOut)
	}
	// a user with no grant, and one who does not exist, are refused; another tenant's user is unknown here
	for _, u := range []string{"nobody@team.example", "ghost@team.example"} {
		if code, out, _ := cli("search", "--tenant", "team", "--user", u, "code word"); code == 0 {
			t.Errorf("search --user %s: exit 0 %s, want refused", u, out)
		}
	}
	if code, out, _ := cli("search", "--user", "ben@team.example", "code word"); code == 0 {
		t.Errorf("ben searched the local tenant: exit 0 %s", out)
	}
}
