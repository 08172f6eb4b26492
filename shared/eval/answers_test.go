package eval

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/answer/reader"
)

func TestAnswerMetrics(t *testing.T) {
	for _, c := range []struct {
		answer, gold string
		em, f1       float64
		contains     bool
	}{
		{"The Eiffel Tower!", "eiffel tower", 1, 1, true},
		{"Chief of Protocol of the US", "Chief of Protocol", 0, 0.75, true},
		{"周恩来与金日成会面", "周恩来与金日成", 0, 0.875, true},
		{"Greenwich Village", "Greenwich Village, New York City", 0, 2 * (1.0 * 2 / 5) / (1 + 2.0/5), false},
		{"nothing", "Animorphs", 0, 0, false},
		{"", "x", 0, 0, false},
	} {
		if em, f1, in := ExactMatch(c.answer, c.gold), F1(c.answer, c.gold), ContainsAnswer(c.answer, c.gold); em != c.em || math.Abs(f1-c.f1) > 1e-9 || in != c.contains {
			t.Errorf("%q vs %q: EM %v F1 %v contains %v; want %v %v %v", c.answer, c.gold, em, f1, in, c.em, c.f1, c.contains)
		}
	}
	got := AnswerBody("No language model is configured, so this answer quotes the passages.\n\n- Full-time employees get 20 days [1].\n- 年假 20 天 [2][3]")
	if got != "Full-time employees get 20 days .\n年假 20 天" {
		t.Fatalf("AnswerBody = %q", got)
	}
	if got := AnswerBody("未配置语言模型，以下内容摘自与问题最相关的文档段落。\n\n- 年假 20 天 [1]"); got != "年假 20 天" {
		t.Fatalf("AnswerBody of a Chinese offline answer = %q (the notice is not part of the answer)", got)
	}
}

func TestRunAnswers(t *testing.T) {
	ds := &Dataset{Name: "mini", Split: "test",
		Queries: []Query{{ID: "q1", Text: "Who?"}, {ID: "q2", Text: "Where?"}, {ID: "q3", Text: "No gold"}, {ID: "q4", Text: "Fails"}},
		Qrels:   map[string]map[string]int{"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}, "q4": {"d4": 1}},
		Answers: map[string][]string{"q1": {"Chief of Protocol"}, "q2": {"Paris", "Paris, France"}, "q4": {"x"}}}
	asked := 0
	r := RunAnswers(context.Background(), ds, func(_ context.Context, aq Question) (Outcome, error) {
		asked++
		switch q := aq.Text; q {
		case "Who?":
			return Outcome{Text: "She was Chief of Protocol [1].", Cited: []string{"d1"}, Band: "HIGH", Answerer: "extractive"}, nil
		case "Where?":
			return Outcome{Text: "In Lyon [1] [4].", Cited: []string{"d9"}, Band: "LOW", Invalid: 1, Answerer: "extractive"}, nil
		}
		return Outcome{}, errors.New("boom")
	}, AnswerOptions{})
	if asked != 3 || r.Queries != 3 || r.Errors != 1 || r.AnswerRecall != 1.0/3 || r.Grounded != 1.0/3 || r.CitedRelevant != 1.0/3 ||
		r.Bands["HIGH"] != 1 || r.Bands["LOW"] != 1 || r.Answerer != "extractive" || r.Worst[0].F1 != 0 {
		t.Fatalf("%+v", r)
	}
	if math.Abs(r.F1-(F1("She was Chief of Protocol .", "Chief of Protocol")/3)) > 1e-9 {
		t.Fatalf("F1 %v", r.F1)
	}
	if md := AnswerMarkdown(r); len(md) < 100 {
		t.Fatal(md)
	}
}

func TestSummariseBandsAndCalibration(t *testing.T) {
	r := AnswerResult{All: []AnswerQuery{
		{Band: "HIGH", Confidence: 0.95, Correct: true},
		{Band: "HIGH", Confidence: 0.91, Correct: false},
		{Band: "MEDIUM", Confidence: 0.70, Correct: true},
		{Band: "LOW", Confidence: 0.20, Correct: false},
		{Error: "boom"}, // failures have no confidence and are left out
	}}
	r.Summarise()
	if h := r.BandStats["HIGH"]; h.N != 2 || h.AnswerRecall != 0.5 {
		t.Fatalf("HIGH %+v", h)
	}
	if m := r.BandStats["MEDIUM"]; m.N != 1 || m.AnswerRecall != 1 || r.Bands["LOW"] != 1 {
		t.Fatalf("bands %+v %+v", r.BandStats, r.Bands)
	}
	// bins: [0.9,1.0) holds 0.95 and 0.91 (mean 0.93, accuracy 0.5); [0.7,0.8) 0.70 (accuracy 1);
	// [0.2,0.3) 0.20 (accuracy 0): ECE = 2/4*0.43 + 1/4*0.30 + 1/4*0.20
	want := 0.5*0.43 + 0.25*0.30 + 0.25*0.20
	if math.Abs(r.ECE-want) > 1e-9 || r.Reliability[9].N != 2 || math.Abs(r.Reliability[9].Confidence-0.93) > 1e-9 {
		t.Fatalf("ECE %v (want %v), bins %+v", r.ECE, want, r.Reliability)
	}
	if md := ReliabilityMarkdown(r); !strings.Contains(md, "| 0.9-1.0 | 2 | 0.930 | 0.500 |") {
		t.Fatalf("reliability table:\n%s", md)
	}
}

// The run decides abstention from the outcomes' signals with the rule it is given, so one set of
// answers measures any rule: an abstention holds no answer, counts as a false one when the question
// was asked with its documents (and as right-but-withheld when the written answer held the gold), and
// stays out of the bands. Unanswerable, the questions are asked without their judged documents.
func TestRunAnswersRuleAndUnanswerable(t *testing.T) {
	ds := &Dataset{Name: "mini", Split: "test",
		Queries: []Query{{ID: "q1", Text: "Who is the CEO of Example Corp?"}, {ID: "q2", Text: "Where is Paris?"}},
		Qrels:   map[string]map[string]int{"q1": {"d1": 1, "d0": 0}, "q2": {"d2": 1, "d3": 2}},
		Answers: map[string][]string{"q1": {"Jane Roe"}, "q2": {"France"}}}
	var without [][]string
	answer := func(_ context.Context, q Question) (Outcome, error) {
		without = append(without, q.Without)
		if q.ID == "q1" { // the name is missing, HIGH at 0.8 of the terms
			return Outcome{Text: "Jane Roe leads it [1].", Cited: []string{"d1"}, Band: "HIGH", Confidence: 0.9, Answerer: "extractive",
				Signals: &reader.Signals{Missing: "CEO", High: true, Coverage: 0.8}}, nil
		}
		return Outcome{Text: "Paris is in France [1].", Cited: []string{"d2"}, Band: "LOW", Confidence: 0.4, Answerer: "extractive", Signals: &reader.Signals{Coverage: 0.9}}, nil
	}
	r := RunAnswers(context.Background(), ds, answer, AnswerOptions{})
	if r.Abstained != 0 || r.AnswerRecall != 1 || r.Bands["HIGH"] != 1 || without[0] != nil {
		t.Fatalf("default rule (HIGH at 0.8 overrides): abstained %d recall %v bands %v without %v", r.Abstained, r.AnswerRecall, r.Bands, without)
	}
	r.ApplyRule(reader.Rule{HighCover: 0.9})
	if r.Abstained != 1 || r.AbstainedRight != 1 || r.FalseAbstainRate != 0.5 || r.AnswerRecall != 0.5 || r.Bands["HIGH"] != 0 ||
		!r.All[0].Abstained || !strings.Contains(r.All[0].Answer, "“CEO”") || r.All[0].Correct {
		t.Fatalf("stricter rule: %+v", r)
	}
	without = nil
	u := RunAnswers(context.Background(), ds, answer, AnswerOptions{Unanswerable: true, Rule: reader.Rule{HighCover: 0.9}})
	if !u.Unanswerable || u.AbstainRate != 0.5 || u.FalseAbstainRate != 0 || len(without) != 2 ||
		strings.Join(without[0], ",") != "d1" || strings.Join(without[1], ",") != "d2,d3" {
		t.Fatalf("unanswerable: abstain rate %v false %v without %v", u.AbstainRate, u.FalseAbstainRate, without)
	}
}

// Sample asks evenly spaced questions: every k-th of those with gold answers.
func TestRunAnswersSample(t *testing.T) {
	ds := &Dataset{Name: "mini", Qrels: map[string]map[string]int{}, Answers: map[string][]string{}}
	for i := range 10 {
		id := string(rune('a' + i))
		ds.Queries = append(ds.Queries, Query{ID: id, Text: id})
		ds.Answers[id] = []string{"x"}
	}
	var asked []string
	r := RunAnswers(context.Background(), ds, func(_ context.Context, q Question) (Outcome, error) {
		asked = append(asked, q.ID)
		return Outcome{Text: "x", Answerer: "extractive"}, nil
	}, AnswerOptions{Sample: 4})
	if strings.Join(asked, "") != "adgj" || r.Queries != 4 || r.AnswerRecall != 1 {
		t.Fatalf("asked %v, queries %d", asked, r.Queries)
	}
}
