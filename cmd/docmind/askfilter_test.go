package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `docmind ingest` reads a sidecar as metadata, not as a document; `docmind ask --filter`: the answer draws only on the documents whose metadata (here front matter)
// passes; a filter nothing passes fails clearly instead of answering from everything; a malformed
// filter is a configuration error.
func TestAskFilterCommand(t *testing.T) {
	data, docs := t.TempDir(), t.TempDir()
	for name, body := range map[string]string{
		"leave-2024.md": "---\nyear: 2024\n---\n# Leave policy 2024\n\nFull-time employees get 20 days of paid annual leave each year.\n",
		"leave-2025.md": "---\nyear: 2025\n---\n# Leave policy 2025\n\nFull-time employees get 25 days of paid annual leave each year.\n",
		// a sidecar: metadata for leave-2024.md, never a document itself
		"leave-2024.md.metadata.json": `{"metadataAttributes": {"region": "eu"}}`,
	} {
		if err := os.WriteFile(filepath.Join(docs, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errOut := runCLI(t, nil, "ingest", "--kb", "hr", "--data", data, docs); code != exitOK {
		t.Fatalf("ingest: exit %d %s", code, errOut)
	}
	const q = "How many days of paid annual leave do full-time employees get?"
	code, out, errOut := runCLI(t, nil, "search", "--data", data, "--filter", `{"key":"region","eq":"eu"}`, "annual leave")
	if code != exitOK || !strings.Contains(out, "leave-2024.md") || strings.Contains(out, "leave-2025.md") || strings.Contains(out, "metadata.json") {
		t.Fatalf("search filtered by the sidecar's region: exit %d %q; want leave-2024.md alone", code, out)
	}
	for year, want := range map[string]string{"2024": "leave-2024.md", "2025": "leave-2025.md"} {
		code, out, errOut = runCLI(t, nil, "ask", "--data", data, "--json", "--filter", `{"key":"year","eq":`+year+`}`, q)
		var res askResult
		if err := json.Unmarshal([]byte(out), &res); code != exitOK || err != nil {
			t.Fatalf("ask --filter year %s: exit %d, %v: %s %s", year, code, err, out, errOut)
		}
		if len(res.Sources) == 0 {
			t.Fatalf("ask --filter year %s: no sources: %+v", year, res)
		}
		for _, s := range res.Sources {
			if s.FileName != want {
				t.Fatalf("ask --filter year %s cited %s; want only %s", year, s.FileName, want)
			}
		}
	}
	code, _, errOut = runCLI(t, nil, "ask", "--data", data, "--filter", `{"key":"year","eq":2030}`, q)
	if code == exitOK || !strings.Contains(errOut, "passes the filter") {
		t.Fatalf("ask with a filter nothing passes: exit %d %q; want a clear failure", code, errOut)
	}
	if code, _, errOut := runCLI(t, nil, "ask", "--data", data, "--filter", `{"key":"year"}`, q); code != exitConfig || !strings.Contains(errOut, "needs eq") {
		t.Fatalf("ask with a bad filter: exit %d %q; want a configuration error", code, errOut)
	}
}
