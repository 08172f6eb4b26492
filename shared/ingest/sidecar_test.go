package ingest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

func TestParseSidecar(t *testing.T) {
	m, err := ParseSidecar([]byte(`{"metadataAttributes": {"department": "hr", "year": 2025, "public": true,
		"tags": ["leave", "policy"],
		"owner": {"value": {"type": "STRING", "stringValue": "Ann"}, "includeForEmbedding": true},
		"rev": {"value": {"type": "NUMBER", "numberValue": 3}},
		"draft": {"value": {"type": "BOOLEAN", "booleanValue": false}},
		"regions": {"value": {"type": "STRING_LIST", "stringListValue": ["eu", "us"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if m["department"] != "hr" || m["year"] != 2025.0 || m["public"] != "true" || !slices.Equal(m["tags"].([]string), []string{"leave", "policy"}) ||
		m["owner"] != "Ann" || m["rev"] != 3.0 || m["draft"] != "false" || !slices.Equal(m["regions"].([]string), []string{"eu", "us"}) {
		t.Fatalf("ParseSidecar = %v", m)
	}
	for bad, want := range map[string]string{
		`not json`:      "not JSON",
		`{"other": {}}`: "metadataAttributes",
		`{"metadataAttributes": {"x": {"value": {"type": "DATE"}}}}`: "x: type DATE",
		`{"metadataAttributes": {"y": [1, 2]}}`:                      "y: a list holds strings only",
		`{"metadataAttributes": {"bad key": "v"}}`:                   `key "bad key"`,
		`{"metadataAttributes": {"z": {"a": 1}}}`:                    "z: an object value needs the typed form",
	} {
		if _, err := ParseSidecar([]byte(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSidecar(%s) = %v; want an error saying %q", bad, err, want)
		}
	}
}

// The sidecar is the top metadata layer; a changed sidecar re-ingests an unchanged file (and the
// same sidecar does not); the drop folder reads sidecars, never ingests one as a document, and
// follows a sidecar written, changed or removed while it runs; a bad sidecar loses only its metadata.
func TestSidecarMetadata(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	md := []byte("---\nowner: front matter\nyear: 2024\n---\n# Leave\n\nStaff get 25 days of leave.\n")
	src := Source{KBName: "kb", URI: "inbox/kb/leave.md", Name: "leave.md", Data: md, Sidecar: rag.Metadata{"owner": "sidecar", "team": "hr"}}
	rep, err := e.svc.Ingest(ctx, tenant, src)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := e.db.GetDocumentMetadata(ctx, tenant, rep.DocumentID)
	if m["owner"] != "sidecar" || m["team"] != "hr" || m["year"] != 2024.0 || m["source"] != "file" {
		t.Fatalf("metadata = %v; want the sidecar over the front matter over the derived fields", m)
	}
	if rep, _ := e.svc.Ingest(ctx, tenant, src); !rep.Skipped {
		t.Fatal("the same file with the same sidecar was re-ingested")
	}
	src.Sidecar = rag.Metadata{"owner": "sidecar", "team": "legal"}
	if rep, _ := e.svc.Ingest(ctx, tenant, src); rep.Skipped {
		t.Fatal("a changed sidecar did not re-ingest the unchanged file")
	}
	if m, _ := e.db.GetDocumentMetadata(ctx, tenant, rep.DocumentID); m["team"] != "legal" {
		t.Fatalf("metadata after the sidecar changed = %v; want team legal", m)
	}

	// the drop folder
	root := t.TempDir()
	dir := filepath.Join(root, "policies")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "travel.md"), []byte("# Travel\n\nBook economy class.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "travel.md.metadata.json"), []byte(`{"metadataAttributes": {"team": "finance"}}`), 0o644)
	os.WriteFile(filepath.Join(dir, "gifts.md"), []byte("# Gifts\n\nDeclare gifts over 50 euros.\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "gifts.md.metadata.json"), []byte(`{"metadataAttributes": {"team": ["not", 1]}}`), 0o644)
	var mu sync.Mutex
	var reports []Report
	w := &Watcher{Service: e.svc, Tenant: tenant, Root: root, Debounce: 50 * time.Millisecond,
		OnReport: func(r Report) { mu.Lock(); reports = append(reports, r); mu.Unlock() }}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { cancel(); <-done }()
	meta := func(name string) rag.Metadata {
		kb, err := e.db.GetKBByName(ctx, tenant, "policies")
		if err != nil {
			return nil
		}
		d, err := e.db.GetDocumentBySource(ctx, tenant, kb.ID, SourceURI("policies", name))
		if err != nil || d.Status != rag.StatusReady {
			return nil
		}
		m, _ := e.db.GetDocumentMetadata(ctx, tenant, d.ID)
		return m
	}
	waitFor(t, "the sidecar's metadata", func() bool { return meta("travel.md")["team"] == "finance" })
	waitFor(t, "the file with a bad sidecar, ingested without it", func() bool { m := meta("gifts.md"); return m != nil && m["team"] == nil })
	os.WriteFile(filepath.Join(dir, "travel.md.metadata.json"), []byte(`{"metadataAttributes": {"team": "travel desk"}}`), 0o644)
	waitFor(t, "a changed sidecar re-applied", func() bool { return meta("travel.md")["team"] == "travel desk" })
	os.Remove(filepath.Join(dir, "travel.md.metadata.json"))
	waitFor(t, "a removed sidecar's metadata gone", func() bool { m := meta("travel.md"); return m != nil && m["team"] == nil })

	kb, _ := e.db.GetKBByName(ctx, tenant, "policies")
	docs, _ := e.db.ListDocuments(ctx, tenant, kb.ID, "")
	for _, d := range docs {
		if strings.HasSuffix(d.FileName, SidecarSuffix) {
			t.Fatalf("a sidecar was ingested as a document: %s", d.FileName)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, r := range reports {
		if r.File == "gifts.md"+SidecarSuffix && strings.Contains(r.Error, "list holds strings only") {
			return
		}
	}
	t.Fatalf("the bad sidecar was not reported: %+v", reports)
}
