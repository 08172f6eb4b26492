package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/docmind/docmind/shared/answer"
	"github.com/docmind/docmind/shared/eval"
)

// Issue #13 review, finding 4: `docmind eval --variant answer --calibrate` with a model configured fits
// llm/zh and llm/en maps, because each answer's answerer (done.Answerer, "llm" when the model wrote it)
// and language pick its calibration key; answers the extractive reader wrote when the model failed go
// to the extractive maps.
func TestCalibrateKeysByAnswerer(t *testing.T) {
	zh, en := make([]float64, len(answer.FeatureNames)), make([]float64, len(answer.FeatureNames))
	zh[11] = 1 // cjk
	var res eval.AnswerResult
	for i := range 100 {
		q := eval.AnswerQuery{Answerer: "llm", Features: en, Correct: i%3 == 0}
		switch i % 4 {
		case 0:
			q.Features = zh
		case 3:
			if i < 40 { // the model failed on 10 questions: too few for a map of their own
				q.Answerer = "extractive"
			}
		}
		res.All = append(res.All, q)
	}
	got := samplesByAnswerer([]eval.AnswerResult{res}, func(int) bool { return true })
	want := map[string]int{"llm/zh": 25, "llm/en": 65, "extractive/en": 10}
	for k, n := range want {
		if len(got[k]) != n {
			t.Errorf("%s: %d samples, want %d", k, len(got[k]), n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("keys %v", got)
	}
	fitted, err := fitCalibrations([]eval.AnswerResult{res}, []string{"/data/hotpotqa"}, "llm")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"llm/zh", "llm/en"} {
		if fitted[k] == nil || fitted[k].Answerer != k {
			t.Errorf("no %s map fitted: %v", k, fitted)
		}
	}
	if fitted["extractive/en"] != nil {
		t.Errorf("a map fitted on 10 answers")
	}
	if err := crossFit([]eval.AnswerResult{res}, "llm", nil); err != nil {
		t.Errorf("cross-fitting with a key too small to fit: %v", err)
	}

	// Writing them keeps the file's maps this run did not fit (the shipped extractive ones).
	path := filepath.Join(t.TempDir(), "calibration.json")
	shipped := answer.ShippedCalibrations()
	b, _ := json.Marshal(shipped)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	merged := keepOthers(path, fitted)
	for k := range shipped {
		if merged[k] == nil {
			t.Errorf("shipped map %s dropped", k)
		}
	}
	if merged["llm/en"] != fitted["llm/en"] || len(merged) != len(shipped)+2 {
		t.Errorf("merged keys: %d", len(merged))
	}
}

// Review finding 6: with a model configured, the model failed on 30 English questions; the extractive
// reader's answers to those are enough for a map, but a map of failures alone must not replace the
// shipped extractive/en map (fitted on every question of a run without a model). Only llm/* is fitted,
// the file's extractive maps are written back unchanged, and the report's extractive answers get the
// shipped map rather than one cross-fitted on the failures.
func TestCalibrateWithModelKeepsExtractiveMaps(t *testing.T) {
	en := make([]float64, len(answer.FeatureNames))
	var res eval.AnswerResult
	for i := range 120 {
		q := eval.AnswerQuery{Answerer: "llm", Features: append([]float64(nil), en...), Correct: i%3 == 0}
		q.Features[0] = float64(i % 7)
		if i%4 == 0 { // 30 failures: enough for a map of their own
			q.Answerer = "extractive"
			q.Correct = i%8 == 0
		}
		res.All = append(res.All, q)
	}
	if n := otherAnswers([]eval.AnswerResult{res}, "llm")["extractive/en"]; n != 30 {
		t.Fatalf("extractive answers counted: %d, want 30", n)
	}
	fitted, err := fitCalibrations([]eval.AnswerResult{res}, []string{"/data/hotpotqa"}, "llm")
	if err != nil {
		t.Fatal(err)
	}
	if fitted["llm/en"] == nil || len(fitted) != 1 {
		t.Fatalf("fitted keys: %v", fitted)
	}
	// Without the model the extractive map is the one fitted.
	if all, _ := fitCalibrations([]eval.AnswerResult{res}, []string{"/data/hotpotqa"}, "extractive"); all["extractive/en"] == nil || all["llm/en"] != nil {
		t.Errorf("a run without a model fitted %v", all)
	}

	path := filepath.Join(t.TempDir(), "calibration.json")
	shipped := answer.ShippedCalibrations()
	if shipped["extractive/en"] == nil {
		t.Fatal("no shipped extractive/en map to protect")
	}
	b, _ := json.Marshal(shipped)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	merged := keepOthers(path, fitted)
	if merged["extractive/en"].N != shipped["extractive/en"].N || merged["extractive/en"].FittedOn != shipped["extractive/en"].FittedOn {
		t.Errorf("extractive/en replaced: n=%d %q, shipped n=%d %q", merged["extractive/en"].N, merged["extractive/en"].FittedOn,
			shipped["extractive/en"].N, shipped["extractive/en"].FittedOn)
	}

	if err := crossFit([]eval.AnswerResult{res}, "llm", merged); err != nil {
		t.Fatal(err)
	}
	q := res.All[0]
	if want := answer.Recalibrate(shipped["extractive/en"], q.Features, q.ClaimsSupported); q.Confidence != want {
		t.Errorf("extractive answer's confidence %v, want the shipped map's %v", q.Confidence, want)
	}
}

// Issue #20: within a language, each dataset's answers together weigh the same in the fit, whatever
// their count (SQuAD's 4,961 lookups beside HotpotQA's 250), and the weights of a language sum to its
// number of answers; a language with one dataset is weighed 1 per answer, as before.
func TestCalibrateWeighsDatasetsEqually(t *testing.T) {
	n := len(answer.FeatureNames)
	zh := make([]float64, n)
	zh[11] = 1 // cjk
	result := func(count int, x []float64) eval.AnswerResult {
		var res eval.AnswerResult
		for i := range count {
			res.All = append(res.All, eval.AnswerQuery{Answerer: "extractive", Features: x, Correct: i%2 == 0})
		}
		return res
	}
	results := []eval.AnswerResult{result(300, make([]float64, n)), result(60, make([]float64, n)), result(40, zh)}
	got := samplesByAnswerer(results, func(int) bool { return true })
	en := got["extractive/en"]
	if len(en) != 360 || len(got["extractive/zh"]) != 40 {
		t.Fatalf("samples en %d, zh %d", len(en), len(got["extractive/zh"]))
	}
	var big, small, sum float64
	for i, s := range en {
		sum += s.Weight
		if i < 300 {
			big += s.Weight
		} else {
			small += s.Weight
		}
	}
	if math.Abs(big-small) > 1e-9 || math.Abs(sum-360) > 1e-9 {
		t.Errorf("dataset weights %.3f and %.3f (sum %.3f), want equal halves of 360", big, small, sum)
	}
	for _, s := range got["extractive/zh"] {
		if s.Weight != 1 {
			t.Fatalf("a language with one dataset weighs %v per answer, want 1", s.Weight)
		}
	}
}
