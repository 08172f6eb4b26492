package ocr_test

import (
	"context"
	"os"
	"testing"

	"github.com/docmind/docmind/shared/ocr"
	"github.com/docmind/docmind/shared/ocr/ocrtest"
)

// BenchmarkRecognize measures OCR throughput on one generated 300 dpi page (heading and two
// paragraphs, about a third of an A4 page) per language setting, one process at a time: pages/s, and
// for auto the cost of choosing the language (a Chinese page is read as English first) against naming it.
//
//	go test -run '^$' -bench Recognize -benchtime 5x ./shared/ocr/
func BenchmarkRecognize(b *testing.B) {
	ocrtest.Need(b, false)
	dir := b.TempDir()
	for _, c := range []struct {
		name, langs string
		chinese     bool
	}{{"eng", "eng", false}, {"auto-english", "auto", false}, {"chi_sim", "chi_sim", true}, {"auto-chinese", "auto", true}} {
		b.Run(c.name, func(b *testing.B) {
			img, err := os.ReadFile(ocrtest.Page{Chinese: c.chinese, DPI: 300, Skew: 1, Noise: 0.3}.PNG(b, dir))
			if err != nil {
				b.Fatal(err)
			}
			e, err := ocr.New(c.langs)
			if err != nil {
				b.Skip(err)
			}
			e.Procs = 1
			b.ResetTimer()
			for b.Loop() {
				if _, err := e.Recognize(context.Background(), img, ""); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
			b.ReportMetric(float64(e.Stats().MaxRSS>>20), "peakRSS-MiB")
		})
	}
}
