package lang

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/text"
)

// Asked is what a question asks for, read from its wording in English or Chinese: a sentence that
// holds that kind of thing is likelier to answer it ("how many days" wants a number of days).
type Asked string

// What a question can ask for.
const (
	AskedNone     Asked = ""
	AskedNumber   Asked = "number"
	AskedDate     Asked = "date"
	AskedAge      Asked = "age"
	AskedPrice    Asked = "price"
	AskedDuration Asked = "duration"
	AskedName     Asked = "name"
	AskedPlace    Asked = "place"
)

// askRules are checked in order: the first match wins, the more specific kinds first ("how many years"
// is a duration before it is a number).
var askRules = []struct {
	kind Asked
	re   *regexp.Regexp
}{
	{AskedAge, regexp.MustCompile(`(?i)\bhow old\b|\bwhat age\b|\bat what age\b|\bage of\b|几岁|多大年纪|多少岁|年龄|岁数`)},
	{AskedPrice, regexp.MustCompile(`(?i)\bprice\b|\bcost\b|\bhow much (does|do|is|are|did|was|were)\b|\bfee\b|\bcharge\b|多少钱|价格|价钱|售价|费用|收费|保费|定价`)},
	{AskedDuration, regexp.MustCompile(`(?i)\bhow long\b|\bhow many\b[^?]*\b(days|weeks|months|years|hours|minutes|seconds)\b|\bduration\b|多久|多长时间|几天|几年|几个月|多少天|多少年|多少个月|多少小时|期限|时长`)},
	{AskedDate, regexp.MustCompile(`(?i)\bwhen\b|\bwhat (year|date|day|month|century|decade)\b|\bwhich (year|date|day|month|century|decade)\b|\bin what year\b|什么时候|何时|哪一年|哪年|哪一天|哪天|几月|几号|日期|年份|哪个朝代`)},
	{AskedNumber, regexp.MustCompile(`(?i)\bhow many\b|\bhow much\b|\bwhat (number|percentage|percent|share|amount)\b|\bhow (far|tall|high|large|big|deep|wide|heavy)\b|多少|几个|几位|几名|几次|几条|几种|多高|多重|多远|多大|比例|数量|人口`)},
	{AskedPlace, regexp.MustCompile(`(?i)^\s*where\b|\bwhere (is|was|are|were|did|does|do)\b|\bin (what|which) (city|country|state|town|province|region)\b|\bwhat (city|country|state|town|province|region)\b|哪里|哪儿|在哪|什么地方|何地|何处|地理位置|哪个城市|哪个国家|哪个省|哪座城市`)},
	{AskedName, regexp.MustCompile(`(?i)^\s*(who|whom|whose)\b|\bwho\b|\bwhat is the name\b|\bwhat('s| is| was) (his|her|its|their) name\b|\bnamed\b|\bwhich (person|company|team|band|city|country|actor|author|player|film|book|album|club|university|state)\b|谁|哪位|什么人|叫什么|名字|名称|哪家|别称|别名|又称|又名|称之为|称为什么|简称|俗称|原名`)},
}

// AskedFor reads what q asks for (AskedNone when it is not one of the known kinds).
func AskedFor(q string) Asked {
	q = strings.TrimSpace(q)
	for _, r := range askRules {
		if r.re.MatchString(q) {
			return r.kind
		}
	}
	return AskedNone
}

var (
	reYear     = regexp.MustCompile(`\b(1[0-9]{3}|20[0-9]{2})\b|[0-9〇零一二三四五六七八九]{2,4}年`)
	reMonth    = regexp.MustCompile(`(?i)\b(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\b|[0-9一二三四五六七八九十]{1,3}月|[0-9一二三四五六七八九十]{1,3}日|\b\d{4}-\d{2}(-\d{2})?\b`)
	reAge      = regexp.MustCompile(`(?i)\b\d{1,3}[ -]?(years?|yrs?)[ -]old\b|\baged? \d{1,3}\b|[0-9一二三四五六七八九十]+\s*(周岁|岁)`)
	rePrice    = regexp.MustCompile(`(?i)[$€£¥￥]\s?\d|\d\s?(usd|eur|gbp|cny|rmb|dollars?|euros?|pounds?|cents?|元|美元|欧元|英镑|万元|亿元)|\d\s*(元|块)|price|per month|/month|/mo\b`)
	reDuration = regexp.MustCompile(`(?i)\d+(\.\d+)?\s?(seconds?|minutes?|hours?|days?|weeks?|months?|years?|decades?|centuries)\b|[0-9一二三四五六七八九十百两]+\s*(秒|分钟|小时|天|日|周|星期|个月|月|年|世纪)`)
	ReAlias    = regexp.MustCompile(`又名|又称|别称|别名|俗称|简称|称为|称之为|叫做|名为|原名|亦称|也称|也叫|又叫|\(also (known as|called)|\baka\b|\bknown as\b`)
	rePlace    = regexp.MustCompile(`位于|地处|坐落|[省市县州区镇村岛湖河山]|\b(in|at|near|from) (the )?[A-Z][a-z]+`)
	reNumber   = regexp.MustCompile(`\d|[一二三四五六七八九十百千万亿两]`)
)

// Holds reports whether s Holds the kind of thing asked, given the question q (a name must be one the
// question does not already state).
func Holds(s string, kind Asked, q string) bool {
	switch kind {
	case AskedDate:
		return reYear.MatchString(s) || reMonth.MatchString(s)
	case AskedAge:
		return reAge.MatchString(s)
	case AskedPrice:
		return rePrice.MatchString(s)
	case AskedDuration:
		return reDuration.MatchString(s)
	case AskedNumber:
		return len(ExtractNumbers(s)) > 0 || reNumber.MatchString(s)
	case AskedName:
		return len(NewNames(s, q)) > 0 || ReAlias.MatchString(s)
	case AskedPlace:
		return rePlace.MatchString(s)
	}
	return false
}

// NewNames returns the capitalised words of s (not opening a sentence) that q does not contain, or,
// for Chinese text, the 《》 or 「」-quoted titles q does not contain: names the sentence adds.
func NewNames(s, q string) []string {
	lq := strings.ToLower(q)
	var out []string
	for _, t := range []string{"《", "「", "“"} {
		rest := s
		for {
			i := strings.Index(rest, t)
			if i < 0 {
				break
			}
			rest = rest[i+len(t):]
			j := strings.IndexAny(rest, "》」”")
			if j <= 0 {
				break
			}
			if name := rest[:j]; !strings.Contains(q, name) {
				out = append(out, name)
			}
			rest = rest[j:]
		}
	}
	words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' })
	first := true
	for _, w := range words {
		r, _ := utf8.DecodeRuneInString(w)
		if unicode.IsUpper(r) && !first && len(w) > 1 && !strings.Contains(lq, strings.ToLower(w)) {
			out = append(out, w)
		}
		first = false
	}
	return out
}

// ClaimNames returns the names a claim states, each to be found in the passage it cites: the
// 《》「」“”-quoted titles, every capitalised word (the one opening the sentence too: "Google acquired
// GitHub" names Google) except common sentence openers, stop words, month and day names and currency
// codes (dates and amounts are checked as such), and in Chinese the place or body named after a cue
// such as 位于 or 来自 ("总部位于上海" names 上海). Unlike newNames (the reader's), it keeps the
// sentence's first word.
func ClaimNames(s string) []string {
	out := NewNames(s, "")
	var kept []string
	for _, n := range out { // newNames' capitalised words are re-read below, first word included
		if strings.ContainsFunc(n, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' }) || !isCapitalised(n) {
			kept = append(kept, n)
		}
	}
	// a CJK character ends a Latin word here: "Team计划" names Team
	words := strings.FieldsFunc(s, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '-' || text.IsCJK(r)
	})
	for _, w := range words {
		if isCapitalised(w) && len(w) > 1 && !notAName(w) && !slices.Contains(kept, w) {
			kept = append(kept, w)
		}
	}
	for _, m := range reCNCue.FindAllStringSubmatch(s, -1) {
		if core := string([]rune(m[2])[:2]); !slices.Contains(kept, core) {
			kept = append(kept, core)
		}
	}
	// a person after the word that introduces one ("创始人是李明", "由李明创立"): its first two
	// characters, surname and given name, must be in the passage
	for _, m := range reCNPerson.FindAllStringSubmatch(s, -1) {
		name, ok := PersonAfterRole(m[2])
		if m[2] == "" {
			name, ok = m[3], !notAPerson(m[3])
		}
		if !ok {
			continue
		}
		if core := string([]rune(name)[:2]); !slices.Contains(kept, core) {
			kept = append(kept, core)
		}
	}
	return kept
}

// reCNPerson finds a Chinese person's name after 创始人是/负责人为/作者是 ... (group 2: the run of Han
// characters that follows, read by personAfterRole), or between 由 and the verb of what that person did
// (group 3: "由李明创立"; 由于 is "because").
var reCNPerson = regexp.MustCompile(`(创始人|创办人|创立者|创建者|负责人|董事长|总经理|首席执行官|作者|导演|主编|发明人|发明者|设计者|设计师|法定代表人)(?:是|为|：|:)\s*(\p{Han}{2,12})|由\s*(\p{Han}{2,3}?)(?:于|在)?(?:创立|创办|创建|建立|成立|发起|领导|主持|执导|编写|撰写|设计|发明|提出|主演|创作|编著)`)

// cnModifiers come before a name without being one: "导演是著名导演张艺谋" names 张艺谋, not 著名.
var cnModifiers = []string{"著名的", "著名", "知名的", "知名", "有名的", "一位", "一名", "一个", "这位", "那位", "该位"}

// cnNotPersons are the words after 作者是/由 that refer to someone without naming them (pronouns,
// "the company") or describe them (a profession): not a name the passage must hold.
var cnNotPersons = []string{"该", "其", "本", "此", "这", "那", "他们", "她们", "它们", "我们", "你们", "咱们", "大家", "他", "她",
	"它", "我", "你", "公司", "团队", "作家", "导演", "演员", "学者", "教授", "老师", "专家", "记者", "诗人", "画家", "歌手",
	"政府", "官方", "集团", "机构", "组织", "多人", "多位"}

// cnAfterName are the characters that may follow a name in the 是/为 form when more text follows it:
// a verb or a link ("作者是李明，" ends it; "作者是李明于2001年..." goes on with 于).
var cnAfterName = "于在和与及等所创执编撰主担出先女"

// PersonAfterRole reads the name in the run of Han characters after 作者是/导演为 ...: modifiers
// skipped, and only a name of 2 or 3 characters that ends the run or is followed by a verb or a link
// ("导演是著名导演张艺谋" has no name right there: 导演张 goes on with 艺).
func PersonAfterRole(run string) (string, bool) {
	for changed := true; changed; {
		changed = false
		for _, m := range cnModifiers {
			if strings.HasPrefix(run, m) {
				run, changed = strings.TrimPrefix(run, m), true
			}
		}
	}
	rs := []rune(run)
	if len(rs) < 2 || notAPerson(run) {
		return "", false
	}
	if len(rs) <= 3 {
		return run, true
	}
	for _, k := range []int{2, 3} {
		if strings.ContainsRune(cnAfterName, rs[k]) {
			return string(rs[:k]), true
		}
	}
	return "", false
}

// notAPerson reports a name candidate that is a pronoun, a reference or a profession.
func notAPerson(name string) bool {
	for _, w := range cnNotPersons {
		if strings.HasPrefix(name, w) {
			return true
		}
	}
	return false
}

func isCapitalised(w string) bool {
	r, _ := utf8.DecodeRuneInString(w)
	return unicode.IsUpper(r)
}

// reCNCue finds a Chinese place or body after the verb that introduces it; its first two characters
// are its core ("北京市海淀区" is found by 北京).
var reCNCue = regexp.MustCompile(`(位于|坐落于|坐落在|地处|总部设在|总部设于|总部在|设在|设于|来自|出生于|出生在|生于|隶属于|首都是|省会是|首府是)\s*(\p{Han}{2,})`)

// notAName reports the capitalised words that are not names to look for: sentence openers, stop
// words, generic subjects ("Staff get ..." paraphrases "employees"), month and day names, currency
// codes.
func notAName(w string) bool {
	l := strings.ToLower(w)
	if text.Stopwords[l] || sentenceOpeners[l] {
		return true
	}
	_, abbr := monthNames[l]
	return abbr || strings.Contains(fullMonths, " "+l+" ")
}

const fullMonths = " january february march april may june july august september october november december sept "

var sentenceOpeners = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`yes no according based however also therefore thus so hence in on at as for from with
		after before during since under over each every all both most some many any much more few several our your
		you we i he she his her its it they them their there here this that these those what which who whom whose
		when where why how note answer overall currently today first second third finally additionally moreover
		furthermore generally usually typically only other another one two three to by if while although though
		because per not none neither either see please then yet still just even about around approximately
		nearly almost up down out than my me us him monday tuesday wednesday thursday friday saturday sunday
		usd eur gbp cny rmb jpy hkd
		staff employees employee users user customers customer people persons members workers students clients
		visitors guests applicants everyone someone anyone nobody full-time part-time`) {
		sentenceOpeners[w] = true
	}
}
