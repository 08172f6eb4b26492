package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/docmind/docmind/shared/store/milvus/fakemilvus"
)

// TestMetadataMirrorCommand: with the Milvus driver, a file's front matter indexed by `docmind
// ingest` reaches its rows' metadata field as it is written (the mirror), and `docmind metadata
// mirror` copies every document's metadata again; with the embedded index there is nothing to do.
func TestMetadataMirrorCommand(t *testing.T) {
	dir := t.TempDir()
	if code, out, errOut := runCLI(t, nil, "metadata", "mirror", "--data", dir); code != 0 || !strings.Contains(out, "nothing to mirror") {
		t.Fatalf("embedded: exit %d %q %q", code, out, errOut)
	}
	srv := fakemilvus.Start(t)
	env := map[string]string{"DOCMIND_VECTOR_DRIVER": "milvus", "DOCMIND_MILVUS_ADDR": srv.Addr(), "DOCMIND_MILVUS_COLLECTION": "chunks"}
	file := filepath.Join(t.TempDir(), "policy.md")
	if err := os.WriteFile(file, []byte("---\nteam: legal\nyear: 2025\n---\n# Leave policy\n\nParental leave is sixteen weeks.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, env, "ingest", "--data", dir, "--kb", "handbook", file); code != 0 {
		t.Fatalf("ingest: exit %d %q %q", code, out, errOut)
	}
	count := func(expr string) int64 {
		c, err := milvusclient.New(context.Background(), &milvusclient.ClientConfig{Address: srv.Addr()})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		rs, err := c.Query(context.Background(), milvusclient.NewQueryOption("chunks").WithFilter(expr).WithOutputFields("count(*)").WithConsistencyLevel(entity.ClStrong))
		if err != nil {
			t.Fatal(err)
		}
		n, _ := rs.GetColumn("count(*)").GetAsInt64(0)
		return n
	}
	all := count(`tenant != ""`)
	if all == 0 || count(`meta["n"]["year"] == 2025.0 and meta["s"]["team"] == "legal"`) != all {
		t.Fatalf("after ingest, %d of %d rows carry the front matter", count(`meta["n"]["year"] == 2025.0`), all)
	}
	code, out, errOut := runCLI(t, env, "metadata", "mirror", "--data", dir)
	if code != 0 || !strings.Contains(out, "1 documents") {
		t.Fatalf("metadata mirror: exit %d %q %q", code, out, errOut)
	}
	if code, _, _ := runCLI(t, env, "metadata", "--data", dir); code != exitConfig {
		t.Fatalf("metadata without mirror: exit %d", code)
	}
}
