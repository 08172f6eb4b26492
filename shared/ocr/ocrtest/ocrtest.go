// Package ocrtest generates scanned pages from known text for OCR tests and benchmarks: ImageMagick
// renders the text (a CJK font from fonts-noto-cjk for Chinese) at a chosen resolution, skews it and
// adds noise (seeded: a page is the same on every run); Ghostscript wraps a page in an image-only PDF (ImageMagick's policy forbids writing PDF).
// It also measures character error rate.
package ocrtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// English and Chinese are the known texts: a heading and two paragraphs each.
var (
	EnglishHeading = "Leave Policy"
	English        = []string{
		"Employees may carry over up to five unused vacation days into the next calendar year. Days carried over must be used before the end of March, after which they expire without payment.",
		"Requests for leave longer than ten working days need the approval of both the team lead and the human resources office. Sick leave is recorded separately and does not reduce the vacation balance.",
	}
	ChineseHeading = "请假制度"
	Chinese        = []string{
		"员工可以将最多五天未使用的年假结转到下一个日历年度。结转的假期必须在三月底之前使用，逾期作废且不予补偿。",
		"超过十个工作日的请假申请需要团队负责人和人力资源部门共同批准。病假单独记录，不会减少年假余额。",
	}
)

// Page describes a generated page.
type Page struct {
	Chinese bool
	DPI     int     // 150 or 300
	Skew    float64 // degrees
	Noise   float64 // ImageMagick Gaussian noise attenuation (0: none)
}

// Need skips the test unless tesseract, ImageMagick and (when pdf) Ghostscript are installed.
func Need(t testing.TB, pdf bool) {
	t.Helper()
	tools := []string{"tesseract", "convert"}
	if pdf {
		tools = append(tools, "gs")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: apt-get install tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim imagemagick ghostscript fonts-noto-cjk", tool)
		}
	}
	if chineseFont() == "" {
		t.Skip("no CJK font: apt-get install fonts-noto-cjk")
	}
}

func chineseFont() string {
	for _, f := range []string{"/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", "/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc"} {
		if _, err := os.Stat(f); err == nil {
			return f
		}
	}
	return ""
}

// Text is the page's known text: heading and paragraphs separated by blank lines.
func (pg Page) Text() string {
	if pg.Chinese {
		return ChineseHeading + "\n\n" + strings.Join(Chinese, "\n\n")
	}
	return EnglishHeading + "\n\n" + strings.Join(English, "\n\n")
}

// PNG renders the page into dir and returns its path: a 22 pt heading over 11 pt paragraphs, 6.5
// inches wide, in grey, skewed and with noise as asked.
func (pg Page) PNG(t testing.TB, dir string) string {
	t.Helper()
	head, paras, font, bodyFont := EnglishHeading, English, "DejaVu-Sans", "DejaVu-Serif"
	if pg.Chinese {
		head, paras, font, bodyFont = ChineseHeading, Chinese, chineseFont(), chineseFont()
	}
	out := filepath.Join(dir, fmt.Sprintf("page-%t-%d-%g-%g.png", pg.Chinese, pg.DPI, pg.Skew, pg.Noise))
	args := []string{"-seed", "1", "-density", fmt.Sprint(pg.DPI), "-units", "PixelsPerInch", "-background", "white", "-fill", "black",
		"-font", font, "-pointsize", "22", "label:" + head}
	for _, para := range paras {
		args = append(args, "(", "-size", fmt.Sprintf("%dx", pg.DPI*13/2), "-font", bodyFont, "-pointsize", "11", "caption:"+para,
			"-bordercolor", "white", "-border", fmt.Sprintf("0x%d", pg.DPI/8), ")")
	}
	args = append(args, "-gravity", "west", "-append", "-bordercolor", "white", "-border", fmt.Sprint(pg.DPI/2))
	if pg.Skew != 0 {
		args = append(args, "-rotate", fmt.Sprint(pg.Skew))
	}
	if pg.Noise > 0 {
		args = append(args, "-attenuate", fmt.Sprint(pg.Noise), "+noise", "Gaussian")
	}
	args = append(args, "+repage", "-colorspace", "Gray", "-depth", "8", out)
	Run(t, "convert", args...)
	return out
}

// PDF wraps the rendered page in an image-only PDF (no text layer), the page sized so that the image
// is at pg.DPI.
func (pg Page) PDF(t testing.TB, dir string) string {
	t.Helper()
	png := pg.PNG(t, dir)
	jpg := strings.TrimSuffix(png, ".png") + ".jpg"
	Run(t, "convert", png, "-quality", "92", jpg)
	out := strings.TrimSuffix(png, ".png") + ".pdf"
	size := strings.Fields(Run(t, "identify", "-format", "%w %h", jpg))
	var w, h float64
	fmt.Sscan(size[0], &w)
	fmt.Sscan(size[1], &h)
	s := 72 / float64(pg.DPI)
	Run(t, "gs", "-q", "-dNOSAFER", "-sDEVICE=pdfwrite", "-o", out, gsLib("viewjpeg.ps"), "-c",
		fmt.Sprintf("(%s) << /PageSize [%.2f %.2f] >> setpagedevice %.5f %.5f scale viewJPEG", jpg, w*s, h*s, s, s))
	return out
}

func gsLib(name string) string {
	m, _ := filepath.Glob("/usr/share/ghostscript/*/lib/" + name)
	if len(m) == 0 {
		return name // on gs's own search path
	}
	return m[0]
}

// Run runs a tool and returns its stdout, failing the test on error.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("%s: %v %s", name, err, msg)
	}
	return string(out)
}

// Normalize is what CER compares: markdown marks, page markers and uncertainty marks removed,
// whitespace dropped between CJK characters and collapsed elsewhere.
func Normalize(s string) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "<!--") {
			continue
		}
		l = strings.TrimLeft(l, "# ")
		l = strings.ReplaceAll(strings.ReplaceAll(l, "[?", ""), "]", "")
		lines = append(lines, l)
	}
	f := strings.Fields(strings.Join(lines, " "))
	var b []rune
	for i, w := range f {
		if i > 0 && !(cjk(lastRune(f[i-1])) || cjk([]rune(w)[0])) {
			b = append(b, ' ')
		}
		b = append(b, []rune(w)...)
	}
	return string(b)
}

func lastRune(s string) rune { r := []rune(s); return r[len(r)-1] }

func cjk(r rune) bool {
	return unicode.Is(unicode.Han, r) || (r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF)
}

// CER is the character error rate of got against want: their edit distance over want's length,
// after Normalize.
func CER(want, got string) float64 {
	a, b := []rune(Normalize(want)), []rune(Normalize(got))
	if len(a) == 0 {
		return 0
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return float64(prev[len(b)]) / float64(len(a))
}
