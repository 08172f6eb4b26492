package answer

import (
	"os"
	"path/filepath"
)

// The trust fixtures (shared/answer/testdata/trust) are documents the reader, the claim checks and the
// pipeline tests all read: a handbook, a sales table, a price table, and a distractor paragraph that
// shares words with every question.
var (
	handbook = fixture("handbook.md")
	sales    = fixture("sales.md")
	prices   = fixture("prices.md")
	prose    = fixture("prose.txt")
)

func fixture(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata/trust", name))
	if err != nil {
		panic(err) // a missing fixture fails every test of the package, loudly
	}
	return string(b)
}
