package chunk_test

import (
	"testing"

	"github.com/docmind/docmind/shared/bench"
	"github.com/docmind/docmind/shared/chunk"
)

func benchSplit(b *testing.B, text string) {
	b.SetBytes(int64(len(text)))
	n := 0
	for b.Loop() {
		n = len(chunk.Split(text, chunk.DefaultOptions()).Children)
	}
	b.ReportMetric(float64(n), "children")
}

// The inputs are docmind bench's: the Go specification's English and seeded synthetic Chinese.
func BenchmarkSplitEnglish(b *testing.B) { benchSplit(b, bench.EnglishText()) }
func BenchmarkSplitChinese(b *testing.B) { benchSplit(b, bench.ChineseText(300)) }
