package reader

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/demo"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rank"
)

// Issue #20 item 3: a table row is answered from the row and column the question names, whatever the
// table came from. Each case reads the demo's file through the real extractor (CSV, XLSX, the PDF's
// table as its cells were extracted) or a markdown table, beside the handbook's prose as a second
// source, and wants exactly the one cell: no other row, no prose around the table, no other source.
func TestReaderTableSources(t *testing.T) {
	extracted := map[string]string{}
	read := func(t *testing.T, name string) string {
		t.Helper()
		if md, ok := extracted[name]; ok {
			return md
		}
		data, err := demo.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		res, err := extract.Extract(t.Context(), name, data, extract.Limits{})
		if err != nil {
			t.Fatalf("extract %s: %v", name, err)
		}
		extracted[name] = res.Markdown
		return res.Markdown
	}
	const leave = "## Leave\n\n| Leave type | Days per year | Notes |\n| --- | --- | --- |\n| Annual leave | 20 | full-time staff |\n| Sick leave | 10 | with a certificate after 3 days |\n| Parental leave | 90 | paid at 80% |\n"
	for _, c := range []struct {
		source, file, q, want string
	}{
		{"markdown", "", "How many days of parental leave per year?", "Days per year for Parental leave: 90 [1]"},
		{"CSV", "price-list.csv", "How many users does the Business plan allow?", "users for Business: 200 [1]"},
		{"CSV", "price-list.csv", "What support does the Enterprise plan get?", "support for Enterprise: dedicated engineer [1]"},
		{"XLSX", "sales-figures.xlsx", "What was the revenue of South in 2026-Q2?", "revenue (kUSD) for South, 2026-Q2: 365 [1]"},
		{"XLSX", "sales-figures.xlsx", "How many new customers did East get in 2026-Q1?", "new customers for East, 2026-Q1: 7 [1]"},
		// the case: the 99.9% sentence above the table is not the answer, nor read first
		{"PDF", "服务协议.pdf", "月可用性低于95%时返还多少服务费？", "返还比例 for 低于 95.0%: 50% [1]"},
		{"PDF", "服务协议.pdf", "可用性在95.0%至99.0%之间返还多少？", "返还比例 for 95.0% 至 99.0%: 25% [1]"},
		{"PDF", "服务协议.pdf", "What refund applies when monthly availability is below 95%?", "月可用性: 低于 95.0%; 返还比例: 50% [1]"},
	} {
		t.Run(c.source+"/"+c.q, func(t *testing.T) {
			body, name := leave, "handbook.md"
			if c.file != "" {
				body, name = read(t, c.file), c.file
			}
			r := Extractive{}.Read(c.q, []rank.Evidence{ev(name, body, 1), ev("handbook.md", handbook, 0.9)})
			got := quotedLines(r.Answer)
			if len(got) != 1 || got[0] != c.want || !r.Table {
				t.Errorf("got %q (table %v), want only %q\n%s", got, r.Table, c.want, r.Answer)
			}
			if strings.Contains(r.Answer, "99.9%") {
				t.Errorf("the 99.9%% line is quoted:\n%s", r.Answer)
			}
		})
	}
}
