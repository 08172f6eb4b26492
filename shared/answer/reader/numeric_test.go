package reader

import (
	"fmt"
	"html"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/demo"
	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/extract/ooxmltest"
	"github.com/docmind/docmind/shared/rank"
)

// The question's numeric condition is compared with the table's ranges as numbers (docs/answers.md,
// "Numbers and ranges"): the row whose range holds the value asked about, or lies in the range asked
// about, is the answer, whether the table came as markdown, CSV, XLSX (each through the real
// extractor) or the demo's PDF, in English and Chinese; the neighbouring ranges are not.
func TestReaderNumericRows(t *testing.T) {
	rowsEN := [][]string{{"Monthly availability", "Service credit"}, {"< 95%", "50%"}, {"95% - 99%", "25%"}, {"99% - 99.9%", "10%"}, {">= 99.9%", "0%"}}
	rowsZH := [][]string{{"月可用性", "返还比例"}, {"95%以下", "50%"}, {"95%至99%", "25%"}, {"99%至99.9%", "10%"}, {"99.9%及以上", "不返还"}}
	extractMD := func(t *testing.T, name string, data []byte) string {
		t.Helper()
		res, err := extract.Extract(t.Context(), name, data, extract.Limits{})
		if err != nil {
			t.Fatalf("extract %s: %v", name, err)
		}
		return res.Markdown
	}
	sources := map[string]func(t *testing.T, rows [][]string) string{
		"markdown": func(_ *testing.T, rows [][]string) string { return "## Service levels\n\n" + markdownTable(rows) },
		"CSV":      func(t *testing.T, rows [][]string) string { return extractMD(t, "credits.csv", []byte(csvOf(rows))) },
		"XLSX":     func(t *testing.T, rows [][]string) string { return extractMD(t, "credits.xlsx", xlsxOf(rows)) },
	}
	for _, c := range []struct {
		rows    [][]string
		q, want string
	}{
		{rowsEN, "What service credit applies for a monthly availability of 93%?", "Service credit for < 95%: 50% [1]"},
		{rowsEN, "What service credit applies when monthly availability is below 95%?", "Service credit for < 95%: 50% [1]"},
		{rowsEN, "What service credit applies for a monthly availability of 97.5%?", "Service credit for 95% - 99%: 25% [1]"},
		{rowsEN, "What service credit applies for a monthly availability of 99.95%?", "Service credit for >= 99.9%: 0% [1]"},
		{rowsZH, "月可用性为93%时返还比例是多少？", "返还比例 for 95%以下: 50% [1]"},
		{rowsZH, "月可用性低于95%时返还比例是多少？", "返还比例 for 95%以下: 50% [1]"},
		{rowsZH, "月可用性为99.5%时返还比例是多少？", "返还比例 for 99%至99.9%: 10% [1]"},
	} {
		for name, source := range sources {
			t.Run(name+"/"+c.q, func(t *testing.T) {
				body := source(t, c.rows)
				r := Extractive{}.Read(c.q, []rank.Evidence{ev("sla."+strings.ToLower(name), body, 1), ev("handbook.md", handbook, 0.9)})
				if got := quotedLines(r.Answer); len(got) != 1 || got[0] != c.want {
					t.Errorf("got %q, want only %q\n%s\n--- table\n%s", got, c.want, r.Answer, body)
				}
			})
		}
	}
	// the demo's PDF, its table as the extractor found it: a value the table does not write
	data, err := demo.Read("服务协议.pdf")
	if err != nil {
		t.Fatal(err)
	}
	pdf := extractMD(t, "服务协议.pdf", data)
	for q, want := range map[string]string{
		"月可用性为93%时返还多少服务费？":   "返还比例 for 低于 95.0%: 50% [1]",
		"月可用性为97%时返还多少服务费？":   "返还比例 for 95.0% 至 99.0%: 25% [1]",
		"月可用性为99.5%时返还多少服务费？": "返还比例 for 99.0% 至 99.9%: 10% [1]",
	} {
		r := Extractive{}.Read(q, []rank.Evidence{ev("服务协议.pdf", pdf, 1), ev("handbook.md", handbook, 0.9)})
		if got := quotedLines(r.Answer); len(got) != 1 || got[0] != want {
			t.Errorf("PDF %s: got %q, want only %q\n%s\n--- extracted\n%s", q, got, want, r.Answer, pdf)
		}
	}
}

// In prose, the sentence whose condition meets the question's number is quoted, and the sentence of
// the neighbouring range is not: days, years and amounts, English and Chinese.
func TestReaderNumericProse(t *testing.T) {
	const policy = "# Approvals\n\nLeave of up to 30 days is approved by the line manager. Leave of more than 30 days is approved by the HR director.\n\n" +
		"Employees with less than 3 years of service get 20 days of annual leave. Employees with at least 3 years of service get 25 days of annual leave.\n\n" +
		"Expenses of up to 500 yuan are approved by the team lead. Expenses of more than 500 yuan are approved by the finance director.\n"
	const zh = "# 审批\n\n请假不超过30天的，由部门经理审批。请假超过30天的，由人事总监审批。\n\n工龄不满3年的员工每年享有5天年假。工龄满3年及以上的员工每年享有10天年假。\n\n" +
		"报销金额在500元以下的，由组长审批。报销金额超过500元的，由财务总监审批。\n"
	for _, c := range []struct{ body, q, want, not string }{
		{policy, "Who approves leave of more than 30 days?", "HR director", "line manager"},
		{policy, "Who approves a leave of 45 days?", "HR director", "line manager"},
		{policy, "Who approves a leave of 12 days?", "line manager", "HR director"},
		{policy, "How many days of annual leave do employees with 5 years of service get?", "25 days", "20 days"},
		{policy, "How many days of annual leave do employees with 2 years of service get?", "20 days", "25 days"},
		{policy, "Who approves expenses of 800 yuan?", "finance director", "team lead"},
		{policy, "Who approves expenses below 500 yuan?", "team lead", "finance director"},
		{zh, "请假超过30天由谁审批？", "人事总监", "部门经理"},
		{zh, "请假45天由谁审批？", "人事总监", "部门经理"},
		{zh, "请假10天由谁审批？", "部门经理", "人事总监"},
		{zh, "工龄5年的员工每年有几天年假？", "10天", "5天年假"},
		{zh, "工龄不满3年的员工每年有几天年假？", "5天", "10天"},
		{zh, "报销800元由谁审批？", "财务总监", "组长"},
		{zh, "报销低于500元由谁审批？", "组长", "财务总监"},
	} {
		r := Extractive{}.Read(c.q, []rank.Evidence{ev("policy.md", c.body, 1)})
		got := strings.Join(quotedLines(r.Answer), "\n")
		if !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
			t.Errorf("%s: want the line with %q and not the one with %q, got:\n%s", c.q, c.want, c.not, got)
		}
	}
}

func markdownTable(rows [][]string) string {
	var b strings.Builder
	for i, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
		if i == 0 {
			b.WriteString(strings.Repeat("| --- ", len(r)) + "|\n")
		}
	}
	return b.String()
}

func csvOf(rows [][]string) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(strings.Join(r, ",") + "\n")
	}
	return b.String()
}

// xlsxOf is a one-sheet workbook whose cells are inline strings, as the XLSX extractor reads them.
func xlsxOf(rows [][]string) []byte {
	var sheet strings.Builder
	sheet.WriteString(`<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>`)
	for i, r := range rows {
		fmt.Fprintf(&sheet, `<row r="%d">`, i+1)
		for j, cell := range r {
			fmt.Fprintf(&sheet, `<c r="%c%d" t="inlineStr"><is><t>%s</t></is></c>`, 'A'+j, i+1, html.EscapeString(cell))
		}
		sheet.WriteString(`</row>`)
	}
	sheet.WriteString(`</sheetData></worksheet>`)
	return ooxmltest.Zip(
		[2]string{"xl/workbook.xml", `<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Credits" sheetId="1" r:id="rId1"/></sheets></workbook>`},
		[2]string{"xl/_rels/workbook.xml.rels", `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/></Relationships>`},
		[2]string{"xl/worksheets/sheet1.xml", sheet.String()},
	)
}

// BenchmarkNumericCondition measures what comparing numbers adds to a question that states one: the
// same eight passages (prose with days and percentages, and a table of ranges) read for "more than 30
// days" and for the same question without its number (no condition: nothing is compared), in the same
// run (compare the two ns/op).
func BenchmarkNumericCondition(b *testing.B) {
	var ev []rank.Evidence
	for i := range 8 {
		var s strings.Builder
		for s.Len() < 600 {
			s.WriteString("Leave of up to 30 days is approved by the line manager, and leave of more than 30 days by the HR director. Availability fell to 97.5% in May.\n")
		}
		s.WriteString("\n| Monthly availability | Service credit |\n| --- | --- |\n| < 95% | 50% |\n| 95% - 99% | 25% |\n| >= 99% | 0% |\n")
		ev = append(ev, rank.Evidence{ChunkID: string(rune('a' + i)), Text: s.String(), Score: 1 / float64(i+1)})
	}
	for name, q := range map[string]string{"compared": "Who approves leave of more than 30 days?", "plain": "Who approves leave of many days?"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				Extractive{}.Read(q, ev)
			}
		})
	}
}
