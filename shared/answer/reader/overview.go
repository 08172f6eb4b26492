package reader

import (
	"regexp"
	"strings"
	"unicode"
)

// reOverview is a question that asks about a topic as a whole rather than for a fact: "tell me about
// annual leave", "what about the refund policy?", "give me an overview of ...", "介绍一下年假",
// "说说报销流程", "关于年假". One matched line is a fact about the topic, not what was asked for.
var reOverview = regexp.MustCompile(`(?i)^\s*(please\s+)?(tell me (more )?about|what about|how about|what do (we|you|the documents) (know|have|say) about|` +
	`(give|show) me (an? )?(overview|summary|rundown|run-down|details|information|info)\b|` +
	`(an? )?(overview|summary|rundown|explanation) of|describe|information (on|about)|info (on|about)|details (on|about)|everything about|anything about)\b` +
	`|\b(summar(y|ise|ize)|overview|outline|gist|key points|main points)\b` +
	`|^\s*(请)?(介绍|说说|讲讲|谈谈|聊聊|概述|总结|概括)|^\s*关于[^？?。]{1,16}[？?]?\s*$|(的)?(相关|有关|详细)(信息|情况|内容|规定)[？?]?\s*$|(总结|概括|概述|要点|主要内容)`)

// reAsksFact opens or marks a question that asks for a fact ("what", "how many", "is"...).
var reAsksFact = regexp.MustCompile(`(?i)\b(who|whom|whose|what|which|when|where|why|how|is|are|was|were|do|does|did|can|could|should|will|would|has|have|had)\b|[?？]|什么|哪|谁|几|多少|吗|怎么|如何|为什么|是否`)

// OverviewQuestion reports whether q asks about a topic as a whole: an overview phrasing ("tell me about
// annual leave", "介绍一下年假"), or a few words that ask nothing ("annual leave", "年假政策"), as typed
// into a search box. Such a question answered with one line is not answered surely, whatever that
// line's match.
func OverviewQuestion(q string) bool {
	q = strings.TrimSpace(q)
	if reOverview.MatchString(q) {
		return true
	}
	if reAsksFact.MatchString(q) {
		return false
	}
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	latin, cjk := 0, 0
	for _, w := range words {
		for _, r := range w {
			if unicode.Is(unicode.Han, r) {
				cjk++
			}
		}
		if !strings.ContainsFunc(w, func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			latin++
		}
	}
	return latin > 0 && latin <= 4 && cjk == 0 || cjk > 0 && cjk <= 6 && latin == 0
}
