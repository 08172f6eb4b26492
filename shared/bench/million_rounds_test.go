package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// TestMeasureMillionRounds: the four rounds ask the queries file in order, each round its own queries
// while the file has enough (cold, warm-up, steady, concurrent), and cycle the file only when it runs out.
func TestMeasureMillionRounds(t *testing.T) {
	for _, tc := range []struct{ queries, reps int }{{60, 10}, {25, 10}} {
		t.Run(fmt.Sprintf("%d queries, %d a round", tc.queries, tc.reps), func(t *testing.T) {
			qs := make([]string, tc.queries)
			for i := range qs {
				qs[i] = fmt.Sprintf("q%03d", i)
			}
			qfile := filepath.Join(t.TempDir(), "queries.txt")
			if err := os.WriteFile(qfile, []byte(strings.Join(qs, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var asked []string
			open := func(context.Context, string) (*Local, error) {
				return &Local{
					Retrieve: func(_ context.Context, q string) (int, error) {
						mu.Lock()
						defer mu.Unlock()
						asked = append(asked, q)
						return 1, nil
					},
					Reconcile: func(context.Context) (int, int, int, error) { return 0, 0, 0, nil },
					Close:     func() error { return nil },
				}, nil
			}
			res, err := MeasureMillion(context.Background(), open, []string{t.TempDir(), qfile, fmt.Sprint(tc.reps), "3"})
			if err != nil {
				t.Fatal(err)
			}
			r := tc.reps
			if len(res.ColdMS) != r || len(res.LatencyMS) != r || len(res.ConcurrentMS) != r || res.Warm != WarmFactor*r {
				t.Fatalf("rounds of %d cold, %d warm, %d steady, %d concurrent, want %d, %d, %d, %d",
					len(res.ColdMS), res.Warm, len(res.LatencyMS), len(res.ConcurrentMS), r, WarmFactor*r, r, r)
			}
			want := make([]string, (WarmFactor+3)*r)
			for i := range want {
				want[i] = qs[i%len(qs)]
			}
			if len(asked) != len(want) {
				t.Fatalf("asked %d queries, want %d", len(asked), len(want))
			}
			serialEnd := (WarmFactor + 2) * r
			if !slices.Equal(asked[:serialEnd], want[:serialEnd]) {
				t.Errorf("serial rounds asked %v, want %v", asked[:serialEnd], want[:serialEnd])
			}
			got, wantConc := slices.Clone(asked[serialEnd:]), slices.Clone(want[serialEnd:])
			slices.Sort(got)
			slices.Sort(wantConc)
			if !slices.Equal(got, wantConc) { // in flight at once: any order
				t.Errorf("concurrent round asked %v, want %v", got, wantConc)
			}
			if tc.queries >= len(want) {
				seen := map[string]bool{}
				for _, q := range asked {
					if seen[q] {
						t.Errorf("%s asked twice although the file has %d queries", q, tc.queries)
					}
					seen[q] = true
				}
			}
			if res.FirstMS != res.ColdMS[0] || len(res.ColdBlocks) != 1 || len(res.Blocks) != 1 {
				t.Errorf("first %v of cold %v; %d cold blocks and %d steady ones for %d queries", res.FirstMS, res.ColdMS, len(res.ColdBlocks), len(res.Blocks), r)
			}
		})
	}
}
