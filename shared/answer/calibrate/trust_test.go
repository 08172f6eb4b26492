package calibrate

import (
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
)

func TestFitCalibration(t *testing.T) {
	// Synthetic answers whose chance of being right is 0.2 + 0.7 * x0: the fitted map must follow it
	// and be monotone in x0.
	rng := rand.New(rand.NewPCG(1, 2))
	var samples []Sample
	for range 4000 {
		x := make([]float64, len(FeatureNames))
		x[0] = rng.Float64()
		x[1] = rng.Float64() // noise
		samples = append(samples, Sample{X: x, Correct: rng.Float64() < 0.2+0.7*x[0]})
	}
	c, err := Fit("extractive", samples)
	if err != nil {
		t.Fatal(err)
	}
	prev := -1.0
	for _, v := range []float64{0.05, 0.25, 0.5, 0.75, 0.95} {
		x := make([]float64, len(FeatureNames))
		x[0] = v
		p := c.Predict(x)
		if p < prev || math.Abs(p-(0.2+0.7*v)) > 0.12 {
			t.Errorf("Predict(x0=%.2f) = %.3f, want about %.3f and monotone", v, p, 0.2+0.7*v)
		}
		prev = p
	}
	if _, err := Fit("x", samples[:5]); err == nil {
		t.Fatal("fitting on 5 answers must fail")
	}
	// The shipped file parses and, for each answerer, fits the current feature list.
	for name, k := range ShippedCalibrations() {
		if len(k.Weights) != len(FeatureNames) || len(k.X) != len(k.Y) || k.N < 20 {
			t.Errorf("shipped calibration %s does not fit the features: %d weights, %d steps", name, len(k.Weights), len(k.X))
		}
		// fitted_on names the datasets that gave this map its answers, and they add up to N
		n := 0
		for _, m := range regexp.MustCompile(`, (\d+) answers\)`).FindAllStringSubmatch(k.FittedOn, -1) {
			v, _ := strconv.Atoi(m[1])
			n += v
		}
		if n != k.N {
			t.Errorf("shipped calibration %s: fitted_on %q counts %d answers, N is %d", name, k.FittedOn, n, k.N)
		}
	}
}

func TestFeaturePositions(t *testing.T) {
	if FeatureNames[featNumberMissing] != "number_missing" || FeatureNames[featCJK] != "cjk" || len(FeatureNames) != len(Features{}.Vector()) {
		t.Fatalf("feature positions moved: %v", FeatureNames)
	}
	f := Features{NumberMissing: 1, CJK: 1}
	if v := f.Vector(); v[featNumberMissing] != 1 || v[featCJK] != 1 {
		t.Fatalf("Vector order differs from FeatureNames: %v", v)
	}
}
