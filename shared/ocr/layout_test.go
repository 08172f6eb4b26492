package ocr

import (
	"fmt"
	"strings"
	"testing"
)

func tsv(rows ...string) []byte {
	return []byte("level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n" + strings.Join(rows, "\n") + "\n")
}

// Headings by height, paragraphs by Tesseract's paragraphs, CJK joined without spaces, uncertain
// words marked, confidence weighted by length, pages apart.
func TestLayout(t *testing.T) {
	pages, err := Layout(tsv(
		"1\t1\t0\t0\t0\t0\t0\t0\t1000\t1000\t-1\t",
		"5\t1\t1\t1\t1\t1\t10\t10\t100\t60\t95\tLeave",
		"5\t1\t1\t1\t1\t2\t120\t10\t100\t60\t95\tPolicy",
		"5\t1\t2\t1\t1\t1\t10\t100\t50\t30\t90\tDays",
		"5\t1\t2\t1\t1\t2\t70\t100\t50\t30\t30\tcarrled",
		"5\t1\t2\t1\t2\t1\t10\t140\t50\t30\t90\tover.",
		"5\t1\t3\t1\t1\t1\t10\t200\t50\t30\t90\tSecond",
		"5\t1\t3\t1\t1\t2\t70\t200\t50\t30\t90\tparagraph.",
		"1\t2\t0\t0\t0\t0\t0\t0\t1000\t1000\t-1\t",
		"5\t2\t1\t1\t1\t1\t10\t10\t30\t30\t80\t员工",
		"5\t2\t1\t1\t1\t2\t40\t10\t30\t30\t80\t可以",
		"5\t2\t1\t1\t2\t1\t10\t50\t30\t30\t20\t结转",
	), 60)
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) != 2 {
		t.Fatalf("%d pages, want 2", len(pages))
	}
	want := "# Leave Policy\n\nDays [?carrled] over.\n\nSecond paragraph."
	if pages[0].Markdown != want {
		t.Errorf("page 1:\n%s\nwant\n%s", pages[0].Markdown, want)
	}
	if pages[0].Words != 7 || pages[0].LowWords != 1 {
		t.Errorf("words %d low %d, want 7 and 1", pages[0].Words, pages[0].LowWords)
	}
	if got := pages[1].Markdown; got != "员工可以[?结转]" {
		t.Errorf("page 2: %q", got)
	}
	if c := pages[1].Confidence; c < 59.9 || c > 60.1 {
		t.Errorf("page 2 confidence %.2f, want 60 (80,80,20 weighted by 2 runes each)", c)
	}
	if _, err := Layout([]byte("header\n5\t1\tx\n"), 60); err == nil {
		t.Error("a malformed row was accepted")
	}
}

// A table whose columns Tesseract put in separate blocks (as it does with psm 3) comes back as one
// markdown table in its place between the paragraphs, rows from the word boxes, ruling bars dropped,
// an uncertain cell still marked.
func TestLayoutTable(t *testing.T) {
	w := func(block, line, left, top int, conf, text string) string {
		return strings.Join([]string{"5", "1", fmt.Sprint(block), "1", fmt.Sprint(line), "1", fmt.Sprint(left), fmt.Sprint(top), fmt.Sprint(20 * len(text)), "30", conf, text}, "\t")
	}
	pages, err := Layout(tsv(
		"1\t1\t0\t0\t0\t0\t0\t0\t2000\t2000\t-1\t",
		w(1, 1, 10, 10, "95", "Before."),
		// column one, then column two, each its own block; a bar read from a ruling line
		w(2, 1, 10, 100, "95", "Availability"), w(2, 2, 10, 150, "95", "99.9%"), w(2, 3, 10, 200, "95", "95.0%"),
		w(3, 1, 400, 100, "95", "Refund"), w(3, 2, 400, 150, "95", "10%"), w(3, 3, 400, 200, "40", "50%"),
		w(4, 1, 360, 150, "20", "|"),
		w(5, 1, 10, 300, "95", "After."),
	), 60)
	if err != nil {
		t.Fatal(err)
	}
	want := "Before.\n\n| Availability | Refund |\n| --- | --- |\n| 99.9% | 10% |\n| 95.0% | [?50%] |\n\nAfter."
	if pages[0].Markdown != want {
		t.Fatalf("markdown\n%s\nwant\n%s", pages[0].Markdown, want)
	}
	if pages[0].Words != 9 || pages[0].LowWords != 2 {
		t.Errorf("words %d, low %d: every word still counts", pages[0].Words, pages[0].LowWords)
	}
}
