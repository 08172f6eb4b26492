package claims

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/answer/reader"
	"github.com/docmind/docmind/shared/rank"
)

// The demo's documents as the extractor writes them (shared/extract/testdata/golden).
const (
	demoHandbook = `# Employee handbook

This handbook describes the policies that apply to every employee of Example Corp. 本手册适用于示例公司全体员工。

## Working hours

Core hours are 10:00 to 16:00, Monday to Friday. Outside core hours, employees choose their own schedule with their team lead.

## Leave policy

Full-time employees receive 20 days of paid annual leave per year. Unused leave carries over for one year. 年假每年 20 天，未休年假可顺延一年。

| Leave type | Days per year | Approval |
| --- | --- | --- |
| Annual leave | 20 | Team lead |
| Sick leave | 10 | None for up to 3 days |
| Parental leave | 90 | HR |

## Expense claims
### Travel

Book travel through the company portal. Economy class is required for flights under six hours. Claims must be filed within 30 days of the trip.

### Equipment

Each employee may claim up to 500 USD per year for home-office equipment.`
	demoPrices = `| plan | monthly price (USD) | documents | users | support |
| --- | --- | --- | --- | --- |
| Starter | 0 | 500 | 3 | community |
| Team | 49 | 20000 | 25 | email within 2 business days |
| Business | 199 | 200000 | 200 | email and chat within 4 hours |
| Enterprise | contact sales | unlimited | unlimited | dedicated engineer |`
	demoSLA = `<!-- page 1 -->

docmind 服务协议

版本：1.2 生效日期：2025 年 1 月 1 日

第一条 服务内容

本服务为企业提供基于文档的智能问答。服务提供方负责系统的运行和维护，客户负责上传文档内容的合法性。

第二条 数据安全

客户数据按租户隔离存储，任何查询均限定在客户有权访问的知识库范围内。服务提供方不会将客户数据用于模型训练。

第三条 服务等级

服务月可用性不低于 99.9%。未达到时，按下表返还服务费：

月可用性 返还比例

99.0% 至 99.9% 10%

95.0% 至 99.0% 25%

低于 95.0% 50%

第四条 协议终止

任何一方提前 30 天书面通知，可终止本协议。协议终止后 30 天内，服务提供方删除客户的全部数据。`
)

var demoSales = "## sales\n\n" + demoSalesTable

// Issue #13 review: a claim's number must be in the line (sentence, or table row with its header) the
// claim is about; right answers written another way stay supported. Each case is one claim.
func TestCheckClaimsReview(t *testing.T) {
	handbook := []rank.Evidence{ev("employee-handbook.docx", demoHandbook, 1)}
	prices := []rank.Evidence{ev("price-list.csv", demoPrices, 1)}
	sla := []rank.Evidence{ev("服务协议.pdf", demoSLA, 1)}
	sales := []rank.Evidence{ev("sales-figures.xlsx", demoSales, 1)}
	microsoft := []rank.Evidence{ev("github.md", "GitHub is a code hosting platform. Microsoft acquired GitHub in 2018 for 7.5 billion US dollars. The deal closed on October 26, 2018.", 1)}
	beijing := []rank.Evidence{ev("公司.md", "示例公司成立于2010年，公司总部位于北京。2026年3月5日发布了新产品，融资五万元。", 1)}
	for _, c := range []struct {
		name, answer string
		ev           []rank.Evidence
		supported    bool
	}{
		// a number taken from another row or sentence
		{"sick leave gets the annual figure", "Employees get 20 days of sick leave per year [1].", handbook, false},
		{"Team gets the Business price", "The monthly price of the Team plan is 199 USD [1].", prices, false},
		{"Team gets the Business documents", "The Team plan includes 200000 documents [1].", prices, false},
		{"South gets North's revenue", "The South region revenue in 2026-Q2 was 515 kUSD [1].", sales, false},
		{"North's Q1 figure for Q2", "North region revenue in 2026-Q2 was 420 kUSD [1].", sales, false},
		{"SLA refund from another row", "月可用性在 99.0% 至 99.9% 之间时，返还 25% 的服务费 [1]。", sla, false},
		// the same facts, right
		{"sick leave", "Employees get 10 days of sick leave per year [1].", handbook, true},
		{"annual leave", "Full-time employees get 20 days of paid annual leave per year [1].", handbook, true},
		{"annual leave, table words", "Annual leave: 20 days per year, approved by the team lead [1].", handbook, true},
		{"two rows in one sentence", "Employees get 20 days of annual leave, and 10 days of sick leave [1].", handbook, true},
		{"Team price with a dollar sign", "The Team plan costs $49 per month [1].", prices, true},
		{"Team price in USD", "The Team plan costs 49 USD per month [1].", prices, true},
		{"two plans", "The Team plan costs $49 per month, and the Business plan costs $199 [1].", prices, true},
		{"two plans, second price wrong", "The Team plan costs $49 per month, and the Business plan costs $49 [1].", prices, false},
		{"two plans, other order", "Business costs $199 a month; Team costs $49 [1].", prices, true},
		{"reader's row", "plan: Team; monthly price (USD): 49; documents: 20000; users: 25; support: email within 2 business days [1]", prices, true},
		{"North Q2", "The North region revenue in 2026-Q2 was 515 kUSD [1].", sales, true},
		{"North Q2 in thousands", "North's revenue in 2026-Q2 was 515 thousand USD [1].", sales, true},
		{"SLA row quoted", "99.0% 至 99.9% 10% [1]", sla, true},
		{"SLA row in words", "月可用性在 99.0% 至 99.9% 之间时，返还 10% 的服务费 [1]。", sla, true},
		{"SLA floor", "服务月可用性不低于 99.9% [1]。", sla, true},
		{"notice period", "任何一方提前 30 天书面通知，可终止本协议 [1]。", sla, true},
		{"effective date, other format", "协议生效日期为 2025-01-01 [1]。", sla, true},
		{"effective date, English month", "版本 1.2 的生效日期是 Jan 1, 2025 [1]。", sla, true},
		{"effective date, wrong", "协议生效日期为 2025 年 2 月 1 日 [1]。", sla, false},
		{"core hours", "Core hours are 10:00 to 16:00 [1].", handbook, true},
		{"equipment budget", "Each employee may claim up to 500 USD per year for home-office equipment [1].", handbook, true},
		{"equipment budget in dollars", "Employees can claim up to $500 a year for home-office equipment [1].", handbook, true},
		// names and dates
		{"sentence-initial name", "Google acquired GitHub in 2018 [1].", microsoft, false},
		{"sentence-initial name, right", "Microsoft acquired GitHub in 2018 [1].", microsoft, true},
		{"date, other format", "The deal closed on 2018-10-26 [1].", microsoft, true},
		{"date, day and month swapped", "The deal closed on 2018-26-10 [1].", microsoft, false},
		{"date, another day", "The deal closed on October 25, 2018 [1].", microsoft, false},
		{"date without its year", "The deal closed on 26 October [1].", microsoft, true},
		{"date without its year, wrong", "The deal closed on 25 October [1].", microsoft, false},
		{"month and year", "The deal closed in October 2018 [1].", microsoft, true},
		{"scale kept", "Microsoft paid 7.5 billion dollars for GitHub [1].", microsoft, true},
		{"scale lost", "Microsoft paid 7.5 million dollars for GitHub [1].", microsoft, false},
		{"Chinese place", "公司总部位于上海 [1]。", beijing, false},
		{"Chinese place, right", "公司总部位于北京市 [1]。", beijing, true},
		{"Chinese date swapped", "新产品于2026-05-03发布 [1]。", beijing, false},
		{"Chinese date, other format", "新产品于2026-03-05发布 [1]。", beijing, true},
		{"Chinese amount scale", "融资5元 [1]。", beijing, false},
		{"Chinese amount", "融资50000元 [1]。", beijing, true},
		{"Chinese amount in 万", "融资5万元 [1]。", beijing, true},
	} {
		claims := Check(c.answer, c.ev)
		if len(claims) != 1 {
			t.Errorf("%s: claims %+v", c.name, claims)
			continue
		}
		if cl := claims[0]; cl.Supported != c.supported {
			t.Errorf("%s: %q supported %v (%s), want %v", c.name, c.answer, cl.Supported, cl.Reason, c.supported)
		}
	}
}

// The sentence a claim reports is the answer's, without its [n] markers or a space they leave before
// punctuation; full-width markers (【1】) are citations too.
func TestClaimSentenceText(t *testing.T) {
	prices := []rank.Evidence{ev("price-list.csv", demoPrices, 1)}
	for _, c := range []struct{ answer, want string }{
		{"The Team plan costs $49 per month [1].", "The Team plan costs $49 per month."},
		{"- The Team plan costs $49 per month [1], billed monthly.", "The Team plan costs $49 per month, billed monthly."},
		{"Team 计划每月 49 美元【1】。", "Team 计划每月 49 美元。"},
	} {
		claims := Check(c.answer, prices)
		if len(claims) != 1 || claims[0].Sentence != c.want || len(claims[0].Citations) != 1 {
			t.Errorf("%q: claims %+v, want sentence %q", c.answer, claims, c.want)
		}
	}
	if used, _ := lang.Citations("年假 20 天【1】，病假 10 天［1］。", 1); len(used) != 1 {
		t.Errorf("【1】 is a citation: %v", used)
	}
}

// Answers a model could write about the demo's documents, in other words than the source's: right
// ones stay supported (a false "unsupported" is as bad as a false "supported"), wrong ones do not.
func TestCheckClaimsParaphrases(t *testing.T) {
	h := []rank.Evidence{ev("employee-handbook.docx", demoHandbook, 1)}
	p := []rank.Evidence{ev("price-list.csv", demoPrices, 1)}
	x := []rank.Evidence{ev("sales-figures.xlsx", demoSales, 1)}
	s := []rank.Evidence{ev("服务协议.pdf", demoSLA, 1)}
	for _, c := range []struct {
		a         string
		ev        []rank.Evidence
		supported bool
	}{
		{"According to the handbook, full-time employees receive 20 days of paid annual leave per year [1].", h, true},
		{"Sick leave is 10 days per year, and no approval is needed for up to 3 days [1].", h, true},
		{"Parental leave is 90 days and must be approved by HR [1].", h, true},
		{"Annual leave (20 days per year) is approved by your team lead [1].", h, true},
		{"The Business plan costs $199 per month and includes 200,000 documents, 200 users and email and chat support within 4 hours [1].", p, true},
		{"The Starter plan is free and includes 500 documents and 3 users [1].", p, true},
		{"Enterprise pricing requires contacting sales [1].", p, true},
		{"North's revenue in 2026-Q2 was 515 kUSD, up from 420 kUSD in 2026-Q1 [1].", x, true},
		{"In 2026-Q2, the North region had revenue of 515 kUSD and 15 new customers [1].", x, true},
		{"East had 330 kUSD of revenue in 2026-Q2 [1].", x, true},
		{"年假每年20天，未休年假可顺延一年【1】。", h, true},
		{"服务提供方不会将客户数据用于模型训练 [1]。", s, true},
		{"任何一方提前30天书面通知即可终止协议，终止后30天内删除客户数据 [1]。", s, true},
		{"如果月可用性低于95.0%，返还50%的服务费 [1]。", s, true},
		{"协议版本为1.2，自2025年1月1日起生效 [1]。", s, true},
		{"Expense claims must be filed within 30 days of the trip [1].", h, true},
		{"Employees can spend up to 500 USD a year on home-office equipment [1].", h, true},
		{"Core hours run from 10:00 to 16:00, Monday to Friday [1].", h, true},
		{"Economy class is required for flights under six hours [1].", h, true},
		{"Staff get 10 days of sick leave a year [1].", h, true},
		{"The plan for 25 users costs $49 a month [1].", p, true},
		{"Revenue of 515 kUSD came with 15 new customers [1].", x, true},
		// the same answers, wrong
		{"The plan for 25 users costs $199 a month [1].", p, false},
		{"Sick leave is 10 days per year, and no approval is needed for up to 5 days [1].", h, false},
		{"East had 365 kUSD of revenue in 2026-Q2 [1].", x, false},
		{"如果月可用性低于95.0%，返还25%的服务费 [1]。", s, false},
		{"协议版本为1.2，自2025年2月1日起生效 [1]。", s, false},
		{"Economy class is required for flights under 8 hours [1].", h, false},
		{"The Starter plan includes 500 documents and 25 users [1].", p, false},
		{"Unused annual leave carries over for one year [1].", h, true},
	} {
		claims := Check(c.a, c.ev)
		if len(claims) != 1 || claims[0].Supported != c.supported {
			t.Errorf("%q: claims %+v, want supported %v", c.a, claims, c.supported)
		}
	}
}

// Issue #13, second review: a number from another column of the same row, a number in another unit,
// a claim saying the opposite of its source, a Chinese person the source never names, and a claim
// about the row the claim before it named. Each answer's claims, in order.
func TestCheckClaimsSecondReview(t *testing.T) {
	handbook := []rank.Evidence{ev("employee-handbook.docx", demoHandbook, 1)}
	prices := []rank.Evidence{ev("price-list.csv", demoPrices, 1)}
	sla := []rank.Evidence{ev("服务协议.pdf", demoSLA, 1)}
	guide := []rank.Evidence{ev("docmind-guide.md", "docmind reads Markdown, HTML, DOCX, XLSX, PPTX, CSV\nand PDF. Scanned PDFs without a text layer are refused, because docmind does not do OCR.", 1)}
	founder := []rank.Evidence{ev("公司.md", "示例公司成立于2010年，公司总部位于北京，由王芳创立。创始人是王芳。", 1)}
	for _, c := range []struct {
		name, answer string
		ev           []rank.Evidence
		supported    []bool
	}{
		// finding 2: the number is in the row, in another column than the one the sentence names
		{"users cell as the price", "The Team plan costs $25 per month [1].", prices, []bool{false}},
		{"price cell as users", "The Team plan allows 49 users [1].", prices, []bool{false}},
		{"approval cell as days", "Employees get 3 days of sick leave per year [1].", handbook, []bool{false}},
		{"users, right", "The Team plan allows 25 users [1].", prices, []bool{true}},
		{"approval cell, right", "No approval is needed for sick leave of up to 3 days [1].", handbook, []bool{true}},
		// finding 3: another unit of the same kind
		{"weeks for days", "Employees get 10 weeks of sick leave [1].", handbook, []bool{false}},
		{"per month for per year", "Employees get 10 days of sick leave per month [1].", handbook, []bool{false}},
		{"per year for a monthly price", "The Team plan costs $49 per year [1].", prices, []bool{false}},
		{"euros for USD", "The Team plan costs €49 per month [1].", prices, []bool{false}},
		{"prose: per month for per year", "Each employee may claim up to 500 USD per month for home-office equipment [1].", handbook, []bool{false}},
		{"prose: euros for USD", "Each employee may claim up to €500 per year for home-office equipment [1].", handbook, []bool{false}},
		{"prose: weeks for days", "Claims must be filed within 30 weeks of the trip [1].", handbook, []bool{false}},
		{"units, right", "The Team plan costs 49 USD a month [1].", prices, []bool{true}},
		{"prose units, right", "Claims must be filed within 30 days of the trip [1].", handbook, []bool{true}},
		{"Chinese days, right", "年假每年 20 天 [1]。", handbook, []bool{true}},
		{"Chinese months for days", "年假每年 20 个月 [1]。", handbook, []bool{false}},
		// finding 5: the opposite of the source
		{"Chinese negation flipped", "会的，服务提供方会将客户数据用于模型训练[1]。", sla, []bool{false}},
		{"English negation flipped", "Yes, docmind does do OCR for scanned PDFs [1].", guide, []bool{false}},
		{"Chinese negation kept", "不会，服务提供方不会将客户数据用于模型训练[1]。", sla, []bool{true}},
		{"English negation kept", "No, docmind does not do OCR, so scanned PDFs without a text layer are refused [1].", guide, []bool{true}},
		{"English negation, curly apostrophe", "Scanned PDFs are refused: docmind doesn’t do OCR [1].", guide, []bool{true}},
		{"quote", "Scanned PDFs without a text layer are refused, because docmind does not do OCR [1].", guide, []bool{true}},
		{"one cited source agrees", "Since version 2, docmind does OCR for scanned PDFs [1][2].", append(guide, ev("release-notes.txt", "Version 2: docmind does OCR for scanned PDFs now.", 2)), []bool{true}},
		{"double negative", "服务提供方不得不将客户数据用于模型训练[1]。", sla, []bool{false}},
		// finding 8: a Chinese person the source does not name
		{"founder not in source", "公司总部位于北京，由李明创立[1]。", founder, []bool{false}},
		{"founder after 创始人是", "公司的创始人是李明[1]。", founder, []bool{false}},
		{"founder, right", "公司总部位于北京，由王芳创立[1]。", founder, []bool{true}},
		{"由于 is not a name", "由于总部位于北京，公司成立于2010年[1]。", founder, []bool{true}},
		// finding 9: a pronoun claim is about the row named before it
		{"pronoun", "The Team plan costs $49 per month [1]. It supports 25 users [1].", prices, []bool{true, true}},
		{"pronoun, wrong", "The Team plan costs $49 per month [1]. It supports 200 users [1].", prices, []bool{true, false}},
	} {
		checkClaimsAre(t, c.name, Check(c.answer, c.ev), c.supported)
	}
}

// Issue #13, third review: right answers the negation check called "the opposite" (bounds are not
// negations; each clause is compared on its own), a number taken as a row key because its cell holds a
// unit, and Chinese modifiers read as a person's name. Each answer's claims, in order.
func TestCheckClaimsThirdReview(t *testing.T) {
	handbook := []rank.Evidence{ev("employee-handbook.docx", demoHandbook, 1)}
	sla := []rank.Evidence{ev("服务协议.pdf", demoSLA, 1)}
	limits := []rank.Evidence{ev("limits.md", "Each workspace supports no more than 25 users. Uploads may not exceed 2 GB per file.", 1)}
	refunds := []rank.Evidence{ev("refunds.md", "Refunds are not available after 30 days from the purchase.", 1)}
	guide := []rank.Evidence{ev("docmind-guide.md", "docmind reads Markdown, HTML, DOCX, XLSX, PPTX, CSV\nand PDF. Scanned PDFs without a text layer are refused, because docmind does not do OCR.", 1)}
	leave := []rank.Evidence{ev("leave.csv", "| role | vacation | sick |\n| --- | --- | --- |\n| Staff | 20 days | 10 days |\n| Managers | 30 days | 20 days |", 1)}
	plans := []rank.Evidence{ev("plans.csv", "| plan | storage | upload limit |\n| --- | --- | --- |\n| Team | 50 GB | 2 GB |\n| Business | 500 GB | 10 GB |", 1)}
	film := []rank.Evidence{ev("电影.md", "《红高粱》是1987年的中国电影，导演为张艺谋。", 1)}
	filmLong := []rank.Evidence{ev("电影.md", "红高粱是1987年的中国电影，导演为张艺谋。张艺谋是中国第五代导演的代表，名导演。", 1)}
	for _, c := range []struct {
		name, answer string
		ev           []rank.Evidence
		supported    []bool
	}{
		// finding 1: right rewordings of a bound, and clauses negated on their own
		{"at most", "Each workspace supports at most 25 users [1].", limits, []bool{true}},
		{"up to", "Each workspace supports up to 25 users [1].", limits, []bool{true}},
		{"limited to", "Uploads are limited to 2 GB [1].", limits, []bool{true}},
		{"至少 for 不低于", "服务月可用性承诺至少为99.9%[1]。", sla, []bool{true}},
		{"剩余 for 未休", "年假每年20天，剩余年假可顺延一年[1]。", handbook, []bool{true}},
		{"two negations", "docmind does not do OCR, so it cannot read scanned PDFs [1].", guide, []bool{true}},
		{"only within", "Refunds are available only within 30 days [1].", refunds, []bool{true}},
		// the flips the previous review found stay caught
		{"Chinese flip", "会的，服务提供方会将客户数据用于模型训练[1]。", sla, []bool{false}},
		{"English flip", "Yes, docmind does do OCR [1].", guide, []bool{false}},
		// a code review of the above: a bound keeps its negation, a shared restriction does not stop the
		// comparison, and 未休 / 未使用 negate
		{"bound flip", "Uploads may exceed 2 GB per file [1].", limits, []bool{false}},
		{"more than flip", "Each workspace supports more than 25 users [1].", limits, []bool{false}},
		{"不超过 flip", "每个工作区的成员超过25人[1]。", []rank.Evidence{ev("限制.md", "每个工作区的成员不超过25人。", 1)}, []bool{false}},
		{"不超过 kept", "每个工作区的成员不超过25人[1]。", []rank.Evidence{ev("限制.md", "每个工作区的成员不超过25人。", 1)}, []bool{true}},
		{"after flip", "Refunds are available after 30 days from the purchase [1].", refunds, []bool{false}},
		{"已使用 flip", "已使用的额度可以申请退款[1]。", []rank.Evidence{ev("退款.md", "未使用的额度可以申请退款。已使用的额度不予退款。", 1)}, []bool{false}},
		{"已休 flip", "员工已休年假可以顺延至次年[1]。", []rank.Evidence{ev("年假.md", "员工未休年假可以顺延至次年。", 1)}, []bool{false}},
		// finding 2: a cell holding a unit is a value, not the row's key
		{"days in the other column", "Managers get 20 days of vacation [1].", leave, []bool{false}},
		{"days, right", "Managers get 30 days of vacation [1].", leave, []bool{true}},
		{"GB in the other column", "The Team plan has 2 GB of storage [1].", plans, []bool{false}},
		{"GB, right", "The Team plan has an upload limit of 2 GB [1].", plans, []bool{true}},
		// finding 5: modifiers and pronouns are not names
		{"著名导演, is", "红高粱的导演是著名导演张艺谋[1]。", filmLong, []bool{true}},
		{"导演为, right", "《红高粱》的导演为张艺谋[1]。", film, []bool{true}},
		{"导演为, wrong", "《红高粱》的导演为陈凯歌[1]。", film, []bool{false}},
	} {
		checkClaimsAre(t, c.name, Check(c.answer, c.ev), c.supported)
	}
}

// A unit mismatch found in the cell is described with the cell's unit, not the header's empty one.
func TestNumberFitsReasonText(t *testing.T) {
	prices := []rank.Evidence{ev("price-list.csv", demoPrices, 1)}
	claims := Check("The Business plan answers support email within 4 days [1].", prices)
	if len(claims) != 1 || claims[0].Supported {
		t.Fatalf("claims %+v", claims)
	}
	if r := claims[0].Reason; !strings.Contains(r, "hours") || strings.Contains(r, "in  (") {
		t.Errorf("reason %q does not say the cell's unit", r)
	}
}

// checkClaimsAre asserts an answer's claims, in order, are supported or not as want says.
func checkClaimsAre(t *testing.T, name string, claims []Claim, want []bool) {
	t.Helper()
	if len(claims) != len(want) {
		t.Errorf("%s: claims %+v", name, claims)
		return
	}
	for i, cl := range claims {
		if cl.Supported != want[i] {
			t.Errorf("%s: %q supported %v (%s), want %v", name, cl.Sentence, cl.Supported, cl.Reason, want[i])
		}
	}
}

// The demo agreement's refund table as the PDF extraction now gives it (a markdown table): a row
// whose first cell is a range of numbers keeps its header as its context, so a sentence about the
// row is checked against that row.
func TestClaimsOnPDFTableRows(t *testing.T) {
	table := "服务月可用性不低于 99.9%。未达到时，按下表返还服务费：\n\n| 月可用性 | 返还比例 |\n| --- | --- |\n| 99.0% 至 99.9% | 10% |\n| 95.0% 至 99.0% | 25% |\n| 低于 95.0% | 50% |"
	for _, c := range []struct {
		answer string
		want   bool
	}{
		{"月可用性在 99.0% 至 99.9% 之间时，返还 10% 的服务费。 [1]", true},
		{"月可用性在 95.0% 至 99.0% 之间时，返还 25% 的服务费。 [1]", true},
		{"月可用性低于 95.0% 时，返还 50% 的服务费。 [1]", true},
		{"月可用性低于 95.0% 时，返还 10% 的服务费。 [1]", false},
	} {
		cs := Check(c.answer, []rank.Evidence{ev("服务协议.pdf", table, 1)})
		if len(cs) != 1 || cs[0].Supported != c.want {
			t.Errorf("%s: %+v, want supported %v", c.answer, cs, c.want)
		}
	}
}

// Neither notice is a claim, counts towards the answer's terms, or survives WithoutNotice.
func TestWithoutNoticeEitherLanguage(t *testing.T) {
	for _, n := range []string{reader.OfflineNotice, reader.OfflineNoticeZH} {
		a := n + "\n\n- 年假每年 20 天 [1]"
		if got := reader.WithoutNotice(a); strings.Contains(got, "语言模型") || strings.Contains(got, "language model") || !strings.Contains(got, "20 天") {
			t.Errorf("WithoutNotice(%q) = %q", a, got)
		}
		cs := Check(a, []rank.Evidence{ev("手册.md", "年假每年 20 天。", 0.8)})
		if len(cs) != 1 || !cs[0].Supported {
			t.Errorf("claims of %q: %+v (want the one quoted line, supported)", a, cs)
		}
	}
}
