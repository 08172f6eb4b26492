package main

import (
	"context"
	"encoding/json"
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
