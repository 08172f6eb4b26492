package reader

import (
	"fmt"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rank"
)

// quotedLines are the answer's "- ... [n]" lines, without the notice.
func quotedLines(answer string) []string {
	var out []string
	for _, l := range strings.Split(answer, "\n") {
		if strings.HasPrefix(l, "- ") {
			out = append(out, strings.TrimPrefix(l, "- "))
		}
	}
	return out
}

// Issue #13 review, finding 6: a one-cell table answer names its row, and rows the question cannot
// tell apart are all listed; a row the question names is answered alone.
func TestReaderTableRowKeys(t *testing.T) {
	const regions = `| region | quarter | revenue (kUSD) | new customers |
| --- | --- | --- | --- |
| North | 2026-Q1 | 420 | 12 |
| North | 2026-Q2 | 515 | 15 |
| South | 2026-Q2 | 365 | 11 |
| East | 2026-Q2 | 330 | 10 |`
	for _, c := range []struct {
		name, q string
		want    []string
	}{
		{"no region named: every Q2 row, each with its region", "What was the total revenue in 2026-Q2?", []string{
			"revenue (kUSD) for North, 2026-Q2: 515 [1]",
			"revenue (kUSD) for South, 2026-Q2: 365 [1]",
			"revenue (kUSD) for East, 2026-Q2: 330 [1]",
		}},
		{"the region named: its row alone", "What was the South region revenue in 2026-Q2?", []string{"revenue (kUSD) for South, 2026-Q2: 365 [1]"}},
		// the row label is printed even when the question matched only another cell
		{"a column and one row", "How many new customers in 2026-Q1?", []string{"new customers for North, 2026-Q1: 12 [1]"}},
		// region alone does not tell the rows apart: the quarter names the row too
		{"a row named by its region", "How many new customers in the East?", []string{"new customers for East, 2026-Q2: 10 [1]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Extractive{}.Read(c.q, []rank.Evidence{ev("sales.xlsx", regions, 1), ev("notes.md", prose, 0.9)})
			got := quotedLines(r.Answer)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") || !r.Table {
				t.Errorf("%s\ngot  %q\nwant %q", c.q, got, c.want)
			}
		})
	}
}

// Rows the question cannot tell apart are listed up to MaxSentences, past the per-source limit: four
// of five regions would pass for the whole table.
func TestReaderTiedRowsPastPerSource(t *testing.T) {
	table := "| region | quarter | revenue (kUSD) |\n| --- | --- | --- |\n"
	for _, r := range []string{"North", "South", "East", "West", "Central"} {
		table += "| " + r + " | 2026-Q2 | " + fmt.Sprint(100+len(r)) + " |\n"
	}
	r := Extractive{}.Read("What was the revenue in 2026-Q2?", []rank.Evidence{ev("sales.xlsx", table, 1)})
	if got := quotedLines(r.Answer); len(got) != 5 || !strings.Contains(r.Answer, "for Central, 2026-Q2: 107 [1]") {
		t.Errorf("want the five rows, got %q", got)
	}
}

// A numeric first column (a row number) is not the row's name; the first column of words is.
func TestReaderRowLabelsSkipNumbers(t *testing.T) {
	const staff = "| # | name | city | phone |\n| --- | --- | --- | --- |\n| 1 | Anna Weber | Berlin | 4411 |\n| 2 | Rui Costa | Lisbon | 4520 |"
	r := Extractive{}.Read("What is the phone number in Lisbon?", []rank.Evidence{ev("staff.csv", staff, 1)})
	if got := quotedLines(r.Answer); len(got) != 1 || got[0] != "phone for Rui Costa, Lisbon: 4520 [1]" {
		t.Errorf("got %q", got)
	}
}

// rowKeys names the row by its label (the first column) and the cells the question matched, never
// by the column asked for.
func TestTableRowKeys(t *testing.T) {
	for _, c := range []struct {
		name    string
		keyCols []int
		col     int
		want    string
	}{
		{"matched quarter only, no labels known", []int{1}, 2, "revenue for North, 2026-Q2: 515"},
		{"matched region and quarter", []int{0, 1}, 2, "revenue for North, 2026-Q2: 515"},
		{"asked for the label column", []int{2}, 0, "region for 515: North"},
		{"labels tell the rows apart", nil, 2, "revenue for North, 2026-Q2: 515"},
	} {
		tr := &tableRow{header: []string{"region", "quarter", "revenue"}, cells: []string{"North", "2026-Q2", "515"}, keyCols: c.keyCols, col: c.col}
		if c.keyCols == nil {
			tr.labels = []int{0, 1}
		}
		if got := tr.String(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// Finding 7: another source is quoted only for a word of what is asked about; a line sharing only the
// question's verb ("include") is not.
func TestReaderOtherSourceNeedsContentTerm(t *testing.T) {
	evs := []rank.Evidence{
		ev("price-list.csv", prices, 1),
		ev("release-notes.txt", "Known limits: scanned PDFs need OCR, which is not included.", 0.8),
		ev("faq.html", "The Business plan adds single sign-on for every user.", 0.7),
	}
	r := Extractive{}.Read("What does the Business plan include?", evs)
	if strings.Contains(r.Answer, "not included") || strings.Contains(r.Answer, "[2]") {
		t.Errorf("a line sharing only the verb was quoted:\n%s", r.Answer)
	}
	if !strings.Contains(r.Answer, "plan: Business; monthly price (USD): 199") {
		t.Errorf("the Business row is missing:\n%s", r.Answer)
	}
	// a line of another source that brings a content word the row lacks is still read
	r = Extractive{}.Read("Which plan includes single sign-on?", evs)
	if !strings.Contains(r.Answer, "single sign-on for every user. [3]") {
		t.Errorf("the line with the asked-about words is missing:\n%s", r.Answer)
	}
}

// Finding 7: a heading extracted as plain text (a PDF's "第三条 服务等级") is never quoted, and the line
// after the best one does not come from the next article.
func TestReaderSkipsPlainHeadings(t *testing.T) {
	const agreement = "docmind 服务协议\n\n第二条 数据安全\n\n客户数据按租户隔离存储，任何查询均限定在客户有权访问的知识库范围内。服务提供方不会将客户数据用于模型训练。\n\n" +
		"第三条 服务等级\n\n服务月可用性不低于 99.9%。未达到时，按下表返还服务费：\n\n第四条 协议终止\n\n任何一方提前 30 天书面通知，可终止本协议。"
	for _, q := range []string{"服务提供方会把客户数据用于模型训练吗？", "服务等级是什么？", "协议终止需要提前多久通知？"} {
		r := Extractive{}.Read(q, []rank.Evidence{ev("服务协议.pdf", agreement, 1)})
		for _, l := range quotedLines(r.Answer) {
			if strings.HasPrefix(l, "第") {
				t.Errorf("%s: a heading is quoted: %q\n%s", q, l, r.Answer)
			}
		}
		if len(quotedLines(r.Answer)) == 0 {
			t.Errorf("%s: nothing quoted:\n%s", q, r.Answer)
		}
	}
	r := Extractive{}.Read("服务提供方会把客户数据用于模型训练吗？", []rank.Evidence{ev("服务协议.pdf", agreement, 1)})
	if got := quotedLines(r.Answer); len(got) == 0 || !strings.Contains(got[len(got)-1], "模型训练") || strings.Contains(r.Answer, "99.9") {
		t.Errorf("want the data-security sentence and nothing of the next article:\n%s", r.Answer)
	}
}

func TestHeadingLine(t *testing.T) {
	for line, want := range map[string]bool{
		"第三条 服务等级":              true,
		"第一章 总则":                true,
		"第十二条":                  true,
		"Article 4 Termination": true,
		"Section 2: Data":       true,
		"第三条 服务提供方不会将客户数据用于模型训练。":                        false, // an article's text on its heading's line
		"任何一方提前 30 天书面通知，可终止本协议。":                        false,
		"Section 2 describes how data is kept, and why.": false,
		"第三方服务的费用由客户承担":                                  false, // 第三方 is no ordinal heading
	} {
		if got := headingLine(line); got != want {
			t.Errorf("headingLine(%q) = %v, want %v", line, got, want)
		}
	}
}

func TestTitleLine(t *testing.T) {
	for _, c := range []struct {
		line  string
		first bool
		want  bool
	}{
		{"docmind 服务协议", true, true},
		{"月可用性 返还比例", false, true}, // a table's header row as plain text
		{"Leave policy", false, true},
		{"支持更多文档格式", false, false}, // may be an item of a list: kept
		{"服务月可用性不低于 99.9%。", false, false},
		{"- Runs fully offline", false, false},
		{"Runs fully offline today", false, false},
		{"Q2 2027: single sign-on.", false, false},
		{"被保险人身份证明 医院诊断证明 费用清单原件", false, false}, // too long for a title
	} {
		if got := titleLine(c.line, c.first); got != c.want {
			t.Errorf("titleLine(%q, %v) = %v, want %v", c.line, c.first, got, c.want)
		}
	}
}

// A table header row extracted from a PDF as plain text is not quoted with the sentence it follows.
func TestReaderSkipsPlainTableHeader(t *testing.T) {
	const sla = "docmind 服务协议\n\n第三条 服务等级\n\n服务月可用性不低于 99.9%。未达到时，按下表返还服务费：\n\n月可用性 返还比例\n\n99.0% 至 99.9% 10%\n\n低于 95.0% 50%"
	r := Extractive{}.Read("服务月可用性是多少？", []rank.Evidence{ev("服务协议.pdf", sla, 1)})
	got := quotedLines(r.Answer)
	if len(got) == 0 || !strings.HasPrefix(got[0], "服务月可用性不低于 99.9%。") || strings.Contains(r.Answer, "返还比例") || strings.Contains(r.Answer, "docmind 服务协议") {
		t.Errorf("got %q", got)
	}
}

// A question that names a column of the top table but none of its rows gets the column for every row,
// each line naming its row by the cells that tell the rows apart, all of them past MaxSentences.
func TestReaderColumnForEveryRow(t *testing.T) {
	regions := demoSalesTable
	r := Extractive{}.Read("Which region had the most new customers?", []rank.Evidence{ev("sales.xlsx", regions, 1), ev("guide.md", "A new or changed file is ingested by every customer.", 0.9)})
	want := []string{"new customers for North, 2026-Q1: 12 [1]", "new customers for North, 2026-Q2: 15 [1]", "new customers for South, 2026-Q1: 9 [1]",
		"new customers for South, 2026-Q2: 11 [1]", "new customers for East, 2026-Q1: 7 [1]", "new customers for East, 2026-Q2: 10 [1]"}
	if got := quotedLines(r.Answer); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	// one label column is enough when it tells the rows apart; a row without the value is listed too
	r = Extractive{}.Read("What is the monthly price?", []rank.Evidence{ev("price-list.csv", prices+"\n| Enterprise | contact sales | unlimited | unlimited |", 1)})
	want = []string{"monthly price (USD) for Starter: 0 [1]", "monthly price (USD) for Team: 49 [1]", "monthly price (USD) for Business: 199 [1]", "monthly price (USD) for Enterprise: contact sales [1]"}
	if got := quotedLines(r.Answer); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestContentTerm(t *testing.T) {
	for term, want := range map[string]bool{"busi": true, "includ": false, "协议": true, "议的": false, "了吗": false, "是由": true} {
		if got := contentTerm(term); got != want {
			t.Errorf("contentTerm(%q) = %v, want %v", term, got, want)
		}
	}
}

// Another passage's line that shares only a bigram across a particle with the question is not quoted.
func TestReaderOtherSourceNotForParticleBigram(t *testing.T) {
	evs := []rank.Evidence{
		ev("洞.md", "芙蓉洞全长2846米，以竖井众多、洞穴沉积物类型齐全著称。", 1),
		ev("山.md", "山洞的全部出口朝南。", 0.9),
	}
	r := Extractive{}.Read("芙蓉洞的全长是多少？", evs)
	if !strings.Contains(r.Answer, "全长2846米") || strings.Contains(r.Answer, "[2]") {
		t.Errorf("want the cave's line alone:\n%s", r.Answer)
	}
}
