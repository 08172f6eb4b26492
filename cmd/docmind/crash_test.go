package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/store/sqlite"
)

// The child half of TestIngestSurvivesKill: `docmind ingest` in its own process, so the parent can
// SIGKILL it mid-batch.
func TestKillHelperIngest(t *testing.T) {
	args := os.Getenv("DOCMIND_TEST_KILL_CHILD")
	if args == "" {
		t.Skip("the child process of TestIngestSurvivesKill")
	}
	os.Exit(run(context.Background(), strings.Split(args, "\x1f"), os.Stdout, os.Stderr, func(string) string { return "" }))
}

// ING-05/06 style, with a real kill: `docmind ingest` of many documents is killed with SIGKILL while
// batches are being written, three times, each after the previous run's documents made progress. After
// every kill, each document the store calls ready has all its chunk rows and exactly its vectors, and no
// document that is not ready has chunk rows (a batch lands whole or not at all). A last run finishes
// the folder and everything is ready and consistent.
func TestIngestSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns docmind ingest processes")
	}
	dir, data := t.TempDir(), t.TempDir()
	const docs = 600
	for i := range docs {
		var b strings.Builder
		fmt.Fprintf(&b, "# Policy %d\n\n", i)
		for s := range 4 {
			fmt.Fprintf(&b, "## Section %d\n\nPolicy %d section %d allows %d days of leave for staff in team %d, and requests go through the portal at least %d days ahead.\n\n",
				s, i, s, i%30+s, i%7, s+2)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("p%04d.md", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.DataDir = data
	args := strings.Join([]string{"ingest", "--kb", "policies", "--data", data, "--json", dir}, "\x1f")
	child := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillHelperIngest$")
		cmd.Env = append(os.Environ(), "DOCMIND_TEST_KILL_CHILD="+args)
		return cmd
	}

	seen := 0
	for round := range 3 {
		cmd := child()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// wait until this run has made documents ready (progress), then kill it: its next batch is in flight
		var finished error
		done := false
		for !done {
			if n := readyCount(t, cfg); n > seen {
				seen = n
				break
			}
			select {
			case finished = <-exited:
				done = true
			case <-time.After(2 * time.Millisecond): // polling, no deadline: the test binary's timeout bounds it
			}
		}
		if done {
			t.Fatalf("round %d: docmind ingest finished before it could be killed (%d documents ready; exit: %v)\n%s", round, seen, finished, out.String())
		}
		time.Sleep(time.Duration(round*7) * time.Millisecond) // a different point of the next batch each round
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-exited
		ready, other := checkAfterKill(t, cfg)
		t.Logf("round %d: killed with %d documents ready, %d not ready (all consistent)", round, ready, other)
		if ready >= docs {
			t.Fatalf("round %d: every document was ready before the kill; the kill did not hit a batch", round)
		}
	}

	cmd := child()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the run after the kills: %v\n%s", err, out)
	}
	if ready, other := checkAfterKill(t, cfg); ready != docs || other != 0 {
		t.Fatalf("after the final run: %d ready, %d not ready; want %d ready", ready, other, docs)
	}
}

// readyCount reads how many documents are ready while the child writes (SQLite in WAL mode lets a
// reader in beside the writer); 0 until the database and knowledge base exist.
func readyCount(t *testing.T, cfg config.Config) int {
	t.Helper()
	if _, err := os.Stat(cfg.SQLitePath()); err != nil {
		return 0
	}
	db, err := sqlite.Open(cfg.SQLitePath(), nil)
	if err != nil {
		return 0
	}
	defer db.Close()
	ctx := context.Background()
	kb, err := db.GetKBByName(ctx, cfg.Tenant, "policies")
	if err != nil {
		return 0
	}
	docs, err := db.ListDocuments(ctx, cfg.Tenant, kb.ID, rag.StatusReady)
	if err != nil {
		return 0
	}
	return len(docs)
}

// checkAfterKill opens the stores as the next process would and checks every document: ready ones have
// chunk_count children with rows and exactly that many vectors; the others have no chunk rows.
func checkAfterKill(t *testing.T, cfg config.Config) (ready, other int) {
	t.Helper()
	ctx := context.Background()
	s, err := OpenStores(ctx, cfg)
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	defer s.Close()
	kb, err := s.SQL.GetKBByName(ctx, cfg.Tenant, "policies")
	if err != nil {
		t.Fatalf("knowledge base after the kill: %v", err)
	}
	docs, err := s.SQL.ListDocuments(ctx, cfg.Tenant, kb.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rows, err := s.SQL.ListChunks(ctx, cfg.Tenant, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		children := 0
		for _, c := range rows {
			if c.Level == rag.LevelChild {
				children++
			}
		}
		vecs, err := s.Vectors.Count(ctx, rag.Filter{Tenant: cfg.Tenant, KBIDs: []string{kb.ID}, DocumentIDs: []string{d.ID}})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != rag.StatusReady {
			other++
			if len(rows) > 0 {
				t.Errorf("%s is %s but has %d chunk rows (a half-written batch)", d.FileName, d.Status, len(rows))
			}
			continue
		}
		ready++
		if children == 0 || children != d.ChunkCount || vecs != children {
			t.Errorf("%s is ready with chunk_count %d, %d child rows and %d vectors; want all equal and > 0", d.FileName, d.ChunkCount, children, vecs)
		}
	}
	return ready, other
}
