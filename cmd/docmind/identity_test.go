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
	"github.com/docmind/docmind/shared/rag"
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
	if code, out, errOut := cli("kb", "grant", "handbook", "carol@team.example", "--tenant", "team", "--role", "editor", "--json"); code != 0 || !strings.Contains(out, `"role": "editor"`) || strings.Contains(out, "0001-01-01") {
		t.Fatalf("kb grant (with the grant's time): %d %s %s", code, out, errOut)
	}
	if code, out, _ := cli("key", "list", "--tenant", "team"); code != 0 || !strings.Contains(out, "alice@team.example") {
		t.Fatalf("key list names the owner by email: %d %s", code, out)
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
	// a second revoke is an error, not a silent success (and not a second key.revoke in the log)
	if code, _, errOut := cli("key", "revoke", k.ID); code == 0 || !strings.Contains(errOut, "already revoked") || strings.Contains(errOut, "docmind: docmind:") {
		t.Fatalf("revoking a revoked key: %d %s", code, errOut)
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
	if actions["key.revoke"] != 1 {
		t.Errorf("%d key.revoke entries for one key revoked twice, want 1", actions["key.revoke"])
	}
}

// Finding 5 of the issue 10 review: an admin who leaves is demoted or removed. user set-role changes the
// role their keys act with at once; user delete revokes every key and role; tenant list shows the tenants.
func TestUserSetRoleAndDelete(t *testing.T) {
	data := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, append(args, "--data", data)...)
	}
	cli("user", "create", "dana@team.example", "--tenant", "team", "--role", "admin")
	cli("user", "create", "eli@other.example", "--tenant", "other")
	cli("kb", "create", "handbook", "--tenant", "team")
	if code, _, errOut := cli("kb", "grant", "handbook", "dana@team.example", "--tenant", "team", "--role", "owner"); code != 0 {
		t.Fatalf("grant: %d %s", code, errOut)
	}
	var keys [2]string
	for i := range keys {
		code, out, errOut := cli("key", "create", "--tenant", "team", "--user", "dana@team.example", "--json")
		var k struct{ Key string }
		if code != 0 || json.Unmarshal([]byte(out), &k) != nil {
			t.Fatalf("key create: %d %s %s", code, out, errOut)
		}
		keys[i] = k.Key
	}
	cfg := config.Default()
	cfg.DataDir = data
	authAs := func(key string) (rag.Principal, error) {
		t.Helper()
		db, err := openSQL(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		a := &identity.Authenticator{Mode: identity.Mode{Keys: true}, Store: db}
		return a.Authenticate(context.Background(), "Bearer "+key)
	}
	if p, err := authAs(keys[0]); err != nil || !p.IsAdmin() {
		t.Fatalf("before: %+v, %v; want admin", p, err)
	}
	if code, out, errOut := cli("user", "set-role", "dana@team.example", "--tenant", "team", "--role", "member", "--json"); code != 0 || !strings.Contains(out, `"role": "member"`) {
		t.Fatalf("user set-role: %d %s %s", code, out, errOut)
	}
	if p, err := authAs(keys[0]); err != nil || p.IsAdmin() {
		t.Fatalf("after set-role member: %+v, %v; want a member", p, err)
	}
	for _, bad := range [][]string{
		{"user", "set-role", "dana@team.example", "--tenant", "team"},                     // no --role
		{"user", "set-role", "dana@team.example", "--tenant", "team", "--role", "root"},   // not a role
		{"user", "set-role", "ghost@team.example", "--tenant", "team", "--role", "admin"}, // no such user
		{"user", "delete", "eli@other.example", "--tenant", "team"},                       // another tenant's
	} {
		if code, _, _ := cli(bad...); code == 0 {
			t.Errorf("%v: exit 0, want refused", bad)
		}
	}
	code, out, errOut := cli("user", "delete", "dana@team.example", "--tenant", "team", "--json")
	if code != 0 || !strings.Contains(out, `"keys_revoked": 2`) {
		t.Fatalf("user delete: %d %s %s", code, out, errOut)
	}
	for i, k := range keys {
		if _, err := authAs(k); !rag.Is(err, rag.KindUnauthenticated) {
			t.Errorf("key %d of the deleted user: %v; want Unauthenticated", i, err)
		}
	}
	if code, out, _ := cli("kb", "grant", "handbook", "dana@team.example", "--tenant", "team", "--role", "reader"); code == 0 {
		t.Errorf("granting to the deleted user: exit 0 %s", out)
	}
	if code, out, _ := cli("user", "list", "--tenant", "team"); code != 0 || strings.Contains(out, "dana@") {
		t.Errorf("user list after delete: %d %s", code, out)
	}
	if code, out, errOut := cli("tenant", "list"); code != 0 || !strings.Contains(out, "team\t0 users") || !strings.Contains(out, "other\t1 users") {
		t.Errorf("tenant list: %d %s %s", code, out, errOut)
	}
	db, err := openSQL(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries, err := db.ListAudit(context.Background(), "team", 100)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		if strings.HasPrefix(e.Action, "user.") {
			got = append(got, e.Action+" "+e.Detail)
		}
	}
	joined := strings.Join(got, "; ")
	if !strings.Contains(joined, "user.set_role dana@team.example admin -> member") || !strings.Contains(joined, "user.delete dana@team.example, 2 keys revoked") {
		t.Errorf("the audit log's user entries: %s", joined)
	}
}

// tenant create is audited when it creates the tenant, not when the tenant already exists (nothing
// changed), and says which happened.
func TestTenantCreateAuditsOnlyACreation(t *testing.T) {
	data := t.TempDir()
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, append(args, "--data", data)...)
	}
	for i, want := range []bool{true, false, false} {
		code, out, errOut := cli("tenant", "create", "acme", "--json")
		var got struct {
			Tenant  string
			Created bool
		}
		if code != 0 || json.Unmarshal([]byte(out), &got) != nil || got.Tenant != "acme" || got.Created != want {
			t.Fatalf("tenant create #%d: %d %q %s, want created %v", i+1, code, out, errOut, want)
		}
	}
	if code, out, _ := cli("tenant", "create", "acme"); code != 0 || !strings.Contains(out, "tenant acme exists") {
		t.Fatalf("tenant create of an existing tenant: %d %q", code, out)
	}
	cfg := config.Default()
	cfg.DataDir = data
	db, err := openSQL(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries, err := db.ListAudit(context.Background(), "acme", 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Action == "tenant.create" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d tenant.create entries after one creation and three repeats, want 1", n)
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
