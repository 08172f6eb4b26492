// Package answertest holds the trust fixtures that the tests of the answer packages share (the pipeline,
// the offline reader, the claim checks and the calibration): a handbook, a sales table, a price table, a
// distractor paragraph that shares words with every question, and the demo's sales-figures.xlsx as the
// extractor writes it. Only tests import it.
package answertest

import "embed"

//go:embed trust
var files embed.FS

// The fixtures' texts, read once.
var (
	Handbook       = fixture("handbook.md")
	Sales          = fixture("sales.md")
	Prices         = fixture("prices.md")
	Prose          = fixture("prose.txt")
	DemoSalesTable = fixture("demo-sales.md")
)

func fixture(name string) string {
	b, err := files.ReadFile("trust/" + name)
	if err != nil {
		panic(err) // a missing fixture fails every test that imports the package, loudly
	}
	return string(b)
}
