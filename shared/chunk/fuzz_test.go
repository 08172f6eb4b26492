package chunk

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzChunker checks PAR-06's invariants: no panic; valid UTF-8; deterministic; every child body within
// ChildChars unless it is an atomic table or code block; every child's text starts with its heading
// path; every word of the input's paragraphs appears in some child.
func FuzzChunker(f *testing.F) {
	for _, s := range []string{
		"# A\n\ntext. more text.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
		"---\nversion: 1.0\n---\n# 标题\n\n中文句子。另一句！\n```\ncode\n```\n",
		"no headings at all v1.2.3. next", "#\n##   \n```unterminated", "<!-- page 2 -->\n# p\n\nx",
		strings.Repeat("长句子没有标点", 100),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		if len(md) > 1<<16 {
			return // checking the word coverage below is quadratic; large inputs are covered by the benchmarks
		}
		if !utf8.ValidString(md) {
			md = strings.ToValidUTF8(md, "?")
		}
		o := Options{ChildChars: 120, Overlap: 20, ParentChars: 400}
		a := Split(md, o)
		b := Split(md, o)
		if len(a.Children) != len(b.Children) || len(a.Parents) != len(b.Parents) {
			t.Fatal("not deterministic")
		}
		var all strings.Builder
		for i, c := range a.Children {
			if !utf8.ValidString(c.Text) {
				t.Fatalf("child %d is not valid UTF-8", i)
			}
			if c.Text != b.Children[i].Text {
				t.Fatal("not deterministic")
			}
			if strings.TrimSpace(c.Body) == "" {
				t.Fatalf("child %d has an empty body", i)
			}
			if utf8.RuneCountInString(c.Body) > o.ChildChars && c.ContentType != "table" && c.ContentType != "code" {
				t.Fatalf("child %d body has %d chars", i, utf8.RuneCountInString(c.Body))
			}
			if !strings.HasSuffix(c.Text, c.Body) {
				t.Fatalf("child %d text does not end with its body", i)
			}
			if c.Parent < 0 || c.Parent >= len(a.Parents) {
				t.Fatalf("child %d has parent %d of %d", i, c.Parent, len(a.Parents))
			}
			all.WriteString(c.Body + " ")
		}
		joined := all.String()
		body, _ := frontMatter(md)
		parseBlocks(body, func(blk block) {
			if blk.kind != bParagraph {
				return
			}
			for _, w := range strings.Fields(blk.text) {
				if utf8.RuneCountInString(w) <= 30 && !strings.Contains(joined, w) {
					t.Fatalf("word %q of the input is in no child", w)
				}
			}
		})
	})
}
