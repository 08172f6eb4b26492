package reader

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/rank"
)

// The offline answer's own words follow the question's language; the quotes stay in the documents'.
func TestOfflineNoticeFollowsTheQuestion(t *testing.T) {
	handbook := []rank.Evidence{ev("手册.md", "员工福利。年假每年 20 天，未休年假可顺延一年。", 0.8)}
	zh := Extractive{}.Read("年假每年多少天？", handbook)
	if !strings.HasPrefix(zh.Answer, OfflineNoticeZH) || strings.Contains(zh.Answer, "No language model") {
		t.Fatalf("a Chinese question's answer should open with the Chinese notice: %q", zh.Answer)
	}
	if !strings.Contains(zh.Answer, "20 天") {
		t.Fatalf("the quote is lost: %q", zh.Answer)
	}
	en := Extractive{}.Read("How many days of annual leave?", []rank.Evidence{ev("hb.md", "Employees get 20 days of annual leave.", 0.8)})
	if !strings.HasPrefix(en.Answer, OfflineNotice) {
		t.Fatalf("an English question's answer should open with the English notice: %q", en.Answer)
	}
	for q, want := range map[string]string{"年假每年多少天？": NoEvidenceAnswerZH, "How many days?": NoEvidenceAnswer} {
		if got := (Extractive{}).Read(q, nil).Answer; got != want {
			t.Errorf("%s with nothing retrieved: %q, want %q", q, got, want)
		}
	}
	if got := (Extractive{}).Read("报销流程是什么？", []rank.Evidence{ev("x.md", "Lunch is served at noon.", 0.5)}).Answer; got != NoMatchAnswerZH {
		t.Errorf("no shared word, Chinese question: %q", got)
	}
}
