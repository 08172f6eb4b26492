package extract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/docmind/docmind/shared/extract/extracttest"
)

// heapSampler reports the peak of the Go heap's object bytes (live and not yet collected: what the
// process holds) while fn runs, above the level before it, and the bytes fn allocated in all.
func heapPeak(fn func()) (peak, allocated int64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	read := func() (int64, int64) {
		metrics.Read(samples)
		return int64(samples[0].Value.Uint64()), int64(samples[1].Value.Uint64())
	}
	runtime.GC()
	runtime.GC()
	base, alloc0 := read()
	stop, done := make(chan struct{}), make(chan int64)
	go func() {
		top := base
		for {
			select {
			case <-stop:
				done <- top
				return
			default:
			}
			if h, _ := read(); h > top {
				top = h
			}
			time.Sleep(20 * time.Microsecond)
		}
	}()
	fn()
	h, alloc1 := read()
	close(stop)
	top := max(<-done, h)
	return top - base, alloc1 - alloc0
}

// TestMeasureExtractMemory derives the per-format factors of memoryCosts: for generated files of two
// sizes per format and the demo corpus (plus any files named in DOCMIND_MEASURE_FILES, separated by
// ":"), it prints the peak Go heap growth while extracting, per input byte. Opt-in, as it takes a
// minute and its figures are for a person to read:
//
//	DOCMIND_MEASURE_EXTRACT=1 GOMAXPROCS=1 go test ./shared/extract -run TestMeasureExtractMemory -v -count=1
func TestMeasureExtractMemory(t *testing.T) {
	if os.Getenv("DOCMIND_MEASURE_EXTRACT") == "" {
		t.Skip("set DOCMIND_MEASURE_EXTRACT=1 to measure extraction memory per format")
	}
	type file struct {
		name string
		data []byte
	}
	var files []file
	for _, ext := range []string{".txt", ".md", ".csv", ".html", ".docx", ".xlsx", ".pptx", ".pdf"} {
		for _, size := range []int{1 << 20, 4 << 20, 8 << 20} {
			files = append(files, file{fmt.Sprintf("gen-%dMiB%s", size>>20, ext), extracttest.BigFile(ext, size)})
		}
	}
	for _, size := range []int{256 << 10, 1 << 20, 2 << 20} {
		files = append(files, file{fmt.Sprintf("gen-flate-%dKiB.pdf", size>>10), extracttest.FlatePDFOfSize(size)})
	}
	for _, n := range []int{8, 32} { // 1 MiB images
		files = append(files, file{fmt.Sprintf("gen-images-%d.pdf", n), extracttest.ImagePDF(n, 1<<20)})
	}
	paths, _ := filepath.Glob(filepath.Join(corpusDir, "*"))
	if extra := os.Getenv("DOCMIND_MEASURE_FILES"); extra != "" {
		paths = append(paths, strings.Split(extra, ":")...)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, file{filepath.Base(p), b})
	}
	l := Limits{Timeout: 10 * time.Minute, MaxOutputBytes: 1 << 30}
	// The PDF engine's start (compiling PDFium, about 200 MB outside the Go heap plus its first
	// instance) is a cost of the process, not of a document: start it before measuring.
	if _, err := Extract(context.Background(), "warm.pdf", makePDF([]string{"warm up"}, nil, false), l); err != nil {
		t.Fatal(err)
	}
	t.Logf("%-28s %8s %6s %10s %10s %10s %8s %8s", "file", "format", "", "file", "input", "peak heap", "per in", "estimate")
	for _, f := range files {
		var err error
		peak, _ := heapPeak(func() { _, err = Extract(context.Background(), f.name, f.data, l) })
		est := EstimateMemory(f.name, f.data, l)
		status := ""
		if err != nil {
			status = "error: " + err.Error()
		}
		over := ""
		if peak > est.Bytes {
			over = " OVER"
		}
		t.Logf("%-28s %8s %6s %10d %10d %10d %8.1f %8.1f%s %s", f.name, est.Format, "", len(f.data), est.Input, peak,
			float64(peak)/float64(max(est.Input, 1)), float64(est.Bytes)/float64(max(peak, 1)), over, status)
	}
}
