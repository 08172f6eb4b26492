package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// `docmind ingest --kb NAME` is an operator channel: it refuses a knowledge base a member owns (a member
// who created "handbook" first would own what the operator ingests), naming every member and the ways
// on; --adopt adds to it once, said and audited. This knowledge base has no recorded creator (as before
// migration 0009), so demoting the member owner makes it the operator's.
func TestIngestRefusesAKnowledgeBaseAMemberOwns(t *testing.T) {
	data, docs := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(docs, "salaries.md"), []byte("# Salaries\n\nThe salary bands are confidential.\n"), 0o644)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, append(args, "--tenant", "acme", "--data", data)...)
	}
	for _, args := range [][]string{
		{"user", "create", "ben@example.com"},
		{"kb", "create", "handbook"},
		{"kb", "grant", "handbook", "ben@example.com", "--role", "owner"}, // as if ben had created it through the API
	} {
		if code, out, errOut := cli(args...); code != exitOK {
			t.Fatalf("%v: exit %d %s %s", args, code, out, errOut)
		}
	}
	documents := func() (n int, audit []string) {
		t.Helper()
		cfg := config.Default()
		cfg.DataDir = data
		db, err := sqlite.Open(cfg.SQLitePath(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		ctx := context.Background()
		kb, err := db.GetKBByName(ctx, "acme", "handbook")
		if err != nil {
			t.Fatal(err)
		}
		ds, err := db.ListDocuments(ctx, "acme", kb.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		entries, err := db.ListAudit(ctx, "acme", 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Action, "ingest.") {
				audit = append(audit, e.Action+" "+e.Actor)
			}
		}
		return len(ds), audit
	}

	code, out, errOut := cli("ingest", "--kb", "handbook", "--json", docs)
	if code != exitFail || out != "" {
		t.Errorf("ingest into ben's knowledge base: exit %d, stdout %q; want exit %d before any file", code, out, exitFail)
	}
	for _, want := range []string{"ben@example.com (owner)", "another name", "docmind kb revoke handbook", "--adopt"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("refusal %q lacks %q", errOut, want)
		}
	}
	if n, audit := documents(); n != 0 || len(audit) != 1 || audit[0] != "ingest.refused operator:cli" {
		t.Errorf("after the refusal: %d documents, audit %v; want none and one ingest.refused", n, audit)
	}

	code, out, errOut = cli("ingest", "--kb", "handbook", "--adopt", "--json", docs)
	var sum ingestSummary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || code != exitOK || sum.Documents != 1 {
		t.Fatalf("--adopt: exit %d %q %v (%s)", code, out, err, errOut)
	}
	if !strings.Contains(errOut, "owned by ben@example.com (--adopt)") || !strings.Contains(errOut, ": ben@example.com (owner)") {
		t.Errorf("--adopt does not name the owner: %q", errOut)
	}
	if n, audit := documents(); n != 1 || len(audit) != 2 || !strings.HasPrefix(audit[0], "ingest.adopt cli:") {
		t.Errorf("after --adopt: %d documents, audit %v; want 1 and an ingest.adopt", n, audit)
	}

	if code, _, errOut := cli("kb", "grant", "handbook", "ben@example.com", "--role", "editor"); code != exitOK {
		t.Fatalf("demote: %d %s", code, errOut)
	}
	os.WriteFile(filepath.Join(docs, "bands.md"), []byte("# Bands\n\nBand A starts at level one.\n"), 0o644)
	if code, out, errOut := cli("ingest", "--kb", "handbook", "--json", docs); code != exitOK {
		t.Fatalf("after demoting ben: exit %d %s %s", code, out, errOut)
	}
	if n, _ := documents(); n != 2 {
		t.Errorf("after demoting ben: %d documents, want 2", n)
	}
}

// A knowledge base a member created through the API stays refused after the member is demoted: the
// refusal and the --adopt notice name every member with its role, the creator's grants included.
func TestIngestRefusesAKnowledgeBaseAMemberCreated(t *testing.T) {
	data, docs := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(docs, "salaries.md"), []byte("# Salaries\n\nThe salary bands are confidential.\n"), 0o644)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, append(args, "--tenant", "acme", "--data", data)...)
	}
	for _, email := range []string{"ben@example.com", "cy@example.com"} {
		if code, out, errOut := cli("user", "create", email); code != exitOK {
			t.Fatalf("user create %s: exit %d %s %s", email, code, out, errOut)
		}
	}
	cfg := config.Default()
	cfg.DataDir = data
	db, err := sqlite.Open(cfg.SQLitePath(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ben, err := db.GetUserByEmail(ctx, "acme", "ben@example.com")
	if err != nil {
		t.Fatal(err)
	}
	cy, err := db.GetUserByEmail(ctx, "acme", "cy@example.com")
	if err != nil {
		t.Fatal(err)
	}
	kb := rag.KnowledgeBase{Tenant: "acme", Name: "handbook"}
	if err := db.CreateKBOwnedBy(ctx, &kb, ben.ID); err != nil { // as the API does for a member
		t.Fatal(err)
	}
	if err := db.SetMember(ctx, "acme", kb.ID, cy.ID, rag.KBReader); err != nil { // ben's grant
		t.Fatal(err)
	}
	db.Close()
	if code, _, errOut := cli("kb", "grant", "handbook", "ben@example.com", "--role", "editor"); code != exitOK {
		t.Fatalf("demote: %d %s", code, errOut)
	}

	code, out, errOut := cli("ingest", "--kb", "handbook", "--json", docs)
	if code != exitFail || out != "" {
		t.Errorf("ingest after demoting the creator: exit %d, stdout %q; want exit %d", code, out, exitFail)
	}
	for _, want := range []string{"created by ben@example.com", "ben@example.com (editor)", "cy@example.com (reader)", "--adopt"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("refusal %q lacks %q", errOut, want)
		}
	}
	code, out, errOut = cli("ingest", "--kb", "handbook", "--adopt", "--json", docs)
	if code != exitOK {
		t.Fatalf("--adopt: exit %d %s %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "created by ben@example.com, a member (--adopt)") || !strings.Contains(errOut, "ben@example.com (editor), cy@example.com (reader)") {
		t.Errorf("--adopt notice %q does not name the creator and every member with its role", errOut)
	}
}
