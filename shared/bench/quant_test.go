package bench

import (
	"context"
	"strings"
	"testing"
)

// The vector-int8 suite end to end at a small size (in-process): a snapshot built through Upsert and
// Close, reopened mapped, the quantised path active, and recall measured against the exact scan.
func TestQuantSuiteSmall(t *testing.T) {
	rows, err := quantAt(context.Background(), t.TempDir(), 21_000, 64, Options{Reps: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("rows %+v", rows)
	}
	if !strings.Contains(rows[0].Note, "active true") {
		t.Fatalf("quantised path not taken: %s", rows[0].Note)
	}
	if rows[1].Ours < 0.99 || rows[1].Ours > 1 {
		t.Fatalf("recall %v", rows[1].Ours)
	}
	if rows[2].Ours <= 0 || rows[3].Ours <= 0 {
		t.Fatalf("memory %v, open %v", rows[2].Ours, rows[3].Ours)
	}
}
