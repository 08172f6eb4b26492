// Package sqlschema embeds docmind's versioned SQL migrations, one folder per dialect. Files are named
// NNNN_name.sql; each is a list of statements separated by ";" at the end of a line, written so that
// running it twice is harmless (IF NOT EXISTS everywhere).
package sqlschema

import (
	"embed"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed mysql/*.sql sqlite/*.sql
var files embed.FS

// Migration is one versioned schema step.
type Migration struct {
	Version    int
	Name       string
	Statements []string
}

// Migrations returns the dialect's migrations ("mysql" or "sqlite") in version order.
func Migrations(dialect string) ([]Migration, error) {
	entries, err := files.ReadDir(dialect)
	if err != nil {
		return nil, fmt.Errorf("no migrations for dialect %q", dialect)
	}
	var out []Migration
	for _, e := range entries {
		name := e.Name()
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v < 1 {
			return nil, fmt.Errorf("migration file %s: name must be NNNN_name.sql", name)
		}
		body, err := files.ReadFile(path.Join(dialect, name))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: rest, Statements: split(string(body))})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("two migrations with version %d", out[i].Version)
		}
	}
	return out, nil
}

// split cuts a file into statements at ";" that ends a line, dropping "--" comment lines.
func split(body string) []string {
	var stmts []string
	var cur strings.Builder
	for _, line := range strings.Split(body, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			stmts = append(stmts, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		stmts = append(stmts, s)
	}
	return stmts
}
