package chunk

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/rag"
	"github.com/docmind/docmind/shared/text"
)

// Seed #37: two products under different top headings. Every child names its product first; no parent
// mixes the two (their age limits got mixed up when one did).
func TestTwoProductsNeverMix(t *testing.T) {
	md := `# 安心保 A 款

## 投保年龄

投保年龄为 18 至 60 周岁。本产品等待期为 90 天。

## 保险责任

身故保险金按基本保额给付。

# 康宁保 B 款

## 投保年龄

投保年龄为 30 天至 65 周岁。本产品无等待期。

## 保险责任

重大疾病保险金按基本保额的 120% 给付。
`
	res := Split(md, Options{ChildChars: 400, Overlap: 50, ParentChars: 2000})
	if len(res.Children) != 4 {
		t.Fatalf("%d children, want 4: %+v", len(res.Children), res.Children)
	}
	for _, c := range res.Children {
		product := "# 安心保 A 款"
		if strings.Contains(c.Body, "65") || strings.Contains(c.Body, "120%") {
			product = "# 康宁保 B 款"
		}
		if !strings.HasPrefix(c.Text, product+"\n## ") {
			t.Errorf("child does not start with its product heading:\n%s", c.Text)
		}
	}
	if len(res.Parents) != 2 {
		t.Fatalf("%d parents, want 2 (one per product)", len(res.Parents))
	}
	for _, p := range res.Parents {
		if strings.Contains(p.Text, "安心保") == strings.Contains(p.Text, "康宁保") {
			t.Errorf("parent mixes products or names neither:\n%s", p.Text)
		}
	}
	if res.Children[0].Chapter != "安心保 A 款 > 投保年龄" || res.Children[0].Parent != 0 || res.Children[3].Parent != 1 {
		t.Errorf("chapter/parent links wrong: %+v", res.Children[0])
	}
}

func TestSentenceSplittingKeepsVersionsAndOverlaps(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		b.WriteString("Upgrade to v1.2.3 before step ")
		b.WriteString(strings.Repeat("x", i%5))
		b.WriteString(" completes. ")
	}
	res := Split("# Guide\n\n"+b.String(), Options{ChildChars: 200, Overlap: 50, ParentChars: 1000})
	if len(res.Children) < 4 {
		t.Fatalf("long paragraph gave %d children", len(res.Children))
	}
	for i, c := range res.Children {
		if n := utf8.RuneCountInString(c.Body); n > 200 {
			t.Errorf("child %d body has %d chars > 200", i, n)
		}
		if strings.Contains(c.Body, "v1.2.") && !strings.Contains(c.Body, "v1.2.3") {
			t.Errorf("a version number was split: %q", c.Body)
		}
		if !strings.HasSuffix(c.Body, "completes.") {
			t.Errorf("child %d does not end at a sentence end: %q", i, c.Body[max(0, len(c.Body)-30):])
		}
		if i > 0 {
			prevLast := lastSentence(res.Children[i-1].Body)
			if !strings.HasPrefix(c.Body, prevLast) {
				t.Errorf("child %d does not start with the overlap %q", i, prevLast)
			}
		}
	}
}

func lastSentence(s string) string {
	ss := sentences(s)
	return strings.TrimSpace(ss[len(ss)-1])
}

func TestChineseSentences(t *testing.T) {
	p := strings.Repeat("本条款适用于所有被保险人。如有疑问，请联系客服！是否可以退保？可以；但需扣除手续费。", 10)
	for _, pc := range splitLong(p, 100, 30) {
		piece := pc.text
		if utf8.RuneCountInString(piece) != pc.runes || text.EstimateTokens(piece) != pc.tokens {
			t.Fatalf("piece of %d runes and %d tokens measured %d and %d", utf8.RuneCountInString(piece), text.EstimateTokens(piece), pc.runes, pc.tokens)
		}
		if utf8.RuneCountInString(piece) > 100 {
			t.Fatalf("piece over 100: %d", utf8.RuneCountInString(piece))
		}
		last, _ := utf8.DecodeLastRuneInString(piece)
		if !strings.ContainsRune("。！？；", last) {
			t.Errorf("piece ends mid-sentence: %q", piece)
		}
	}
}

func TestTablesAndCodeAreAtomic(t *testing.T) {
	var tbl strings.Builder
	tbl.WriteString("| plan | price |\n| --- | --- |\n")
	for range 40 {
		tbl.WriteString("| basic plan with a long description | ¥0.008 per call |\n")
	}
	code := "```go\nfunc main() {\n\tfmt.Println(\"v1.2.3. Done. Next.\")\n}\n```"
	md := "# Pricing\n\nIntro text.\n\n" + tbl.String() + "\nAfter.\n\n## Code\n\n" + code + "\n"
	res := Split(md, Options{ChildChars: 200, Overlap: 20, ParentChars: 500})
	var table, codeChunk *Piece
	for i := range res.Children {
		c := &res.Children[i]
		switch c.ContentType {
		case rag.ContentTable:
			table = c
		case rag.ContentCode:
			codeChunk = c
		}
	}
	if table == nil || !strings.Contains(table.Body, "| plan | price |") || strings.Count(table.Body, "\n")+1 != 42 || !table.Oversize {
		t.Fatalf("table not kept whole and flagged oversize: %+v", table)
	}
	if codeChunk == nil || codeChunk.Body != code {
		t.Fatalf("code block changed: %+v", codeChunk)
	}
	if !strings.HasPrefix(codeChunk.Text, "# Pricing\n## Code\n\n```go") {
		t.Errorf("code chunk lacks its heading path: %q", codeChunk.Text)
	}
	// the oversize table is a parent of its own
	for _, p := range res.Parents {
		if strings.Contains(p.Text, "| plan |") && strings.Contains(p.Text, "Intro text") {
			t.Errorf("oversize table shares a parent beyond the limit")
		}
	}
}

func TestHeadingFlushesAndMerge(t *testing.T) {
	md := "# A\n\none.\n\ntwo.\n\n## B\n\nthree.\n"
	res := Split(md, DefaultOptions())
	if len(res.Children) != 2 || res.Children[0].Body != "one.\n\ntwo." || res.Children[1].Body != "three." {
		t.Fatalf("children = %+v", res.Children)
	}
	if res.Children[1].Text != "# A\n## B\n\nthree." {
		t.Fatalf("heading path = %q", res.Children[1].Text)
	}
	if len(res.Parents) != 1 || res.Parents[0].Text != "# A\n\none.\n\ntwo.\n\n## B\n\nthree." {
		t.Fatalf("parent = %q", res.Parents[0].Text)
	}
}

func TestMetadata(t *testing.T) {
	md := "---\ntitle: 保险条款\nversion: 2.1.0\neffective_date: 2024年5月1日\ntags: [保险, faq]\n---\n# 注意事项\n\n请勿酒后驾驶。\n\n<!-- page 3 -->\n\n## 操作步骤\n\n第一步。\n"
	res := Split(md, DefaultOptions())
	if res.DocVersion != "2.1.0" || res.EffectiveDate != "2024-05-01" || res.Title != "保险条款" || len(res.Tags) != 2 {
		t.Fatalf("metadata = %+v", res)
	}
	if res.Children[0].ContentType != rag.ContentWarning || res.Children[1].ContentType != rag.ContentProcedure {
		t.Errorf("content types %s %s", res.Children[0].ContentType, res.Children[1].ContentType)
	}
	if res.Children[0].Page != 0 || res.Children[1].Page != 3 {
		t.Errorf("pages %d %d", res.Children[0].Page, res.Children[1].Page)
	}
	plain := Split("Product manual\nVersion: 3.4\n生效日期：2023/7/9\n\nText.", DefaultOptions())
	if plain.DocVersion != "3.4" || plain.EffectiveDate != "2023-07-09" {
		t.Errorf("inline metadata = %q %q", plain.DocVersion, plain.EffectiveDate)
	}
}

func TestDeterministicAndHashes(t *testing.T) {
	md := "# X\n\n" + strings.Repeat("Sentence one. Sentence two! ", 50)
	a, b := Split(md, DefaultOptions()), Split(md, DefaultOptions())
	if len(a.Children) != len(b.Children) {
		t.Fatal("not deterministic")
	}
	for i := range a.Children {
		if a.Children[i].Hash != b.Children[i].Hash || len(a.Children[i].Hash) != 64 {
			t.Fatal("hashes differ or malformed")
		}
	}
}

// cleanTag's shortcut for plain headings gives what the general path gives: on plain ASCII, near
// misses (quotes, doubled or outer spaces, controls, non-ASCII) and long headings.
func TestCleanTagSameAsReference(t *testing.T) {
	for _, s := range []string{
		"", " ", "Types", "Method sets", "Go 1.22 (2024)", "a  b", " a", "a ", "a\tb", "say \"hi\"", "it's", "a`b", `a\b`,
		"x\x7f", "\x01x", "café", "“quoted”", "保险责任", "第 1 章 总则", "第一章　总则", "保\xe4\xb8", "\xe4\xb8保", "䀀䷿", "保险“责任”",
		strings.Repeat("保险责任", 10), strings.Repeat("a保", 30), strings.Repeat("word ", 20), strings.Repeat("w", 70), "~!@#$%^&*()_+{}|:<>?",
	} {
		if got, want := cleanTag(s), refCleanTag(s); got != want {
			t.Errorf("cleanTag(%q) = %q, reference %q", s, got, want)
		}
	}
	for r := range rune(0x10000) { // every character of the Basic Multilingual Plane between two others
		if s := "a" + string(r) + "保"; cleanTag(s) != refCleanTag(s) {
			t.Errorf("cleanTag(%q) = %q, reference %q", s, cleanTag(s), refCleanTag(s))
		}
	}
	for c := range 256 {
		for _, s := range []string{string(rune(c)), "a" + string(rune(c)) + "b", "ab" + string([]byte{byte(c)})} {
			if got, want := cleanTag(s), refCleanTag(s); got != want {
				t.Errorf("cleanTag(%q) = %q, reference %q", s, got, want)
			}
		}
	}
}

// sentences, which skips eight ASCII bytes or an ideograph at a time, cuts valid text where the
// rune-by-rune reference does: random text of sentence ends, closers, spaces, words and CJK.
func TestSentencesSameAsReference(t *testing.T) {
	pool := []string{".", "!", "?", "\n", "。", "！", "？", "；", "…", "”", ")", "」", " ", "\t", "\u3000", "v1.2.3", "word", "longer words here",
		"保险", "条款", "a", "ñ", "—", "\U0001F600", "x.y", "丂", "鿿"}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 30000 {
		var b strings.Builder
		for range rng.IntN(60) {
			b.WriteString(pool[rng.IntN(len(pool))])
		}
		s := b.String()
		if got, want := sentences(s), refSentences(s); !slices.Equal(got, want) {
			t.Fatalf("sentences(%q) = %q, reference %q", s, got, want)
		}
	}
}

// runeCount counts as utf8.RuneCountInString on every string of up to three bytes (valid or not),
// after ASCII, and on random mixes of ASCII runs, multi-byte runes and stray bytes.
func TestRuneCountSameAsUTF8(t *testing.T) {
	b := make([]byte, 0, 16)
	for x := range 1 << 24 {
		b = append(b[:0], "abcdefgh"...)
		b = append(b, byte(x), byte(x>>8), byte(x>>16))
		ss := []string{string(b[8:]), string(b)}
		if x < 1<<16 { // every one- and two-byte string once
			ss = append(ss, string(b[8:9]), string(b[8:10]))
		}
		for _, s := range ss {
			if got, want := runeCount(s), utf8.RuneCountInString(s); got != want {
				t.Fatalf("runeCount(%q) = %d, want %d", s, got, want)
			}
		}
	}
	pool := []string{"a", "abcdefghij", "保", "é", "😀", "\xff", "\xe4\xb8", "\xed\xa0\x80", "\xe0\x80\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "。"}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20000 {
		var sb strings.Builder
		for range rng.IntN(30) {
			sb.WriteString(pool[rng.IntN(len(pool))])
		}
		if got, want := runeCount(sb.String()), utf8.RuneCountInString(sb.String()); got != want {
			t.Fatalf("runeCount(%q) = %d, want %d", sb.String(), got, want)
		}
	}
}

// A long paragraph's pieces carry their length and token estimate summed from their sentences: equal
// to measuring each piece, whatever white space the sentences end in or the piece is trimmed of.
func TestSplitLongMeasures(t *testing.T) {
	pool := []string{"Words and more words. ", "v1.2.3 ships.\t", "Line end.\n", "Tabs!\t\t", "CR?\r\n", "条款内容。", "问？”",
		"全角　", "nel.\u0085", "nbsp.\u00a0", "unterminated words here", " lead", "x", strings.Repeat("long", 40) + ". "}
	rng := rand.New(rand.NewPCG(11, 12))
	for range 3000 {
		var b strings.Builder
		for range 5 + rng.IntN(40) {
			b.WriteString(pool[rng.IntN(len(pool))])
		}
		p := b.String()
		for _, pc := range splitLong(p, 60, 15) {
			if runes := utf8.RuneCountInString(pc.text); runes != pc.runes {
				t.Fatalf("piece %q: %d runes, counted %d", pc.text, runes, pc.runes)
			}
			if tokens := text.EstimateTokens(pc.text); pc.tokens >= 0 && tokens != pc.tokens {
				t.Fatalf("piece %q of %q: %d tokens, summed %d", pc.text, p, tokens, pc.tokens)
			}
		}
	}
}
