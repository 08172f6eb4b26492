package reader

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rank"
)

// declines.go reads a model's answer for an abstention: a model told that the passages may not answer
// says so in its own words ("The provided documents do not mention a CEO.", "文档中没有提到CEO。"),
// often citing the passage it looked in; or it writes something and cites nothing over passages that
// the offline rule (Abstains) finds do not answer the question. Either way the answer is an abstention
// as the offline one is: done.abstained, nothing cited, LOW.

// reDeclines is a sentence saying the documents do not answer (folded to lower case). The phrasings
// are the ones models write when a prompt tells them to say so (docmind's does: prompts/system.tmpl),
// in English and Chinese; "not" alone is not enough ("Leave is not paid out [1]" answers).
var reDeclines = regexp.MustCompile(`(?i)` +
	`\b(documents?|passages?|sources?|context|texts?|excerpts?|information|knowledge base|materials?|files?|records?)( provided| given| above| retrieved| available)?` +
	`( do| does| did)?( not|n't| neither)( say| state| mention| specify| contain| include| provide| give| cover| address| answer| tell| describe| discuss| indicate| list| name| hold| have| offer)\b` +
	`|\b(not|never|nowhere) (mentioned|stated|specified|given|provided|covered|addressed|described|found|included|listed|indicated)( anywhere)? in (the|any|these|those|your) (provided |given |retrieved |available )?(documents?|passages?|sources?|context|texts?|excerpts?|knowledge base|materials?|files?)\b` +
	`|\b(there is|there's|i found|i find|i have|i've) no (information|mention|details?|data|record|answer|indication)\b` +
	`|\b(documents?|passages?|sources?|context|excerpts?|knowledge base)( provided| given| above| retrieved)? (contains?|holds?|has|have|gives?|offers?) no (information|mention|details?|data|record|answer)\b` +
	`|\bno (information|mention|details?|answer|data) (about|on|of|regarding|concerning|for|as to)\b` +
	`|\bi (cannot|can't|could not|couldn't|am unable to|was unable to|am not able to|was not able to|do not|don't) (find|answer|determine|tell|see|locate|confirm|say)\b` +
	`|\b(cannot|can't|could not|couldn't|unable to) be (determined|answered|found)\b` +
	`|\bnone of the (provided |given |retrieved )?(documents?|passages?|sources?|excerpts?)\b` +
	`|\bthe documents do not say\b` +
	`|(文档|文件|资料|段落|材料|来源|上下文|内容|知识库)(中|里|内)?(并)?(没有|没|未|无|不)(提到|提及|涉及|说明|包含|给出|记载|载明|明确|相关|写明|列出|规定|涵盖|覆盖)` +
	`|(没有|并未|未曾|未)(提到|提及|找到)` +
	`|(无法|不能|难以)(回答|确定|找到|判断|得知|获知|确认)|找不到|查不到|没有找到|未找到|没有相关(信息|内容|资料|记载|说明)|无相关(信息|内容|资料)`)

// reTurn splits a sentence where it turns to what the documents do say ("…do not say X, but Y [1]").
var reTurn = regexp.MustCompile(`(?i)[;；]|,? but |,? however,? |,? although |,? though |[，,]?(但是|但|不过|然而|而)`)

// reLeadCites are citation markers opening a piece of text.
var reLeadCites = regexp.MustCompile(`^\s*([\[【［]\d{1,3}[\]】］]\s*)+`)

// Declines reports whether a model's answer over ev is an abstention: at least one of its sentences
// says the documents do not answer and none of the others carries a valid citation (a partial answer,
// "20 days [1]; the documents do not say whether part-time staff get them", is an answer); or it cites
// nothing valid while abstains, the offline rule, finds that the passages do not answer the question.
// A summary of selected documents never abstains; the caller does not ask.
func Declines(q, answer string, ev []rank.Evidence, grade rank.Grade, abstains func(string, []rank.Evidence, rank.Grade) (string, bool)) bool {
	if strings.TrimSpace(answer) == "" {
		return false
	}
	declines, cited := false, false
	lastDeclines := false
	for _, s := range lang.SplitSentences(answer) {
		for _, part := range reTurn.Split(s, -1) {
			if lead := reLeadCites.FindString(part); lead != "" && strings.TrimSpace(lead) != strings.TrimSpace(part) {
				// "… 20 days. [1] The documents do not say …": the leading [1] is the sentence before's
				cited = cited || !lastDeclines && citesValid(lead, len(ev))
				part = part[len(lead):]
			}
			bare := strings.TrimSpace(lang.CiteRe.ReplaceAllString(part, ""))
			switch {
			case utf8.RuneCountInString(strings.Trim(bare, " .。")) == 0:
				// a citation alone after a sentence ("… 20 days. [1]") is that sentence's: one after a
				// declining sentence cites what was searched, one after another cites an answer
				cited = cited || !lastDeclines && citesValid(part, len(ev))
			case reDeclines.MatchString(lang.FoldLower(bare)):
				declines, lastDeclines = true, true
			default:
				lastDeclines = false
				cited = cited || utf8.RuneCountInString(bare) >= 4 && citesValid(part, len(ev))
			}
		}
	}
	if declines && !cited {
		return true
	}
	if cited || !declines && anyValid(answer, len(ev)) {
		return false
	}
	_, no := abstains(q, ev, grade)
	return no
}

// citesValid reports whether s carries a citation of one of n sources.
func citesValid(s string, n int) bool {
	for _, m := range lang.CiteRe.FindAllStringSubmatch(s, -1) {
		if k, _ := strconv.Atoi(m[1]); k >= 1 && k <= n {
			return true
		}
	}
	return false
}

// anyValid reports whether the answer cites one of n sources anywhere.
func anyValid(answer string, n int) bool { return citesValid(answer, n) }

// Uncited is the answer with its citation markers removed: an abstention cites nothing, whatever
// passage the model named as the one it looked in.
func Uncited(answer string) string {
	out := lang.CiteRe.ReplaceAllString(answer, "")
	out = strings.NewReplacer(" .", ".", " ,", ",", " 。", "。", "  ", " ").Replace(out)
	return strings.TrimSpace(out)
}
