// Package demo holds the demo knowledge base that `make run` ingests on first start: short documents
// in English and Chinese, one or more in every supported format, with headings, tables and code. All
// of it was written for docmind and may be redistributed with it.
package demo

import (
	"embed"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed corpus
var corpus embed.FS

// KB is the name of the demo knowledge base.
const KB = "demo"

// Files lists the demo file names.
func Files() []string {
	entries, _ := fs.ReadDir(corpus, "corpus")
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// Read returns one demo file.
func Read(name string) ([]byte, error) { return corpus.ReadFile("corpus/" + name) }

// Install copies the corpus into dir (normally <data>/inbox/demo) unless the marker file says it was
// installed before, so a user who deletes demo documents does not see them come back. It reports
// whether it copied anything.
func Install(dataDir string) (bool, error) {
	marker := filepath.Join(dataDir, ".demo-installed")
	if _, err := os.Stat(marker); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	dir := filepath.Join(dataDir, "inbox", KB)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	for _, name := range Files() {
		b, err := Read(name)
		if err != nil {
			return false, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return false, err
		}
	}
	return true, os.WriteFile(marker, []byte("the demo corpus was copied to inbox/demo; delete this file to copy it again\n"), 0o644)
}
