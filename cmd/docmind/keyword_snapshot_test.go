package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/config"
	"github.com/docmind/docmind/shared/rag"
)

// The BM25 snapshot across processes: an ingest leaves it beside the database, the next open reads it
// (nothing re-indexed) and finds what the index found before, a corrupt file is rebuilt from SQL and
// written again at close, and a document ingested by another process is re-indexed from SQL.
func TestKeywordSnapshotAcrossOpens(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	ingestFile := func(name, text string) {
		t.Helper()
		file := filepath.Join(t.TempDir(), name)
		os.WriteFile(file, []byte(text), 0o644)
		if code, out, errOut := runCLI(t, nil, "ingest", "--kb", "manuals", "--data", data, file); code != 0 {
			t.Fatalf("ingest: %d %s %s", code, out, errOut)
		}
	}
	ingestFile("policy.md", largeDoc(40))
	cfg := config.Default()
	cfg.DataDir = data
	path := keywordSnapshotPath(cfg)
	if path != filepath.Join(data, "docmind.db.bm25") {
		t.Fatalf("snapshot path %s", path)
	}
	open := func() (*Stores, int) {
		t.Helper()
		s, err := OpenStores(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := s.Keyword.Search(ctx, "waiting period insured sum", 50, rag.Filter{Tenant: cfg.Tenant})
		if err != nil {
			t.Fatal(err)
		}
		return s, len(hits)
	}
	s, n := open()
	if rep := s.KeywordLoad; !rep.Snapshot || rep.Kept != 1 || rep.Reindexed != 0 {
		t.Fatalf("after ingest: %+v", rep)
	}
	if n != 40 {
		t.Fatalf("%d hits from the snapshot, want 40", n)
	}
	s.Close()

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-3] ^= 0xff
	os.WriteFile(path, b, 0o644)
	s, n = open()
	if rep := s.KeywordLoad; rep.Snapshot || !strings.Contains(rep.Reason, "checksum") || n != 40 {
		t.Fatalf("corrupt snapshot: %+v, %d hits", rep, n)
	}
	s.Close() // rewrites it

	s, _ = open()
	if !s.KeywordLoad.Snapshot {
		t.Fatalf("not rewritten at close: %+v", s.KeywordLoad)
	}
	s.Close()

	// another process changes SQL and its snapshot is lost (kill -9): the old one is read and the new
	// document re-indexed from SQL
	old, _ := os.ReadFile(path)
	ingestFile("second.md", "# Annex\n\nThe waiting period of the annex is ninety days.\n")
	os.WriteFile(path, old, 0o644)
	s, n = open()
	defer s.Close()
	if rep := s.KeywordLoad; !rep.Snapshot || rep.Kept != 1 || rep.Reindexed != 1 || n != 41 {
		t.Fatalf("after another process's ingest: %+v, %d hits", rep, n)
	}
}

// The keyword and vector indexes open side by side: a vector index that refuses to open (a changed
// embedding dimension) fails the whole open with its own error, after the keyword index loaded, and
// leaves nothing held: the next open with the right dimension takes the vector file's lock, reads the
// keyword snapshot unchanged and reports how long each index took.
func TestOpenIndexesSideBySide(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	file := filepath.Join(t.TempDir(), "policy.md")
	os.WriteFile(file, []byte(largeDoc(12)), 0o644)
	if code, out, errOut := runCLI(t, nil, "ingest", "--kb", "manuals", "--data", data, file); code != 0 {
		t.Fatalf("ingest: %d %s %s", code, out, errOut)
	}
	cfg := config.Default()
	cfg.DataDir = data
	bad := cfg
	bad.Vector.Dim = cfg.Vector.Dim / 2
	if s, err := OpenStores(ctx, bad); err == nil {
		s.Close()
		t.Fatal("opened a vector index of another dimension")
	} else if !strings.Contains(err.Error(), "open memvec vector index") || !strings.Contains(err.Error(), "dimensional vectors") {
		t.Fatalf("error %v, want the vector index's dimension error", err)
	}
	s, err := OpenStores(ctx, cfg)
	if err != nil {
		t.Fatalf("open after the failed one: %v", err)
	}
	defer s.Close()
	if rep := s.KeywordLoad; !rep.Snapshot || rep.Kept != 1 || rep.Reindexed != 0 {
		t.Fatalf("keyword load after the failed open: %+v", rep)
	}
	for _, k := range []string{"sql", "keyword", "vectors"} {
		if s.Opened[k] <= 0 {
			t.Fatalf("opened %v: no time for %s", s.Opened, k)
		}
	}
	hits, err := s.Vectors.Count(ctx, rag.Filter{Tenant: cfg.Tenant})
	if err != nil || hits != 12 {
		t.Fatalf("vectors after reopening: %d, %v", hits, err)
	}
}
