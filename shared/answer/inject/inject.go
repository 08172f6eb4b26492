// Package inject finds instructions aimed at the assistant inside retrieved passages (indirect prompt
// injection, RELIABILITY.md SEC-03) and cleans answers of what such text asks for (SEC-04): images,
// links and HTML pointing outside the server, and sentences that echo an injected instruction.
//
// Detection reads a normalised copy of the text (Normalise): zero-width and other invisible runes are
// dropped, compatibility forms folded (NFKC: full-width letters), and Cyrillic and Greek look-alikes read
// as the Latin letters they imitate, so "ignоre" with a Cyrillic о or "ig\u200bnore" is "ignore".
package inject

import (
	"regexp"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"

	"github.com/docmind/docmind/shared/rank"
)

// Reasons a passage is flagged.
const (
	ReasonIgnore     = "ignore-instructions" // "ignore previous instructions", "忽略之前的指令"
	ReasonRole       = "role-play"           // "you are now", "pretend to be", "你现在是"
	ReasonSystem     = "system-prompt"       // a fake system or assistant turn, "[SYSTEM]", "<|im_start|>"
	ReasonReply      = "reply-instruction"   // "reply with PWNED", "the assistant must", "请回复"
	ReasonExfil      = "exfiltration"        // an outside image or link asked for, "append the conversation to"
	ReasonHiddenText = "hidden-text"         // zero-width runes inside words
)

// Flag names one retrieved passage that carries an instruction: its source number in the answer's
// numbering (1-based, as [n]), the document, and why.
type Flag struct {
	Source   int    `json:"source"`
	Document string `json:"document"`
	Reason   string `json:"reason"`
}

// invisible are runes a reader does not see: zero-width spaces and joiners, the word joiner and
// invisible operators, the byte-order mark, soft hyphens, and the bidi controls.
func invisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x2060 && r <= 0x2064, r == 0xFEFF, r == 0x00AD,
		r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x180E:
		return true
	}
	return false
}

// homoglyphs maps Cyrillic and Greek letters that look like Latin ones to those letters.
var homoglyphs = map[rune]rune{
	'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'і': 'i', 'ј': 'j', 'ѕ': 's',
	'ԁ': 'd', 'һ': 'h', 'ӏ': 'l', 'ԛ': 'q', 'ԝ': 'w', 'в': 'b', 'к': 'k', 'м': 'm', 'н': 'h', 'т': 't',
	'А': 'a', 'В': 'b', 'Е': 'e', 'К': 'k', 'М': 'm', 'Н': 'h', 'О': 'o', 'Р': 'p', 'С': 'c', 'Т': 't',
	'Х': 'x', 'У': 'y', 'І': 'i', 'Ѕ': 's', 'Ј': 'j',
	'α': 'a', 'ο': 'o', 'ε': 'e', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x',
	'Α': 'a', 'Β': 'b', 'Ε': 'e', 'Ζ': 'z', 'Η': 'h', 'Ι': 'i', 'Κ': 'k', 'Μ': 'm', 'Ν': 'n', 'Ο': 'o',
	'Ρ': 'p', 'Τ': 't', 'Υ': 'y', 'Χ': 'x',
}

// Normalise is the text detection reads: NFKC, invisible runes removed, look-alikes folded to Latin,
// lower case, runs of spaces and tabs as one space (line breaks kept: a fake "system:" turn starts a line).
func Normalise(s string) string {
	s = norm.NFKC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if r >= 0x80 && invisible(r) {
			continue
		}
		if r >= 0x370 && r <= 0x52F { // Greek and Cyrillic: the only look-alikes folded
			if l, ok := homoglyphs[r]; ok {
				r = l
			}
		}
		if unicode.IsSpace(r) && r != '\n' {
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = r == '\n'
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// rule is one pattern of an instruction, read on normalised text. need gates it: the regexp runs only
// when, for every group of need, the text holds one of the group's words. The gates are what keeps
// detection cheap: the patterns' bounded gaps (".{0,40}") make large automata, and running them all
// over every passage made the offline answer stage a hundred times slower (BenchmarkAnswerStage).
type rule struct {
	reason string
	need   [][]string
	re     *regexp.Regexp
}

// rules are checked in order; the first match names the reason.
var rules = []rule{
	{ReasonIgnore, [][]string{{"ignore", "disregard", "forget", "override", "bypass", "skip"}, {"instruction", "prompt", "rule", "direction", "guideline", "context", "guardrail", "everything"}},
		regexp.MustCompile(`\b(ignore|disregard|forget|override|bypass|skip)\b.{0,40}\b(instructions?|prompts?|rules|directions|guidelines|context|guardrails|everything (above|before))\b`)},
	{ReasonIgnore, [][]string{{"忽略", "无视", "忘记", "忘掉", "不要理会", "不要遵守", "抛开"}},
		regexp.MustCompile(`(忽略|无视|忘记|忘掉|不要理会|不要遵守|抛开)掉?(之前|以上|上述|前面|先前|所有|全部|一切|原有|原来)的?(所有|全部)?的?(指令|指示|规则|提示|约束|设定|要求)`)},
	{ReasonSystem, [][]string{{"system", "developer", "assistant"}},
		regexp.MustCompile(`(?m)(^\s*|[\[(<#*]\s*)(system|developer|assistant)\s*(prompt|message|instruction|override|note)?\s*[:\]>]|<\|?system\|?>|###\s*system|\bsystem prompt\b|\bdeveloper mode\b`)},
	{ReasonSystem, [][]string{{"im_start", "im_end", "endoftext", "###", "instruction", "jailbreak", "系统", "开发者模式", "新的指令", "新指令"}},
		regexp.MustCompile(`<\|?(im_start|im_end|endoftext)\|?>|###\s*instruction|\bnew instructions?\b|\bjailbreak|系统提示|系统指令|系统消息|【系统】|\[系统\]|开发者模式|新的指令|新指令`)},
	{ReasonRole, [][]string{{"you are", "from now on", "pretend", " as ", "role", "your new"}},
		regexp.MustCompile(`\byou are (now|no longer)\b|\bfrom now on,? you\b|\bpretend (to be|you are)\b|\b(act|behave|respond) as (if you|an? (unrestricted|unfiltered|uncensored|evil|different|new))\b|\blet'?s role ?-?play\b|\brole ?-?play persona\b|\byour new (role|name|task|persona)\b`)},
	{ReasonRole, [][]string{{"你现在是", "从现在", "假装", "扮演", "你的新"}},
		regexp.MustCompile(`你现在是|从现在(开始|起)[，,]?你|假装(你是|成为)|(你|助手|模型)(来|要|将)?扮演|你的新(身份|角色|任务)`)},
	{ReasonExfil, [][]string{{"![", "<", "?q={", "{"}},
		regexp.MustCompile(`!\[[^\]]*\]\(\s*(https?:)?//|<\s*(img|iframe|script|svg|object|embed|a)\b|\?q=\{|\{(conversation|question|history|chat)\}`)},
	{ReasonExfil, [][]string{{"append", "add", "include", "insert", "embed", "render", "put", "send"}, {"conversation", "chat history", "user", "previous question", "previous answer"}},
		regexp.MustCompile(`\b(append|add|include|insert|embed|render|put|send)\b.{0,50}\b(conversation|chat history|user'?s? (question|data|messages?)|previous (question|answer)s?)\b`)},
	{ReasonExfil, [][]string{{"附加", "添加", "插入", "嵌入", "发送", "显示"}, {"对话", "聊天记录", "用户的问题", "//"}},
		regexp.MustCompile(`(附加|添加|插入|嵌入|发送).{0,20}(对话|聊天记录|用户的问题)|(插入|嵌入|显示).{0,10}(图片|链接).{0,20}(https?:)?//`)},
	{ReasonReply, [][]string{{"pwned", "hacked", "owned"}},
		regexp.MustCompile(`\b(reply|respond|answer|say|output|print|write|type)\b\s+(only\s+)?(with\s+)?(the\s+)?(word|phrase|text|string)?\s*["'“‘]?[a-z0-9_-]*\b(pwned|hacked|owned)\b`)},
	{ReasonReply, [][]string{{"assistant", "ai", "chatbot", "language model", "llm", "model"}, {"must", "should", "shall", "need", "has to"}},
		regexp.MustCompile(`\b(assistant|ai|chatbot|language model|llm|model)s?\b.{0,30}\b(must|should|shall|needs? to|has to)\b.{0,30}\b(say|reply|respond|answer|tell|output|include|recommend|claim)\b`)},
	{ReasonReply, [][]string{{"the user", "asked", "do not"}},
		regexp.MustCompile(`\b(tell|inform) the user\b|\bwhen (you are |you're )?asked\b.{0,40}\b(say|reply|answer|respond)\b|\bdo not (tell|mention|reveal)\b.{0,30}\b(user|instructions?)\b`)},
	{ReasonReply, [][]string{{"请", "必须", "务必", "一定要", "应该", "应当", "需要", "告诉用户", "回答时"}},
		regexp.MustCompile(`(请|必须|务必|一定要)(只)?(回复|回答|输出|说)|(助手|模型|ai|机器人)(必须|应该|应当|需要)|告诉用户|回答时(必须|要)`)},
}

// gated reports whether n holds a word of every group of need.
func gated(n string, need [][]string) bool {
	for _, group := range need {
		hit := false
		for _, w := range group {
			if strings.Contains(n, w) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

// Detect returns why s instructs the assistant, or "" when it does not.
func Detect(s string) string {
	n := Normalise(s)
	for _, r := range rules {
		if gated(n, r.need) && r.re.MatchString(n) {
			return r.reason
		}
	}
	return ""
}

// reHiddenInWord is a zero-width rune between two letters: no document needs one there, and it is the
// usual way to split a word past a filter.
var reHiddenInWord = regexp.MustCompile(`\pL[\x{200B}-\x{200D}\x{2060}\x{FEFF}]+\pL`)

// Passages flags each passage of ev that carries an instruction, in source order (source n is ev[n-1]);
// an empty list, never nil, when none does.
func Passages(ev []rank.Evidence) []Flag {
	out := []Flag{}
	for i, e := range ev {
		body := e.Text
		if strings.TrimSpace(body) == "" {
			body = e.ChildText
		}
		reason := Detect(body)
		if reason == "" && e.ChildText != body {
			reason = Detect(e.ChildText)
		}
		if reason == "" && reHiddenInWord.MatchString(body) {
			reason = ReasonHiddenText
		}
		if reason != "" {
			out = append(out, Flag{Source: i + 1, Document: e.FileName, Reason: reason})
		}
	}
	return out
}
