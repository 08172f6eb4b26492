package answer

import (
	"github.com/docmind/docmind/shared/answer/calibrate"
	"github.com/docmind/docmind/shared/answer/claims"
	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/answer/reader"
)

// The offline reader (reader), the claim checks (claims), the confidence calibration (calibrate) and
// the text they share (lang) are packages of their own; the pipeline calls them through the names
// below, which also keep the answer API that cmd/docmind, shared/eval and the HTTP layer use.

type (
	// Extractive is the offline reader (reader.Extractive).
	Extractive = reader.Extractive
	// Claim is one cited sentence checked against its sources (claims.Claim).
	Claim = claims.Claim
	// Features are the calibration's inputs (calibrate.Features).
	Features = calibrate.Features
	// Calibrator maps features to a probability (calibrate.Calibrator).
	Calibrator = calibrate.Calibrator
	// Calibrations are the calibrators by key (calibrate.Calibrations).
	Calibrations = calibrate.Calibrations
	// Sample is one answer's features and outcome (calibrate.Sample).
	Sample = calibrate.Sample
)

// FeatureNames name Features.Vector's entries in order.
var FeatureNames = calibrate.FeatureNames

// Fit fits a calibration for answerer on samples (calibrate.Fit).
func Fit(answerer string, samples []Sample) (*Calibrator, error) {
	return calibrate.Fit(answerer, samples)
}

// ShippedCalibrations are the calibrations embedded in the build (calibrate.ShippedCalibrations).
func ShippedCalibrations() Calibrations { return calibrate.ShippedCalibrations() }

// CalibrationKey is the calibration key of an answerer's answer with features x (calibrate.Key).
func CalibrationKey(answerer string, x []float64) string { return calibrate.Key(answerer, x) }

// CalibrationFor is the calibrator an answer with features x takes from cs (calibrate.For).
func CalibrationFor(cs Calibrations, answerer string, x []float64) *Calibrator {
	return calibrate.For(cs, answerer, x)
}

// CalibrationLanguage is a calibration key without its kind of question (calibrate.Language).
func CalibrationLanguage(key string) string { return calibrate.Language(key) }

// Recalibrate is Assess's estimate for known features and share of supported claims (calibrate.Recalibrate).
func Recalibrate(k *Calibrator, x []float64, supported float64) float64 {
	return calibrate.Recalibrate(k, x, supported)
}

// Citations returns the valid [n] markers of answer in order of first use and the count of invalid
// ones (lang.Citations).
func Citations(answer string, nSources int) (used []int, invalid int) {
	return lang.Citations(answer, nSources)
}

// WithoutNotice strips the offline reader's notice from an answer (reader.WithoutNotice).
func WithoutNotice(answer string) string { return reader.WithoutNotice(answer) }
