package answer

import (
	"context"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/llm"
	"github.com/docmind/docmind/shared/rank"
	"github.com/docmind/docmind/shared/retrieve"
)

const handbook = `# Employee handbook
## Leave policy

Full-time employees receive 20 days of paid annual leave per year. Unused leave carries over for one year.

| Leave type | Days per year | Approval |
| --- | --- | --- |
| Annual leave | 20 | Team lead |
| Sick leave | 10 | None for up to 3 days |
| Parental leave | 90 | HR |`

const sales = `## sales

| region | quarter | revenue (kUSD) | new customers |
| --- | --- | --- | --- |
| North | 2026-Q1 | 420 | 12 |
| North | 2026-Q2 | 515 | 15 |
| South | 2026-Q2 | 365 | 11 |`

const prices = `| plan | monthly price (USD) | documents | users |
| --- | --- | --- | --- |
| Starter | 0 | 500 | 3 |
| Team | 49 | 20000 | 25 |
| Business | 199 | 200000 | 200 |`

// prose is a distractor that shares words with every question below.
const prose = "Outside core hours, employees choose their own schedule with their team lead. Q2 2027: single sign-on. Revenue recognition follows the North American standard."

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
	if !strings.Contains(r.Answer, "犹豫期为签收保单后 15 天") || strings.Contains(r.Answer, "给付保险金") || r.Asked != AskedDuration || !r.Held {
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

func TestAskedFor(t *testing.T) {
	for q, want := range map[string]Asked{
		"How many sick leave days per year?":          AskedDuration,
		"What is the monthly price of the Team plan?": AskedPrice,
		"When was the company founded?":               AskedDate,
		"How old was she when she retired?":           AskedAge,
		"Who directed the film?":                      AskedName,
		"How many employees are there?":               AskedNumber,
		"年假每年多少天？":                                    AskedDuration,
		"这款产品多少钱？":                                    AskedPrice,
		"他是哪一年出生的？":                                   AskedDate,
		"投保年龄是几岁？":                                    AskedAge,
		"该漫画是由谁创作的？":                                  AskedName,
		"Can unused leave carry over?":                AskedNone,
	} {
		if got := askedFor(q); got != want {
			t.Errorf("askedFor(%q) = %q, want %q", q, got, want)
		}
	}
}

func TestNumbers(t *testing.T) {
	for _, c := range []struct {
		s    string
		want []float64
	}{
		{"二十天", []float64{20}},
		{"年假 ２０ 天", []float64{20}},
		{"20,000 documents", []float64{20000}},
		{"一百零五人", []float64{105}},
		{"二〇二六年", []float64{2026}},
		{"3 million users", []float64{3e6}},
		{"5万元", []float64{5e4}},
		{"十二个月", []float64{12}},
		{"revenue 1,234.5 kUSD on 2026-11-01", []float64{1234.5, 2026, 11, 1}},
	} {
		set := numbersOf(c.s)
		for _, w := range c.want {
			if !set.has(w) {
				t.Errorf("numbersOf(%q) = %v, lacks %v", c.s, set, w)
			}
		}
	}
	if set := numbersOf("统一的一些规则"); len(set) != 0 {
		t.Errorf("a lone 一 inside words is not a number: %v", set)
	}
}

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
		claims := CheckClaims(c.answer, evidence)
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
	if cl := CheckClaims("Full-time employees get 25 days [1].", evidence); !strings.Contains(cl[0].Reason, "25") {
		t.Errorf("the reason names the missing number: %q", cl[0].Reason)
	}
}

// A fake model's answers run through the pipeline: the claims reach done, and a wrong number is never
// HIGH.
func TestPipelineClaimsWithModel(t *testing.T) {
	evidence := []rank.Evidence{
		ev("handbook.docx", "Full-time employees receive 20 days of paid annual leave per year.", 1),
		ev("faq.html", "Changes take effect within one business day of our email confirmation.", 0.5),
	}
	for _, c := range []struct {
		name, reply string
		supported   bool
	}{
		{"right", "Full-time employees receive 20 days of paid annual leave per year [1].", true},
		{"changed number", "Full-time employees receive 30 days of paid annual leave per year [1].", false},
		{"wrong source", "Full-time employees receive 20 days of paid annual leave per year [2].", false},
	} {
		p := &Pipeline{Retriever: &fakeRetriever{res: &retrieve.Result{Evidence: evidence, Reranked: evidence,
			Grade: rank.Grade{Tier: rank.TierHigh, TopScore: 0.95, Coverage: 1}}}, RerankKnown: true,
			LLM: fixedModel(c.reply), Model: "m", Calibration: Calibrations{}}
		var rec recorder
		done, err := p.Run(context.Background(), Request{Tenant: "t", Question: "How many days of paid annual leave do full-time employees get?"}, rec.emit)
		if err != nil {
			t.Fatal(err)
		}
		if len(done.Claims) != 1 || done.Claims[0].Supported != c.supported {
			t.Fatalf("%s: claims %+v", c.name, done.Claims)
		}
		if !c.supported && (done.Confidence.Band == BandHigh || done.Confidence.Score >= 0.85) {
			t.Fatalf("%s: an unsupported number is HIGH: %+v", c.name, done.Confidence)
		}
		// No calibration for model answers: a supported answer over strong evidence is capped below
		// HIGH (the old formula gave it 0.95), and the reason says how to calibrate.
		if c.supported && (done.Confidence.Band != BandMedium || done.Confidence.Score != UncalibratedCap ||
			!strings.Contains(done.Confidence.Reason, "no calibration for model answers yet") ||
			!strings.Contains(done.Confidence.Reason, "docmind eval --variant answer --calibrate")) {
			t.Fatalf("%s: an uncalibrated supported model answer: %+v", c.name, done.Confidence)
		}
		if done.Confidence.Reason == "" {
			t.Fatalf("%s: no reason", c.name)
		}
	}
}

type fixedModel string

func (m fixedModel) Stream(ctx context.Context, req llm.Request, send func(string) error) (llm.Usage, error) {
	for _, tok := range Tokens(string(m)) {
		if err := send(tok); err != nil {
			return llm.Usage{}, err
		}
	}
	return llm.Usage{PromptTokens: 10, CompletionTokens: 10}, nil
}

func TestFitCalibration(t *testing.T) {
	// Synthetic answers whose chance of being right is 0.2 + 0.7 * x0: the fitted map must follow it
	// and be monotone in x0.
	rng := rand.New(rand.NewPCG(1, 2))
	var samples []Sample
	for range 4000 {
		x := make([]float64, len(FeatureNames))
		x[0] = rng.Float64()
		x[1] = rng.Float64() // noise
		samples = append(samples, Sample{X: x, Correct: rng.Float64() < 0.2+0.7*x[0]})
	}
	c, err := Fit("extractive", samples)
	if err != nil {
		t.Fatal(err)
	}
	prev := -1.0
	for _, v := range []float64{0.05, 0.25, 0.5, 0.75, 0.95} {
		x := make([]float64, len(FeatureNames))
		x[0] = v
		p := c.Predict(x)
		if p < prev || math.Abs(p-(0.2+0.7*v)) > 0.12 {
			t.Errorf("Predict(x0=%.2f) = %.3f, want about %.3f and monotone", v, p, 0.2+0.7*v)
		}
		prev = p
	}
	if _, err := Fit("x", samples[:5]); err == nil {
		t.Fatal("fitting on 5 answers must fail")
	}
	// The shipped file parses and, for each answerer, fits the current feature list.
	for name, k := range ShippedCalibrations() {
		if len(k.Weights) != len(FeatureNames) || len(k.X) != len(k.Y) || k.N < 20 {
			t.Errorf("shipped calibration %s does not fit the features: %d weights, %d steps", name, len(k.Weights), len(k.X))
		}
		// fitted_on names the datasets that gave this map its answers, and they add up to N
		n := 0
		for _, m := range regexp.MustCompile(`, (\d+) answers\)`).FindAllStringSubmatch(k.FittedOn, -1) {
			v, _ := strconv.Atoi(m[1])
			n += v
		}
		if n != k.N {
			t.Errorf("shipped calibration %s: fitted_on %q counts %d answers, N is %d", name, k.FittedOn, n, k.N)
		}
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
	if got := splitSentences("It is a book by Candice E. Jackson. It was printed in the U.S. Navy yard. Dr. Smith agreed."); len(got) != 3 {
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

func TestFeaturePositions(t *testing.T) {
	if FeatureNames[featNumberMissing] != "number_missing" || FeatureNames[featCJK] != "cjk" || len(FeatureNames) != len(Features{}.Vector()) {
		t.Fatalf("feature positions moved: %v", FeatureNames)
	}
	f := Features{NumberMissing: 1, CJK: 1}
	if v := f.Vector(); v[featNumberMissing] != 1 || v[featCJK] != 1 {
		t.Fatalf("Vector order differs from FeatureNames: %v", v)
	}
}

func FuzzCheckClaims(f *testing.F) {
	f.Add("Leave is 20 days [1]. 年假二十天[2]。", "Full-time employees receive 20 days. 年假每年二十天。")
	f.Add("[1][2] 3,5 and 1,000,000 [1]", "| a | b |\n|---|---|\n| 1,000,000 | x |")
	f.Fuzz(func(t *testing.T, answer, passage string) {
		evidence := []rank.Evidence{ev("a", passage, 1), ev("b", answer, 0.5)}
		for _, c := range CheckClaims(answer, evidence) {
			if len(c.Citations) == 0 || c.Reason == "" {
				t.Fatalf("claim without citation or reason: %+v", c)
			}
			for _, n := range c.Citations {
				if n < 1 || n > len(evidence) {
					t.Fatalf("citation %d out of range", n)
				}
			}
		}
		numbersOf(answer)
	})
}
