package sqlschema

import (
	"regexp"
	"slices"
	"testing"
)

func TestMigrationsParse(t *testing.T) {
	for _, d := range []string{"mysql", "sqlite"} {
		ms, err := Migrations(d)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 || ms[0].Version != 1 {
			t.Fatalf("%s: migrations %v", d, ms)
		}
		for _, m := range ms {
			if len(m.Statements) == 0 {
				t.Errorf("%s %d: no statements", d, m.Version)
			}
		}
	}
	if _, err := Migrations("postgres"); err == nil {
		t.Fatal("unknown dialect accepted")
	}
}

// The two dialects must define the same tables with the same columns in the same order, so one Go
// mapping serves both.
func TestDialectsDefineSameColumns(t *testing.T) {
	cols := func(d string) map[string][]string {
		ms, _ := Migrations(d)
		out := map[string][]string{}
		table := regexp.MustCompile(`CREATE TABLE IF NOT EXISTS (\w+) \(`)
		col := regexp.MustCompile(`(?m)^\s+([a-z_]+)\s+(VARCHAR|CHAR|TEXT|MEDIUMTEXT|BIGINT|INT|INTEGER|DOUBLE|TINYINT)`)
		for _, m := range ms {
			for _, s := range m.Statements {
				if tm := table.FindStringSubmatch(s); tm != nil {
					for _, c := range col.FindAllStringSubmatch(s, -1) {
						out[tm[1]] = append(out[tm[1]], c[1])
					}
				}
			}
		}
		return out
	}
	my, lite := cols("mysql"), cols("sqlite")
	if len(my) < 11 {
		t.Fatalf("mysql defines %d tables", len(my))
	}
	for tbl, c := range my {
		if !slices.Equal(c, lite[tbl]) {
			t.Errorf("table %s: mysql columns %v, sqlite %v", tbl, c, lite[tbl])
		}
	}
	for _, tbl := range []string{"knowledge_bases", "documents", "chunks", "conversations", "messages", "users", "api_keys", "kb_members", "memories", "idempotency", "audit_log"} {
		if len(my[tbl]) == 0 {
			t.Errorf("table %s missing", tbl)
		}
		if !slices.Contains(my[tbl], "tenant_id") {
			t.Errorf("table %s has no tenant_id scoping column", tbl)
		}
	}
}
