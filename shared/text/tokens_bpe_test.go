package text

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Seed #33: the token budget must never be exceeded because the estimate was low. EstimateTokens is
// checked against a real BPE tokenizer (cl100k_base, loaded offline) on English prose, Chinese, markdown
// tables and Go source taken from this repository: it may over-count, never under-count.
func TestEstimateNeverUnderCountsBPE(t *testing.T) {
	tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader())
	enc, err := tiktoken.GetEncoding("cl100k_base")
	if err != nil {
		t.Fatal(err)
	}
	var samples []string
	add := func(path string, split string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strings.Split(string(b), split) {
			if strings.TrimSpace(s) != "" {
				samples = append(samples, s)
			}
		}
	}
	corpus := "../demo/corpus"
	for _, f := range []string{"docmind-guide.md", "安心保险产品条款.md", "release-notes.txt", "price-list.csv"} {
		add(filepath.Join(corpus, f), "\n\n")
	}
	for _, f := range []string{"tokens.go", "analyze.go", "porter.go", "../chunk/chunk.go", "../bm25/bm25.go"} {
		add(f, "\n\n") // Go source: paragraphs of code
	}
	over, worst := 0.0, 10.0
	for _, s := range samples {
		est, real := EstimateTokens(s), len(enc.Encode(s, nil, nil))
		if est < real {
			t.Errorf("under-count: estimate %d < %d real tokens for %q", est, real, s[:min(len(s), 80)])
		}
		if real > 0 {
			r := float64(est) / float64(real)
			over += r
			worst = min(worst, r)
		}
	}
	t.Logf("%d samples, estimate/real: mean %.2f, lowest %.2f", len(samples), over/float64(len(samples)), worst)
}
