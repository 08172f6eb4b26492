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

// Subjects counts the documents (by title) the top five passages come from: a lookup's passages of one
// article are one subject, five articles are five, and only English questions read it. Five of five
// with a long question, or one that describes its subject by a clause, takes the English spread map,
// which falls back to the English one when a file has none; a short lookup over five documents (a
// small knowledge base of separate files) keeps the English map.
func TestSubjectsAndKey(t *testing.T) {
	titled := func(doc, chapter string) rank.Evidence {
		e := ev(doc, "Some passage about "+chapter+".", 0.5)
		e.Chapter = chapter
		return e
	}
	oneArticle := []rank.Evidence{titled("p1", "Super Bowl 50"), titled("p2", "Super Bowl 50 > Broadcasting"), titled("p3", "super bowl 50"), titled("p4", "Super Bowl 50"), titled("p5", "Super Bowl 50")}
	fiveArticles := []rank.Evidence{titled("a", "Kiss and Tell (1945 film)"), titled("b", "Meet Corliss Archer"), titled("c", "A Kiss for Corliss"), titled("d", "Shirley Temple"), ev("e.md", "An untitled passage.", 0.4)}
	q := "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
	one := FeaturesOf(q, "- Kiss and Tell is a 1945 film. [1]", oneArticle, rank.Grade{Tier: rank.TierAmbiguous}, false, nil)
	five := FeaturesOf(q, "- Kiss and Tell is a 1945 film. [1]", fiveArticles, rank.Grade{Tier: rank.TierAmbiguous}, false, nil)
	zh := FeaturesOf("锦地罗又被称之为什么？", "- 锦地罗又称宽叶毛毡苔。 [1]", fiveArticles, rank.Grade{Tier: rank.TierAmbiguous}, false, nil)
	lookup := FeaturesOf("What is the monthly price of the Team plan?", "- monthly price (USD) for Team: 49 [1]", fiveArticles, rank.Grade{Tier: rank.TierHigh}, false, nil)
	if one.Subjects != 0 || five.Subjects != 1 || zh.Subjects != 0 || lookup.Subjects != 1 {
		t.Fatalf("subjects: one article %.2f, five %.2f, Chinese %.2f, lookup %.2f", one.Subjects, five.Subjects, zh.Subjects, lookup.Subjects)
	}
	if five.Described != 1 || lookup.Described != 0 || zh.Described != 0 {
		t.Errorf("described: %v %v %v", five.Described, lookup.Described, zh.Described)
	}
	if k := Key("extractive", lookup.Vector()); k != "extractive/en" {
		t.Errorf("a short lookup over five documents: key %s", k)
	}
	long := FeaturesOf("In what year was the stadium of the team that won the championship in the year 1990 opened?", "- It opened in 1972. [1]", fiveArticles, rank.Grade{Tier: rank.TierAmbiguous}, false, nil)
	if k := Key("extractive", long.Vector()); long.Described != 1 || k != "extractive/en/spread" {
		t.Errorf("a long question over five documents: key %s", k)
	}
	if !describes("What government position was held by the woman who portrayed Corliss Archer?") || describes("Who wrote it?") || describes("Which is the team that won?") == false {
		t.Errorf("describes")
	}
	if k := Key("extractive", one.Vector()); k != "extractive/en" {
		t.Errorf("one article: key %s", k)
	}
	if k := Key("extractive", five.Vector()); k != "extractive/en/spread" || Language(k) != "extractive/en" {
		t.Errorf("five articles: key %s, language %s", k, Language(k))
	}
	if k := Key("extractive", zh.Vector()); k != "extractive/zh" || Language(k) != "extractive/zh" {
		t.Errorf("Chinese: key %s", k)
	}
	n := len(FeatureNames)
	en, spread := &Calibrator{Answerer: "extractive/en", Weights: make([]float64, n)}, &Calibrator{Answerer: "extractive/en/spread", Weights: make([]float64, n)}
	if c := For(Calibrations{"extractive/en": en, "extractive/en/spread": spread}, "extractive", five.Vector()); c != spread {
		t.Errorf("five articles take %v, want the spread map", c)
	}
	if c := For(Calibrations{"extractive/en": en}, "extractive", five.Vector()); c != en {
		t.Errorf("without a spread map: %v, want the English map", c)
	}
	old := &Calibrator{Weights: make([]float64, n-1)} // fitted before the feature existed
	if c := For(Calibrations{"extractive/en": old}, "extractive", one.Vector()); c != nil {
		t.Errorf("a map of another feature list was used: %v", c)
	}
}
