// Package ocr recognises text in page images with Tesseract, run as a subprocess (never linked with
// cgo) under a timeout and an address-space limit, with a bound on how many run at once. Its TSV output
// (blocks, paragraphs, lines, words, boxes and confidences) is laid out as markdown: headings from line
// height, paragraphs from Tesseract's blocks, words below a confidence floor marked. It implements
// extract.OCR.
package ocr

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// Install is the command that installs Tesseract with the languages docmind uses.
const Install = "apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim"

// Defaults of a Tesseract's zero fields.
const (
	DefaultTimeout = 2 * time.Minute
	// DefaultMemory is one process's address-space limit. Tesseract with eng+chi_sim on a 300 dpi A4
	// page maps about 300 MB (measured with TestMemoryBoundHolds' peak RSS); the headroom is for larger
	// pages. A page needing more fails with an error instead of growing the machine.
	DefaultMemory = 1 << 30
	DefaultFloor  = 60 // word confidence (0-100) below which a word is marked uncertain
)

// Tesseract runs the tesseract binary. Create it with New; the zero value of the numeric fields means
// the defaults.
type Tesseract struct {
	Bin     string        // the tesseract binary (New finds it in PATH)
	Langs   string        // "auto" (detect English or Chinese) or tesseract's "eng", "chi_sim", "eng+chi_sim"
	Timeout time.Duration // per image
	Memory  int64         // RLIMIT_AS of one process, bytes
	Floor   float64       // word confidence floor
	// Procs bounds the processes running at once (default 2): with Memory it bounds what OCR can
	// hold together, however many documents are extracted at once.
	Procs int

	once      sync.Once
	sem       chan struct{}
	installed map[string]bool

	mu    sync.Mutex
	stats Stats
}

var _ extract.OCR = (*Tesseract)(nil)

// Stats are what the processes run so far used (tests and benchmarks).
type Stats struct {
	Runs       int
	MaxRunning int   // most processes seen running at once
	MaxRSS     int64 // largest peak resident set of one process, bytes
	running    int
}

// New finds tesseract and checks that the languages langs needs are installed. A missing binary or
// language is an Unavailable error naming the Debian packages to install.
func New(langs string) (*Tesseract, error) {
	bin, err := exec.LookPath("tesseract")
	if err != nil {
		return nil, rag.Errorf("ocr", rag.KindUnavailable, "tesseract is not installed (%s)", Install)
	}
	t := &Tesseract{Bin: bin, Langs: langs}
	if err := t.checkLangs(); err != nil {
		return nil, err
	}
	return t, nil
}

// Available reports whether a tesseract binary is on PATH.
func Available() bool {
	_, err := exec.LookPath("tesseract")
	return err == nil
}

func (t *Tesseract) checkLangs() error {
	out, err := exec.Command(t.Bin, "--list-langs").CombinedOutput()
	if err != nil {
		return rag.Errorf("ocr", rag.KindUnavailable, "tesseract --list-langs failed: %v (%s)", err, Install)
	}
	t.installed = map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, " ") {
			t.installed[l] = true
		}
	}
	want := t.Langs
	if want == "" || want == "auto" {
		want = "eng" // auto reads Chinese too when chi_sim is installed, and English without it
	}
	var missing []string
	for _, l := range strings.Split(want, "+") {
		if !t.installed[l] {
			missing = append(missing, "tesseract-ocr-"+strings.ReplaceAll(l, "_", "-"))
		}
	}
	if len(missing) > 0 {
		return rag.Errorf("ocr", rag.KindUnavailable, "tesseract languages missing: apt-get install %s", strings.Join(missing, " "))
	}
	return nil
}

func (t *Tesseract) init() {
	t.once.Do(func() {
		if t.Procs <= 0 {
			t.Procs = 2
		}
		t.sem = make(chan struct{}, t.Procs)
		if t.Timeout <= 0 {
			t.Timeout = DefaultTimeout
		}
		if t.Memory <= 0 {
			t.Memory = DefaultMemory
		}
		if t.Floor <= 0 {
			t.Floor = DefaultFloor
		}
		if t.Bin == "" {
			t.Bin = "tesseract"
		}
	})
}

// Stats returns what the processes run so far used.
func (t *Tesseract) Stats() Stats {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stats
}

// Recognize recognises every page of image (PNG, JPEG, TIFF including multi-page, WebP, BMP, PNM) and
// returns one page per image page, in order. langs overrides the configured languages ("" keeps them).
// With "auto" the image is read as English first; when that reads poorly (mean confidence below
// extract.LowConfidence) and Chinese is installed, it is read again as Chinese (chi_sim, whose model
// also reads Latin letters and digits; chi_sim+eng read short Chinese lines of our generated pages as
// Latin garbage, 13.6% CER against 4.9% for chi_sim alone on one noisy 300 dpi page) and the more
// confident reading is kept. English pages, the common
// case, cost one pass; Tesseract's own script detection (OSD) cost more than a whole second pass.
// The pages say which languages were used, so the caller can pass them on for the next image of the
// same document. Errors: Terminal for an image tesseract cannot read, or one that needs more than the
// memory or time allowed; Unavailable when ctx ended.
func (t *Tesseract) Recognize(ctx context.Context, image []byte, langs string) ([]extract.OCRPage, error) {
	t.init()
	if langs == "" {
		langs = t.Langs
	}
	if langs != "" && langs != "auto" {
		return t.recognize(ctx, image, langs)
	}
	eng, err := t.recognize(ctx, image, "eng")
	if err != nil || meanConfidence(eng) >= extract.LowConfidence || !t.installed["chi_sim"] {
		return eng, err
	}
	zh, err := t.recognize(ctx, image, "chi_sim")
	if err != nil || meanConfidence(zh) <= meanConfidence(eng) {
		return eng, err
	}
	return zh, nil
}

func (t *Tesseract) recognize(ctx context.Context, image []byte, langs string) ([]extract.OCRPage, error) {
	tsv, err := t.run(ctx, image, "-l", langs, "--psm", "3", "tsv")
	if err != nil {
		return nil, err
	}
	pages, err := Layout(tsv, t.Floor)
	if err != nil {
		return nil, rag.E("ocr", rag.KindInternal, err)
	}
	for i := range pages {
		pages[i].Langs = langs
	}
	return pages, nil
}

// meanConfidence is the mean page confidence of pages with words (0 when none has any).
func meanConfidence(pages []extract.OCRPage) float64 {
	sum, n := 0.0, 0
	for _, p := range pages {
		if p.Words > 0 {
			sum += p.Confidence
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// run runs tesseract on image (written to a private temporary file: tesseract reads a multi-page TIFF
// only from a file) with args after the input and the stdout output, under the timeout, the process
// bound and the address-space limit.
func (t *Tesseract) run(ctx context.Context, image []byte, args ...string) ([]byte, error) {
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, rag.E("ocr", rag.KindUnavailable, ctx.Err())
	}
	defer func() { <-t.sem }()
	dir, err := os.MkdirTemp("", "docmind-ocr-")
	if err != nil {
		return nil, rag.E("ocr", rag.KindUnavailable, err)
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "page")
	if err := os.WriteFile(in, image, 0o600); err != nil {
		return nil, rag.E("ocr", rag.KindUnavailable, err)
	}
	rctx, cancel := context.WithTimeout(ctx, t.Timeout)
	defer cancel()
	// The limit is set by the shell that then becomes tesseract (exec), so it applies from the first
	// instruction; Go's SysProcAttr has no rlimit field, and setting it in this process would bind the
	// server itself. ulimit -v takes KiB.
	script := `ulimit -v "$1" || exit 97; shift; exec "$@"`
	cmd := exec.CommandContext(rctx, "/bin/sh", append([]string{"-c", script, "sh", strconv.FormatInt(t.Memory>>10, 10), t.Bin, in, "stdout"}, args...)...)
	// One thread per process: OpenMP threads multiply the memory and fight the other processes for
	// the cores; parallelism comes from Procs.
	cmd.Env = append(os.Environ(), "OMP_THREAD_LIMIT=1")
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.track(1, 0)
	err = cmd.Run()
	var rss int64
	if cmd.ProcessState != nil {
		rss = maxRSS(cmd.ProcessState)
	}
	t.track(-1, rss)
	switch {
	case err == nil:
		return stdout.Bytes(), nil
	case ctx.Err() != nil:
		return nil, rag.E("ocr", rag.KindUnavailable, ctx.Err())
	case rctx.Err() != nil:
		return nil, rag.Errorf("ocr", rag.KindTerminal, "recognising the page took longer than %s", t.Timeout)
	}
	msg := strings.TrimSpace(stderr.String())
	if memoryFailure(msg) {
		return nil, rag.Errorf("ocr", rag.KindTerminal, "recognising the page needs more than the %d MiB one OCR process may use", t.Memory>>20)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 97 {
		return nil, rag.Errorf("ocr", rag.KindUnavailable, "cannot limit the OCR process's memory: %s", msg)
	}
	if i := strings.LastIndexByte(msg, '\n'); i >= 0 && len(msg) > 300 {
		msg = msg[i+1:]
	}
	return nil, rag.Errorf("ocr", rag.KindTerminal, "tesseract cannot read this image: %s", firstNonEmpty(msg, err.Error()))
}

// memoryFailure recognises how tesseract and leptonica report a failed allocation.
func memoryFailure(stderr string) bool {
	s := strings.ToLower(stderr)
	for _, k := range []string{"bad_alloc", "out of memory", "cannot allocate", "alloc fail", "memory exhausted", "failed to map segment"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

func (t *Tesseract) track(delta int, rss int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats.running += delta
	t.stats.MaxRunning = max(t.stats.MaxRunning, t.stats.running)
	t.stats.MaxRSS = max(t.stats.MaxRSS, rss)
	if delta < 0 {
		t.stats.Runs++
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// String describes the engine for logs.
func (t *Tesseract) String() string {
	return fmt.Sprintf("tesseract(%s, langs=%s)", t.Bin, firstNonEmpty(t.Langs, "auto"))
}
