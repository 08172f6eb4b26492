package claims

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rank"
)

func TestCheckClaims(t *testing.T) {
	evidence := []rank.Evidence{
		ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year. 年假每年二十天。", 1),
		ev("faq.html", "Changes take effect within one business day of our email confirmation.", 0.5),
		ev("handbook2.docx", "Paid annual leave is booked in the portal. Claims must be filed within 30 days of the trip.", 0.4),
	}
	for _, c := range []struct {
		name, answer string
		supported    []bool
		missing      bool
	}{
		{"right", "Full-time employees get 20 days of paid annual leave per year [1].", []bool{true}, false},
		{"right, Chinese numeral in the source", "年假每年 20 天 [1]。", []bool{true}, false},
		{"changed number", "Full-time employees get 25 days of paid annual leave per year [1].", []bool{false}, true},
		{"number from an unrelated sentence", "Employees get 30 days of paid annual leave [3].", []bool{false}, true},
		{"wrong source", "Full-time employees get 20 days of paid annual leave per year [2].", []bool{false}, true},
		{"wrong source, no number", "Changes to annual leave need approval from the employee's manager [2].", []bool{false}, false},
		{"uncited sentence is not a claim", "Here is what I found. Leave is 20 days a year [1].", []bool{true}, false},
	} {
		claims := Check(c.answer, evidence)
		if len(claims) != len(c.supported) {
			t.Fatalf("%s: claims %+v", c.name, claims)
		}
		missing := false
		for i, cl := range claims {
			if cl.Supported != c.supported[i] || cl.Reason == "" || len(cl.Citations) == 0 {
				t.Errorf("%s: claim %+v, want supported %v", c.name, cl, c.supported[i])
			}
			missing = missing || cl.NumberMissing
		}
		if missing != c.missing {
			t.Errorf("%s: number missing %v, want %v (%+v)", c.name, missing, c.missing, claims)
		}
	}
	if cl := Check("Full-time employees get 25 days [1].", evidence); !strings.Contains(cl[0].Reason, "25") {
		t.Errorf("the reason names the missing number: %q", cl[0].Reason)
	}
}

func FuzzCheckClaims(f *testing.F) {
	f.Add("Leave is 20 days [1]. 年假二十天[2]。", "Full-time employees receive 20 days. 年假每年二十天。")
	f.Add("[1][2] 3,5 and 1,000,000 [1]", "| a | b |\n|---|---|\n| 1,000,000 | x |")
	f.Fuzz(func(t *testing.T, answer, passage string) {
		evidence := []rank.Evidence{ev("a", passage, 1), ev("b", answer, 0.5)}
		for _, c := range Check(answer, evidence) {
			if len(c.Citations) == 0 || c.Reason == "" {
				t.Fatalf("claim without citation or reason: %+v", c)
			}
			for _, n := range c.Citations {
				if n < 1 || n > len(evidence) {
					t.Fatalf("citation %d out of range", n)
				}
			}
		}
		lang.NumbersOf(answer)
	})
}
