package reader

import (
	"fmt"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rank"
)

func TestKeyTerms(t *testing.T) {
	for q, want := range map[string]string{
		"Who is the CEO of Example Corp?":             "[[CEO] [Example Corp]]",
		"公司的CEO是谁？":                                   "[[CEO]]",
		"What is the monthly price of the Team plan?": "[[Team]]",
		"How many sick leave days per year?":          "[]",
		"犹豫期是多少天？":                                    "[]",
		"Was Robert C Seger born in 1945?":            "[[Robert] [Seger]]",
	} {
		if got := fmt.Sprint(KeyTerms(q)); got != want {
			t.Errorf("KeyTerms(%q) = %s, want %s", q, got, want)
		}
	}
}

// Abstaining needs two signals to agree: a name of the question no passage holds, and a grade that is
// not HIGH on most of the question's terms. Nothing retrieved abstains on its own.
func TestAbstains(t *testing.T) {
	handbook := []rank.Evidence{ev("handbook.md", "This handbook applies to every employee of Example Corp. Employees get 20 days of annual leave.", 0.8)}
	ambiguous := rank.Grade{Tier: rank.TierAmbiguous, Coverage: 0.4}
	for _, c := range []struct {
		q     string
		ev    []rank.Evidence
		grade rank.Grade
		want  string // "" when it answers
	}{
		{"Who is the CEO of Example Corp?", handbook, ambiguous, "mentions “CEO”"},
		{"Who is the CEO of Example Corp?", handbook, rank.Grade{Tier: rank.TierHigh, Coverage: 0.62}, "The documents do not say"},
		// most of the question found at HIGH: the name is taken to be spelt otherwise
		{"Who is the CEO of Example Corp?", handbook, rank.Grade{Tier: rank.TierHigh, Coverage: 0.9}, ""},
		{"公司的CEO是谁？", handbook, ambiguous, "文档中没有提到CEO"},
		{"How many days of annual leave at Example Corp?", handbook, ambiguous, ""},
		// no name: the reader decides what to quote, unless the passages barely touch the question
		{"How many days of parental leave?", handbook, rank.Grade{Tier: rank.TierLow, Coverage: 0.5}, ""},
		{"How many days of parental leave?", handbook, rank.Grade{Tier: rank.TierLow, Coverage: 0.2}, AbstainUnrelated},
		{"育儿假有多少天？", handbook, rank.Grade{Tier: rank.TierLow, Coverage: 0.2}, AbstainUnrelatedZH},
		{"Who is the CEO?", nil, rank.Grade{NoEvidence: true}, NoEvidenceAnswer},
		{"公司的CEO是谁？", nil, rank.Grade{NoEvidence: true}, NoEvidenceAnswerZH},
		// a name spelt with an accent in the passage, an abbreviation spelt out (SQuAD's false abstentions)
		{"What album did Beyonce release in 2013?", []rank.Evidence{ev("b.md", "Beyoncé released her fifth album in 2013.", 0.8)}, ambiguous, ""},
		{"Which TV network broadcast the game?", []rank.Evidence{ev("s.md", "CBS broadcast the game on television.", 0.8)}, ambiguous, ""},
		{"Which TV network broadcast the game?", []rank.Evidence{ev("s.md", "CBS broadcast the game.", 0.8)}, ambiguous, "mentions “TV”"},
		// a misspelt name, a name the passage holds in another form
		{"One of the sites, Merceds-Benz Superdome, is located where?", []rank.Evidence{ev("s.md", "The Mercedes-Benz Superdome is in New Orleans.", 0.8)}, ambiguous, ""},
		{"Which University of Chicago guide states the Univeristy workload?", []rank.Evidence{ev("s.md", "The university of Chicago guide.", 0.8)}, ambiguous, ""},
		{"Trotsky thought what was needed for a true Russian revolution?", []rank.Evidence{ev("s.md", "Trotsky wrote about Russia and its revolution.", 0.8)}, ambiguous, ""},
		// short names are never matched loosely: "CEO" is not "CFO"
		{"Who is the CEO?", []rank.Evidence{ev("s.md", "The CFO reports to the board.", 0.8)}, ambiguous, "mentions “CEO”"},
		{"Who founded Acme Widgets?", []rank.Evidence{ev("s.md", "Example Corp was founded in 1990.", 0.8)}, ambiguous, "mentions “Acme Widgets”"},
	} {
		got, ok := Abstains(c.q, c.ev, c.grade)
		if ok != (c.want != "") || !strings.Contains(got, c.want) {
			t.Errorf("%s (%s %.2f): abstains %v %q, want %q", c.q, c.grade.Tier, c.grade.Coverage, ok, got, c.want)
		}
		if strings.Contains(got, "[1]") {
			t.Errorf("%s: an abstention cites: %q", c.q, got)
		}
	}
}

// The rule's two thresholds: a HIGH grade at HighCover overrides a missing name, and a coverage below
// LowCover abstains whatever the names.
func TestRuleAbstain(t *testing.T) {
	for _, c := range []struct {
		r    Rule
		s    Signals
		want bool
	}{
		{DefaultRule, Signals{NoEvidence: true}, true},
		{Rule{HighCover: 0.75}, Signals{Coverage: 0.1}, false},
		{Rule{HighCover: 0.75, LowCover: 0.2}, Signals{Coverage: 0.1}, true},
		{Rule{HighCover: 0.75, LowCover: 0.2}, Signals{Coverage: 0, Low: true}, true},
		// coverage not measured (no salient term), or a HIGH grade: low coverage does not abstain
		{Rule{HighCover: 0.75, LowCover: 0.2}, Signals{Coverage: 0}, false},
		{Rule{HighCover: 0.75, LowCover: 0.2}, Signals{Coverage: 0.1, High: true}, false},
		{Rule{HighCover: 0.75, LowCover: 0.2}, Signals{Coverage: 0.3}, false},
		{DefaultRule, Signals{Missing: "CEO", High: true, Coverage: 0.8}, false},
		{DefaultRule, Signals{Missing: "CEO", High: true, Coverage: 0.75}, true},
		{Rule{HighCover: 0.9}, Signals{Missing: "CEO", High: true, Coverage: 0.8}, true},
		{DefaultRule, Signals{Missing: "CEO", Coverage: 0.9}, true},
		// the question names the top passage's title: low coverage does not abstain, a missing name still does
		{DefaultRule, Signals{Coverage: 0.2, Titled: true}, false},
		{DefaultRule, Signals{Coverage: 0.2, Low: true, Titled: true}, false},
		{DefaultRule, Signals{Missing: "CEO", Coverage: 0.2, Titled: true}, true},
	} {
		if got := c.r.Abstain(c.s); got != c.want {
			t.Errorf("%+v on %+v: %v, want %v", c.r, c.s, got, c.want)
		}
	}
	if got := AbstainText("公司的CEO是谁？", Signals{Missing: "CEO"}); got != "文档中没有提到CEO：检索到的段落都不包含它，因此不作回答。" {
		t.Errorf("AbstainText zh = %q", got)
	}
}

func TestOneEdit(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{{"merceds", "mercedes", true}, {"univeristy", "university", true}, {"sigimund", "sigismund", true}, {"moncalm", "montcalm", true},
		{"celeron", "celoron", true}, {"example", "example", true}, {"london", "boston", false}, {"paris", "prague", false}, {"ab", "abcd", false}} {
		if got := oneEdit(c.a, c.b); got != c.want {
			t.Errorf("oneEdit(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// A question that names the top passage's document title is about that passage, however few of its
// other words the passage holds (CMRC 2018: "锦地罗又被称之为什么？" over the article 锦地罗, coverage
// 0.22, was withheld though the passage answers it).
func TestTitled(t *testing.T) {
	titled := func(file, chapter, text string) []rank.Evidence {
		e := ev(file, text, 0.8)
		e.Chapter = chapter
		return []rank.Evidence{e}
	}
	low := rank.Grade{Tier: rank.TierLow, Coverage: 0.2}
	for _, c := range []struct {
		q, chapter string
		want       bool
	}{
		{"锦地罗又被称之为什么？", "锦地罗", true},
		{"锦地罗又被称之为什么？", "水栖昆虫", false},
		{"李日华进士及第后担任什么官职？", "李日华 > 生平", true},
		{"Who directed Kiss and Tell?", "Kiss and Tell (1945 film)", true},
		{"When did Beyonce start singing?", "Beyoncé", true},
		{"When did the start of the season fall?", "Art", false}, // too short
		{"When did the restart happen?", "Start", false},         // not a whole word
		{"How many days of parental leave?", "Employee Handbook", false},
		{"How many days of parental leave?", "", false},
	} {
		s := AbstainSignals(c.q, titled("a.md", c.chapter, "passage text"), low)
		if s.Titled != c.want {
			t.Errorf("%q over %q: titled %v, want %v", c.q, c.chapter, s.Titled, c.want)
		}
		// the passage holds the question's names in its heading, so only the low coverage can abstain
		if _, abstains := Abstains(c.q, titled("a.md", c.chapter, "passage text"), low); abstains == c.want {
			t.Errorf("%q over %q at coverage 0.2: abstains %v", c.q, c.chapter, abstains)
		}
	}
}
