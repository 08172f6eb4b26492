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

// A sample's weight counts as that many copies of it in the logistic fit: the evaluation weighs each
// dataset's answers equally, and a weight that the fit ignored would let the largest dataset set the
// map again.
func TestFitWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var weighted, copied []Sample
	for range 600 {
		x := make([]float64, len(FeatureNames))
		x[0], x[1] = rng.Float64(), rng.Float64()
		ok := rng.Float64() < 0.3+0.5*x[0]
		k := 1 + int(x[0]*3) // 1 to 3 copies, more where answers are more often right
		weighted = append(weighted, Sample{X: x, Correct: ok, Weight: float64(k)})
		for range k {
			copied = append(copied, Sample{X: x, Correct: ok})
		}
	}
	a, err := Fit("w", weighted)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Fit("c", copied)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(a.Positive-b.Positive) > 1e-9 {
		t.Errorf("weighted base rate %.4f, copied %.4f", a.Positive, b.Positive)
	}
	for _, v := range []float64{0.1, 0.5, 0.9} {
		x := make([]float64, len(FeatureNames))
		x[0], x[1] = v, v
		if pa, pb := a.Logit(x), b.Logit(x); math.Abs(pa-pb) > 1e-6 {
			t.Errorf("Logit(%.1f): weighted %.6f, copied %.6f", v, pa, pb)
		}
	}
	// and the weights move the fit: the same answers unweighted give another base rate
	u := make([]Sample, len(weighted))
	for i, s := range weighted {
		u[i] = Sample{X: s.X, Correct: s.Correct}
	}
	c, _ := Fit("u", u)
	if math.Abs(c.Positive-a.Positive) < 1e-3 {
		t.Errorf("weights ignored: base rate %.4f either way", a.Positive)
	}
}
