package reader

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rank"
)

func TestReaderTables(t *testing.T) {
	for _, c := range []struct {
		q, want string
		ev      []rank.Evidence
	}{
		{"What was the North region revenue in 2026-Q2?", "revenue (kUSD) for North, 2026-Q2: 515 [1]", []rank.Evidence{ev("sales.xlsx", sales, 1), ev("notes.md", prose, 0.9)}},
		{"How many sick leave days per year?", "Days per year for Sick leave: 10 [1]", []rank.Evidence{ev("handbook.docx", handbook, 1), ev("notes.md", prose, 0.9)}},
		{"What is the monthly price of the Team plan?", "monthly price (USD) for Team: 49 [1]", []rank.Evidence{ev("price-list.csv", prices, 1), ev("notes.md", prose, 0.9)}},
		// "business" is also a word of the Team row's support cell: the row the question names wins
		{"What does the Business plan include?", "plan: Business; monthly price (USD): 199; support: email and chat within 4 hours [1]",
			[]rank.Evidence{ev("price-list.csv", "| plan | monthly price (USD) | support |\n| --- | --- | --- |\n| Team | 49 | email within 2 business days |\n| Business | 199 | email and chat within 4 hours |", 1)}},
		// no column named: the whole row as header: value pairs
		{"Tell me about the Business plan", "plan: Business; monthly price (USD): 199; documents: 200000; users: 200 [1]", []rank.Evidence{ev("price-list.csv", prices, 1)}},
	} {
		r := Extractive{}.Read(c.q, c.ev)
		if !strings.Contains(r.Answer, "- "+c.want) || !r.Table {
			t.Errorf("%s:\n got %s\nwant the line %q", c.q, r.Answer, c.want)
		}
		if strings.Contains(r.Answer, "[2]") {
			t.Errorf("%s: a neighbour that adds nothing is quoted:\n%s", c.q, r.Answer)
		}
	}
}

func TestReaderSentences(t *testing.T) {
	// A 500-character Chinese run-on line: the clause that answers is quoted, not the whole line.
	runOn := "本条款适用于所有投保人" + strings.Repeat("，保险公司应当按照本合同的约定履行给付保险金的义务并及时通知受益人", 8) +
		"；犹豫期为签收保单后 15 天，期间退保全额退还保费" + strings.Repeat("，其他事项以保险单载明的内容为准并由双方协商解决", 6) + "。"
	r := Extractive{}.Read("犹豫期是多少天？", []rank.Evidence{ev("条款.md", runOn, 1)})
	if !strings.Contains(r.Answer, "犹豫期为签收保单后 15 天") || strings.Contains(r.Answer, "给付保险金") || r.Asked != lang.AskedDuration || !r.Held {
		t.Fatalf("run-on line: %+v", r)
	}
	// List markers split too.
	list := "理赔需要：（1）理赔申请书；（2）身份证明（3）诊断证明和费用清单"
	if parts := splitClauses(list, 160); len(parts) != 4 || parts[2] != "（2）身份证明" {
		t.Fatalf("list markers: %q", parts)
	}
	// The sentence holding the asked-for value beats one that only shares words.
	two := "Annual leave requests go through the portal and annual leave is approved by the lead. Annual leave is 20 days."
	r = Extractive{}.Read("How many days of annual leave?", []rank.Evidence{ev("h.md", two, 1)})
	if !strings.HasPrefix(strings.Split(r.Answer, "\n")[2], "- Annual leave is 20 days.") && !strings.Contains(r.Answer, "Annual leave is 20 days. [1]") {
		t.Fatalf("asked-for number: %s", r.Answer)
	}
	// No bullet restates the question.
	faq := "How do I change my beneficiary? Log in to the portal and select Change beneficiary."
	r = Extractive{}.Read("How do I change my beneficiary?", []rank.Evidence{ev("faq.html", faq, 1)})
	if strings.Contains(r.Answer, "How do I change") || !strings.Contains(r.Answer, "select Change beneficiary") {
		t.Fatalf("restating bullet: %s", r.Answer)
	}
	// Hard-wrapped markdown is read as one sentence.
	wrapped := "Drop files into the inbox. docmind watches the folder: a new or changed file is\ningested, a removed file is deleted from every index."
	r = Extractive{}.Read("what happens to a removed file", []rank.Evidence{ev("guide.md", wrapped, 1)})
	if !strings.Contains(r.Answer, "a removed file is deleted from every index") || strings.Contains(r.Answer, "file is [1]") {
		t.Fatalf("wrapped line: %s", r.Answer)
	}
}

// An FAQ's answer is the lines under the heading that asks the question, even when they share no word
// with it; the line after the best one is never taken from the next section.
func TestReaderFAQ(t *testing.T) {
	faq := "# 常见问题 FAQ\n## 如何退保？\n\n在犹豫期（签收保单后 15 天）内退保，全额退还保费。\n\n## 理赔需要哪些材料？\n\n- 理赔申请书\n- 被保险人身份证明\n- 医院出具的诊断证明和费用清单\n\n材料齐全后，保险公司将在 10 个工作日内作出核定。\n\n## How do I change my beneficiary?\n\nLog in to the customer portal, open My policies, choose the policy and select Change beneficiary."
	guide := "# docmind user guide\n## Adding documents\n\nDrop files into the inbox. docmind watches the folder: a new or changed file is ingested, a removed file is deleted from every index."
	got := Extractive{}.Compose("理赔需要哪些材料？", []rank.Evidence{ev("faq.html", faq, 1), ev("docmind-guide.md", guide, 0.5)})
	want := "- 理赔申请书 [1]\n- 被保险人身份证明 [1]\n- 医院出具的诊断证明和费用清单 [1]"
	if !strings.Contains(got, want) || strings.Contains(got, "Log in") || strings.Contains(got, "[2]") {
		t.Fatalf("FAQ list:\n%s", got)
	}
	// The best line ends its section: the next section's first line is another topic.
	two := "## Refunds\n\nRefunds are paid within 14 days of the cancellation.\n\n## Beneficiaries\n\nLog in to the portal to change a beneficiary."
	got = Extractive{}.Compose("refunds cancellation", []rank.Evidence{ev("faq.md", two, 1)})
	if !strings.Contains(got, "Refunds are paid within 14 days") || strings.Contains(got, "Log in") {
		t.Fatalf("next line across a heading:\n%s", got)
	}
}

func TestReaderHonestNoMatch(t *testing.T) {
	// The question's words are only in a heading: saying that no passage shares them would be false.
	only := ev("leave.md", "# Leave\n\nTwenty days.", 1)
	if got := (Extractive{}).Compose("leave", []rank.Evidence{only}); got != NoQuoteAnswer {
		t.Fatalf("heading-only match: %s", got)
	}
	// A CSV row holding the question's words is answered, not called unrelated.
	if got := (Extractive{}).Compose("What is the Team plan's price?", []rank.Evidence{ev("price-list.csv", prices, 1)}); !strings.Contains(got, "49 [1]") {
		t.Fatalf("CSV row: %s", got)
	}
	if got := (Extractive{}).Compose("vacation entitlement", []rank.Evidence{ev("h.md", "Twenty days a year.", 1)}); got != NoMatchAnswer {
		t.Fatalf("no shared word: %s", got)
	}
}

func TestReaderWhy(t *testing.T) {
	body := "猴面包树原产于热带非洲。它的果实钙含量比菠菜高50％以上，维生素C含量是单个橙子的三倍。因此它有时也被称为笨蛋水果。树干可以储水。"
	r := Extractive{}.Read("为什么称猴面包树为笨蛋水果？", []rank.Evidence{ev("猴面包树.md", body, 1)})
	if !strings.Contains(r.Answer, "钙含量比菠菜高50％以上") || !strings.Contains(r.Answer, "笨蛋水果") {
		t.Fatalf("a why question gets the reason before the matched line:\n%s", r.Answer)
	}
}

func TestReaderMultiHop(t *testing.T) {
	// Initials and abbreviations do not end a sentence.
	if got := lang.SplitSentences("It is a book by Candice E. Jackson. It was printed in the U.S. Navy yard. Dr. Smith agreed."); len(got) != 3 {
		t.Fatalf("sentences %q", got)
	}
	// The first hop names Sullivan County; the second passage's line about the county seat answers.
	ev := []rank.Evidence{
		ev("east-lempster.md", "East Lempster is an unincorporated community in the town of Lempster in Sullivan County, New Hampshire.", 1),
		ev("sullivan.md", "Sullivan County is one of ten counties in the U.S. state of New Hampshire. As of 2010 the population was 43,742. Its county seat is Newport.", 0.8),
	}
	r := Extractive{}.Read("What is the county seat of the county where East Lempster, New Hampshire is located?", ev)
	if !strings.Contains(r.Answer, "Its county seat is Newport. [2]") {
		t.Fatalf("second hop:\n%s", r.Answer)
	}
}

func TestExtractiveCompose(t *testing.T) {
	evidence := []rank.Evidence{
		ev("handbook.docx", "# Leave\n\nFull-time employees receive 20 days of paid annual leave per year. The office has a kitchen on every floor. Unused leave carries over for one year.", 0.9),
		ev("faq.html", "Part-time employees receive annual leave in proportion to their hours. Parking is free for visitors.", 0.5),
		ev("prices.csv", "| sku | price |\n|---|---|\n| A1 | 30 |", 0.1),
	}
	got := Extractive{}.Compose("How many days of annual leave do full-time employees get?", evidence)
	lines := strings.Split(got, "\n")
	if lines[0] != OfflineNotice || lines[1] != "" {
		t.Fatalf("the answer must open with the offline notice:\n%s", got)
	}
	if !strings.Contains(got, "Full-time employees receive 20 days of paid annual leave per year. [1]") {
		t.Fatalf("the best sentence is missing or uncited:\n%s", got)
	}
	for _, bad := range []string{"kitchen", "Parking", "sku", "# Leave"} {
		if strings.Contains(got, bad) {
			t.Errorf("irrelevant text %q quoted:\n%s", bad, got)
		}
	}
	for _, l := range lines[2:] {
		m := bullet.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %q is not a cited bullet", l)
		}
	}
	if used, invalid := lang.Citations(got, len(evidence)); len(used) == 0 || invalid > 0 {
		t.Fatalf("every quoted sentence carries a valid citation: used %v, invalid %d", used, invalid)
	}
	cn := Extractive{}.Compose("年假每年多少天", []rank.Evidence{ev("手册.md", "员工福利。年假每年 20 天，未休年假可顺延一年。食堂中午开放。", 0.8)})
	if !strings.Contains(cn, "年假每年 20 天，") && !strings.Contains(cn, "年假每年 20 天") || !strings.Contains(cn, "[1]") || strings.Contains(cn, "食堂") {
		t.Fatalf("Chinese extractive answer:\n%s", cn)
	}
	if got := (Extractive{}).Compose("anything", nil); got != NoEvidenceAnswer || strings.Contains(strings.ToLower(got), "does not exist") {
		t.Fatalf("no-evidence answer %q", got)
	}
	// Evidence found by meaning only (no shared term): nothing is quoted, and the answer says why.
	if sem := (Extractive{}).Compose("vacation entitlement", evidence[:1]); sem != NoMatchAnswer {
		t.Fatalf("semantic-only evidence: %s", sem)
	}
	// A sentence sharing one common word with the question is not quoted next to one that answers it.
	weak := Extractive{}.Compose("How many days of paid annual leave do full-time employees get?", []rank.Evidence{
		ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 0.9),
		ev("faq.html", "Changes take effect within one business day of our email confirmation.", 0.5)})
	if strings.Contains(weak, "business day") || !strings.Contains(weak, "20 days") {
		t.Fatalf("weak sentence quoted:\n%s", weak)
	}
	// Limits: at most PerSource from one source; another source only when it adds a question term.
	many := ev("long.md", strings.Repeat("Annual leave rules apply to everyone here. ", 1)+"Annual leave is booked in the portal. Annual leave needs approval by a lead. Annual leave expires after a year.", 1)
	got = Extractive{MaxSentences: 3, PerSource: 2}.Compose("annual leave", []rank.Evidence{many, evidence[1]})
	if n := strings.Count(got, "[1]"); n != 2 || strings.Contains(got, "[2]") {
		t.Fatalf("want 2 quotes from source 1 (PerSource 2) and none from source 2, which adds nothing:\n%s", got)
	}
	got = Extractive{MaxSentences: 3, PerSource: 2}.Compose("annual leave for part-time staff", []rank.Evidence{many, evidence[1]})
	if !strings.Contains(got, "Part-time employees receive annual leave in proportion to their hours. [2]") {
		t.Fatalf("source 2 adds the question's part-time and must be quoted:\n%s", got)
	}
}

func TestTokens(t *testing.T) {
	for _, s := range []string{"", "one", "a b  c\n- d [1]", "年假 20 天[1]。", OfflineNotice} {
		toks := lang.Tokens(s)
		if strings.Join(toks, "") != s {
			t.Fatalf("Tokens(%q) = %q does not rebuild the input", s, toks)
		}
	}
	if toks := lang.Tokens("年假"); len(toks) != 2 {
		t.Fatalf("CJK characters stream one at a time: %q", toks)
	}
}

func FuzzCompose(f *testing.F) {
	f.Add("leave days", "Employees get 20 days. [3] Something else entirely here.")
	f.Add("年假", "年假每年 20 天。")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, q, body string) {
		evidence := []rank.Evidence{ev("a", body, 1), ev("b", q+" "+body, 0.5)}
		got := Extractive{}.Compose(q, evidence)
		if !utf8.ValidString(got) && utf8.ValidString(q) && utf8.ValidString(body) {
			t.Fatalf("invalid UTF-8 from valid input: %q", got)
		}
		if _, invalid := lang.Citations(got, len(evidence)); invalid != 0 {
			t.Fatalf("invalid citation in %q", got)
		}
	})
}

// bullet is one quoted line of an extractive answer: the text and its source number.
var bullet = regexp.MustCompile(`^- (.+) \[(\d+)\]$`)
