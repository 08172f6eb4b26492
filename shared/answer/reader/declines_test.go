package reader

import (
	"testing"

	"github.com/docmind/docmind/shared/rank"
)

// Declines reads a model's answer for "the documents do not say" in English and Chinese, whatever
// passage the model cites for where it looked; an answer that cites what the documents do say, or
// only mentions "not", is an answer.
func TestDeclines(t *testing.T) {
	ev := []rank.Evidence{{Text: "Full-time employees get 20 days of paid annual leave per year."}, {Text: "Sick leave is 10 days."}}
	g := rank.Grade{Tier: rank.TierHigh, Coverage: 0.9}
	never := func(string, []rank.Evidence, rank.Grade) (string, bool) { return "", false }
	always := func(string, []rank.Evidence, rank.Grade) (string, bool) { return "no", true }
	for _, c := range []struct {
		answer string
		rule   func(string, []rank.Evidence, rank.Grade) (string, bool)
		want   bool
	}{
		{"The documents do not say who the CEO is.", never, true},
		{"The provided documents do not mention a CEO [1].", never, true},
		{"The passages don't specify the CEO of Example Corp. [1][2]", never, true},
		{"There is no information about the CEO in the documents.", never, true},
		{"I couldn't find the CEO's name in the provided context.", never, true},
		{"The CEO is not mentioned in the provided documents [2].", never, true},
		{"None of the passages names a CEO.", never, true},
		{"The context contains no information on the CEO.", never, true},
		{"文档中没有提到公司的CEO。[1]", never, true},
		{"根据提供的资料，无法回答这个问题。", never, true},
		{"所提供的段落中并未提及CEO。", never, true},
		{"资料中没有相关信息。", never, true},
		// what docmind's own prompt asks for (prompts/system.tmpl)
		{"The knowledge base does not cover who the CEO is.", never, true},
		{"知识库没有涵盖这个问题。", never, true},
		// answers
		{"Full-time employees get 20 days [1].", always, false},
		{"Full-time employees get 20 days [1]. The documents do not say whether part-time staff do.", always, false},
		{"The documents do not say whether part-time staff get leave, but full-time employees get 20 days [1].", always, false},
		{"Full-time employees get 20 days. [1] The documents do not say whether part-time staff do.", always, false},
		{"年假为20天[1]，但文档没有提到兼职员工。", always, false},
		{"Unused leave is not paid out [1].", always, false},
		{"Leave cannot be carried over without approval [1].", always, false},
		// an answer citing nothing: the offline rule decides
		{"The CFO is Jane Doe.", always, true},
		{"Sick leave is ten days.", never, false},
		// citing a source that does not exist is citing nothing
		{"The CFO is Jane Doe [7].", always, true},
	} {
		if got := Declines("q", c.answer, ev, g, c.rule); got != c.want {
			t.Errorf("Declines(%q) = %v, want %v", c.answer, got, c.want)
		}
	}
	if got := Uncited("The provided documents do not mention a CEO [1]."); got != "The provided documents do not mention a CEO." {
		t.Errorf("Uncited = %q", got)
	}
	if got := Uncited("文档中没有提到公司的CEO。【2】"); got != "文档中没有提到公司的CEO。" {
		t.Errorf("Uncited = %q", got)
	}
}
