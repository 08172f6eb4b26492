package calibrate

import (
	"testing"

	"github.com/docmind/docmind/shared/rank"
)

// The features that tell kinds of question apart read the question and the answer: a single-passage
// lookup that cites one source and repeats the question's names and numbers, a long multi-hop question
// answered from two sources, a Chinese question.
func TestKindFeatures(t *testing.T) {
	ev2 := []rank.Evidence{ev("a.md", "Super Bowl 50 was played at Levi's Stadium in Santa Clara.", 0.9), ev("b.md", "Santa Clara is in California.", 0.5)}
	lookup := FeaturesOf("Where was Super Bowl 50 played?", "- Super Bowl 50 was played at Levi's Stadium in Santa Clara. [1]", ev2, rank.Grade{Tier: rank.TierHigh}, false, nil)
	if lookup.CitedSources != 0.2 || lookup.QuestionNames != 0.25 || lookup.NamesHeld != 1 || lookup.NumbersHeld != 1 ||
		lookup.AskedName != 1 || lookup.AskedNumber != 0 || lookup.QuestionWords != 6.0/40 {
		t.Errorf("lookup features %+v", lookup)
	}
	hop := FeaturesOf("In which state is the city where the stadium that hosted the fiftieth Super Bowl stands, according to Wikipedia?",
		"- Super Bowl 50 was played at Levi's Stadium in Santa Clara. [1]\n- Santa Clara is in California. [2]", ev2, rank.Grade{Tier: rank.TierAmbiguous}, false, nil)
	if hop.CitedSources != 0.4 || hop.QuestionNames != 0.5 || hop.NamesHeld != 0.5 || hop.NumbersHeld != 0 || hop.QuestionWords != 19.0/40 {
		t.Errorf("multi-hop features %+v", hop)
	}
	zh := FeaturesOf("年假每年多少天？", "- 员工每年享有20天年假。 [1]", []rank.Evidence{ev("h.md", "员工每年享有20天年假。", 0.9)}, rank.Grade{Tier: rank.TierHigh}, false, nil)
	if zh.CJK != 1 || zh.AskedNumber != 1 || zh.QuestionNames != 0 || zh.NamesHeld != 0 || zh.QuestionWords != 4.0/40 {
		t.Errorf("Chinese features %+v", zh)
	}
}
