package chunk_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/bench"
	"github.com/docmind/docmind/shared/chunk"
)

// sameAsReference fails unless Split and the reference chunker give identical results for md.
func sameAsReference(t *testing.T, name, md string, o chunk.Options) {
	t.Helper()
	got, want := chunk.Split(md, o), chunk.RefSplit(md, o)
	if reflect.DeepEqual(got, want) {
		return
	}
	if len(got.Children) != len(want.Children) || len(got.Parents) != len(want.Parents) {
		t.Fatalf("%s: %d children, %d parents; reference %d, %d", name, len(got.Children), len(got.Parents), len(want.Children), len(want.Parents))
	}
	for i := range got.Children {
		if !reflect.DeepEqual(got.Children[i], want.Children[i]) {
			t.Fatalf("%s: child %d differs\n got  %+v\n want %+v", name, i, got.Children[i], want.Children[i])
		}
	}
	for i := range got.Parents {
		if !reflect.DeepEqual(got.Parents[i], want.Parents[i]) {
			t.Fatalf("%s: parent %d differs\n got  %+v\n want %+v", name, i, got.Parents[i], want.Parents[i])
		}
	}
	t.Fatalf("%s: results differ outside the pieces:\n got  %+v\n want %+v", name, got, want)
}

// The one-pass chunker gives exactly the chunks of the reference (the chunker before the rewrite) on
// the demo corpus's markdown, the benchmark texts and hand-written edge cases, at several sizes.
func TestSameAsReference(t *testing.T) {
	inputs := map[string]string{
		"english": bench.EnglishText(),
		"chinese": bench.ChineseText(40),
		"edges": "   # indented heading #\n####### seven\n#\tTab heading ##  \n# C#\n#nospace\n##\n" +
			"para line one   \n  para line two\t\n\n   | a | b |\n|---|---|\n  | 1 | 2 |  \ntext after table\n" +
			"~~~~python\ncode ```\n~~~\n```\n<!-- page 3 -->\n  <!-- page 12 -->  \n<!-- page x -->\n" +
			"```go\nfunc main() {}\n```` \n\nlast. paragraph! ok? yes\n\n\n" + strings.Repeat("长句子没有标点", 100) +
			"\n\n" + strings.Repeat("Sentence v1.2.3 here. ", 60) + "\n# \n## Clause 1\n\n" + strings.Repeat("条款内容。", 200),
		"crlf": "# A\r\n\r\ntext\r\n| t |\r\n",
		// lines that almost close a code block: text before the fence, a shorter fence, the other
		// character, a non-ASCII space before it, a fence with text after it; and blocks that end the file
		"fences": "```go\ncode `x` here\nx ```\n``\n~~~\n \u3000```\n\n" + "~~~~\n```\n~~~ x\n\t~~~~~\nafter\n\n```\n```y\n   ```\n" +
			"para\n```\nnever closed ``` \n",
		"fence at the end":  "# A\n\n```",
		"fence then a line": "# A\n\n```\n",
		// invalid UTF-8 in sentences longer than a piece: their parts are cut from runes, as copies
		"invalid utf-8": "# X\n\n" + strings.Repeat("长句子没有标点\xff", 80) + "\n\n" + strings.Repeat("word\xe4\xb8 ", 150) + ". Short one. " + strings.Repeat("\xe4", 500),
		"frontmatter":   "---\ntitle: T\nversion: 2.1\ntags: [a, b]\n---\n# H\n\nbody\n",
	}
	for _, dir := range []string{"../extract/testdata/golden"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.md"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			inputs[filepath.Base(f)] = string(data)
		}
	}
	if len(inputs) < 8 {
		t.Fatalf("only %d inputs: the golden markdown files are missing", len(inputs))
	}
	for name, md := range inputs {
		for _, o := range []chunk.Options{chunk.DefaultOptions(), {ChildChars: 120, Overlap: 20, ParentChars: 400}, {ChildChars: 50, Overlap: 60, ParentChars: 10}} {
			sameAsReference(t, name, md, o)
		}
	}
}

func FuzzSameAsReference(f *testing.F) {
	for _, s := range []string{
		"# A\n\ntext. more text.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
		"---\nversion: 1.0\n---\n# 标题\n\n中文句子。另一句！\n```\ncode\n```\n",
		"no headings at all v1.2.3. next", "#\n##   \n```unterminated", "<!-- page 2 -->\n# p\n\nx",
		"   ## a ##\n\tb\n  | c\n~~~\n~~~~\n", strings.Repeat("长句子没有标点", 100),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		if !utf8.ValidString(md) {
			md = strings.ToValidUTF8(md, "?")
		}
		sameAsReference(t, "fuzz", md, chunk.Options{ChildChars: 120, Overlap: 20, ParentChars: 400})
	})
}

// Version lines in the many shapes the pattern accepts (and near misses before them) give the
// reference's version: the cheap tests in front of the pattern never change what it finds.
func TestVersionSameAsReference(t *testing.T) {
	for _, top := range []string{
		"every cover over version 2.1.0 here", "VERSION: v3.4", "ver. 1.2", "Ver：5.6.7.8", "over 1.2 ver 9.9",
		"version\n\n  :  v1.0", "版本号：2.3", "ver" + strings.Repeat(" ", 100) + "1.5", "versions 1.2", "ve r 1.2",
		"VerSion 7.1 and ver 8.2", "no number: version x.1", "版本 1.0 then version 2.0", "Kelvin ver\u212A 1.0",
	} {
		md := "# T\n\n" + top + "\n\nbody text.\n"
		got, want := chunk.Split(md, chunk.DefaultOptions()), chunk.RefSplit(md, chunk.DefaultOptions())
		if got.DocVersion != want.DocVersion {
			t.Errorf("%q: version %q, reference %q", top, got.DocVersion, want.DocVersion)
		}
	}
}
