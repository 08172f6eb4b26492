package main

import (
	"encoding/json"
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
	fitted, err := fitCalibrations([]eval.AnswerResult{res}, []string{"/data/hotpotqa"})
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
	if err := crossFit([]eval.AnswerResult{res}); err != nil {
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
