package main

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer"
)

// Issue #13 review, findings 6 and 7, on the demo knowledge base: a table answer names its row and
// lists the rows the question cannot tell apart; no other document is quoted for the question's verb;
// no heading is quoted, nor anything of the next article.
func TestTrustReaderDemo(t *testing.T) {
	_, base := startServer(t, nil)
	waitDemo(t, base)
	for _, c := range []struct {
		name, q, file string
		want, never   []string
	}{
		{"a total the table does not hold", "What was the total revenue in 2026-Q2?", "sales-figures.xlsx",
			[]string{"- revenue (kUSD) for North, 2026-Q2: 515 [1]", "- revenue (kUSD) for South, 2026-Q2: 365 [1]", "- revenue (kUSD) for East, 2026-Q2: 330 [1]"},
			[]string{"for 2026-Q2:", "2026-Q1"}},
		{"the row the question names", "What was the North region revenue in 2026-Q2?", "sales-figures.xlsx",
			[]string{"- revenue (kUSD) for North, 2026-Q2: 515 [1]"}, []string{"South", "East"}},
		{"a column the question names, no row", "Which region had the most new customers?", "sales-figures.xlsx",
			[]string{"- new customers for North, 2026-Q2: 15 [1]", "- new customers for East, 2026-Q1: 7 [1]"}, []string{"new or changed file"}},
		{"no other document for the verb", "What does the Business plan include?", "price-list.csv",
			[]string{"plan: Business; monthly price (USD): 199"}, []string{"not included", "Team"}},
		{"no heading, nothing of the next article", "服务提供方会把客户数据用于模型训练吗？", "服务协议.pdf",
			[]string{"服务提供方不会将客户数据用于模型训练。 [1]"}, []string{"\n- 第", "服务等级", "99.9"}},
		{"no heading for a term the agreement does not state", "服务协议的有效期是多久？", "服务协议.pdf",
			nil, []string{"\n- 第"}},
		// the service level table's header row, extracted from the PDF as a plain line
		{"no table header as a quote", "服务月可用性是多少？", "服务协议.pdf",
			[]string{"服务月可用性不低于 99.9%。 [1]"}, []string{"返还比例", "docmind 服务协议"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			done, _ := chat(t, base, c.q, "demo")
			for _, w := range c.want {
				if !strings.Contains(done.Answer, w) {
					t.Errorf("%s: answer lacks %q:\n%s", c.q, w, done.Answer)
				}
			}
			for _, n := range c.never {
				if strings.Contains(done.Answer, n) {
					t.Errorf("%s: answer holds %q:\n%s", c.q, n, done.Answer)
				}
			}
			for _, cl := range done.Claims {
				if !cl.Supported {
					t.Errorf("%s: a quoted line is unsupported: %+v", c.q, cl)
				}
			}
			used, invalid := answer.Citations(done.Answer, len(done.Sources))
			if len(used) == 0 || invalid != 0 {
				t.Fatalf("%s: citations %v (%d invalid):\n%s", c.q, used, invalid, done.Answer)
			}
			for _, n := range used {
				if f := done.Sources[n-1].FileName; f != c.file {
					t.Errorf("%s: cites [%d] %s, want only %s:\n%s", c.q, n, f, c.file, done.Answer)
				}
			}
		})
	}
}

// Finding 9: the command list says what eval measures, the answer variant and its flags included.
func TestHelpDescribesAnswerEval(t *testing.T) {
	code, out, _ := runCLI(t, nil, "help")
	i := strings.Index(out, "\n  eval ")
	if code != 0 || i < 0 {
		t.Fatalf("help: exit %d\n%s", code, out)
	}
	eval := out[i:]
	if j := strings.Index(eval, "\n  bench "); j > 0 {
		eval = eval[:j]
	}
	for _, w := range []string{"--variant", "answer", "--out FILE", "--calibrate"} {
		if !strings.Contains(eval, w) {
			t.Errorf("help's eval entry lacks %q:\n%s", w, eval)
		}
	}
}
