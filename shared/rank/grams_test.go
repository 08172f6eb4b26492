package rank

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/text"
)

// refBigrams, refJaccard and refContains are the map-of-strings implementations the packed gram sets
// replaced, kept as the reference the new ones must agree with.
func refBigrams(s string) map[string]struct{} {
	var rs []rune
	for _, r := range s {
		r = text.Fold(r)
		if r == ' ' || r == '\n' || r == '\t' {
			continue
		}
		rs = append(rs, r)
	}
	out := make(map[string]struct{}, len(rs))
	for i := 0; i+1 < len(rs); i++ {
		out[string(rs[i:i+2])] = struct{}{}
	}
	if len(rs) == 1 {
		out[string(rs)] = struct{}{}
	}
	return out
}

func refJaccard(a, b string) float64 {
	x, y := refBigrams(a), refBigrams(b)
	if len(x) == 0 && len(y) == 0 {
		return 1
	}
	inter := 0
	for g := range x {
		if _, ok := y[g]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(x)+len(y)-inter)
}

func refContains(a, b string) bool {
	a, b = strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " ")
	if utf8.RuneCountInString(a) > utf8.RuneCountInString(b) {
		a, b = b, a
	}
	return a != "" && strings.Contains(b, a)
}

func TestGramSetsMatchReference(t *testing.T) {
	alphabet := []rune("abAB é\n\t中文数据。.x1 \r\u00a0\u2003\uFFFD")
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		n := r.IntN(12)
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(rs)
	}
	fixed := [][2]string{{"", ""}, {"a", ""}, {"a", "a"}, {"a", "ab"}, {"ab", "a"}, {" a ", "a"}, {"中", "中文"}, {"\xff", "\xffa"},
		{"\xff", "\uFFFD"}, {"a\u2003 b", "x a b"}, {" \u00a0a\r\n\vb\f", "a b"}}
	for i := range 5000 {
		a, b := gen(), gen()
		if i < len(fixed) {
			a, b = fixed[i][0], fixed[i][1]
		}
		if got, want := Jaccard(a, b), refJaccard(a, b); got != want {
			t.Fatalf("Jaccard(%q, %q) = %v, want %v", a, b, got, want)
		}
		if got, want := len(bigrams(a)), len(refBigrams(a)); got != want {
			t.Fatalf("bigrams(%q) has %d, want %d", a, got, want)
		}
		if got, want := containsFolded(fold(a), fold(b)), refContains(a, b); got != want {
			t.Fatalf("contains(%q, %q) = %v, want %v", a, b, got, want)
		}
	}
}

// BenchmarkCompress is the compression of eight parents of about 2,000 characters, the chain's last
// stage at its default sizes.
func BenchmarkCompress(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("the index maps each term to the chunks that contain it and a score per chunk while 检索 数据 会 按 相关性 排序")
	var ev []Evidence
	for range 8 {
		var sb strings.Builder
		for sb.Len() < 2000 {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteByte(' ')
		}
		ev = append(ev, Evidence{Text: sb.String(), ChildText: sb.String()[400:700]})
	}
	for b.Loop() {
		Compress(ev, CompressOptions{})
	}
}

// sortedBigrams is bigrams as it was before its ASCII bitmap: every pair packed, sorted, compacted.
func sortedBigrams(s string) gramSet {
	out := gramSet{}
	var prev rune
	n := 0
	for _, r := range s {
		r = text.Fold(r)
		if r == ' ' || r == '\n' || r == '\t' {
			continue
		}
		if n > 0 {
			out = append(out, uint64(uint32(prev))<<32|uint64(uint32(r)))
		}
		prev = r
		n++
	}
	if n == 1 {
		out = append(out, gramSingle|uint64(uint32(prev)))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestBigramsMatchSorted: the bitmap of ASCII pairs merged with the sorted other pairs is exactly the
// sorted set of every pair, on random texts that mix ASCII, accented, CJK, control and invalid bytes, of
// lengths up to a parent's.
func TestBigramsMatchSorted(t *testing.T) {
	alphabet := []rune("abcxyzABZ019 .,\n\t~\x7f\x00éÉ中文数据。ÿĀ\U0001F600")
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 3000 {
		n := r.IntN(3000)
		if i%3 == 0 {
			n = r.IntN(8)
		}
		var sb strings.Builder
		for range n {
			if r.IntN(50) == 0 {
				sb.WriteByte(0xff) // invalid UTF-8
				continue
			}
			sb.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		s := sb.String()
		if got, want := bigrams(s), sortedBigrams(s); !slices.Equal(got, want) {
			t.Fatalf("bigrams(%q):\n%x\nwant\n%x", s, got, want)
		}
	}
}

// refWindow is Window as it was before it walked bytes: the text and the focus as []rune.
func refWindow(s, focus string, size int) string {
	rs := []rune(s)
	if len(rs) <= size {
		return s
	}
	center := 0
	if focus != "" {
		body := focus
		if i := strings.LastIndex(focus, "\n\n"); i >= 0 && strings.HasPrefix(strings.TrimSpace(focus), "#") {
			body = focus[i+2:]
		}
		probe := []rune(body)
		if len(probe) > 60 {
			probe = probe[:60]
		}
		if at := strings.Index(s, string(probe)); at >= 0 {
			center = len([]rune(s[:at])) + min(len([]rune(body)), size)/2
		}
	}
	start := max(0, center-size/2)
	end := min(len(rs), start+size)
	start = max(0, end-size)
	for k := 0; start > 0 && k < size/5 && !sentenceEnd(rs[start-1]); k++ {
		start--
	}
	for k := 0; end < len(rs) && k < size/5 && !sentenceEnd(rs[end-1]); k++ {
		end++
	}
	return strings.TrimSpace(string(rs[start:end]))
}

// TestWindowMatchesReference: on random texts of words, sentence ends, CJK, spaces and invalid bytes,
// with a focus taken from the text (at times behind a heading), from elsewhere or none, at several
// sizes, Window returns exactly what the []rune implementation did.
func TestWindowMatchesReference(t *testing.T) {
	pieces := []string{"word ", "Other ", "end. ", "why? ", "数据", "检索。", "\n", "\n\n", "  ", "é", "\xff", "；", "\u2028", "x"}
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 4000 {
		var sb strings.Builder
		for range r.IntN(400) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		s := sb.String()
		var focus string
		switch rs := []rune(s); {
		case i%5 == 0 || len(rs) < 2:
		case i%5 == 1:
			focus = "# Heading\n\n" + string(rs[len(rs)/2:])
		case i%5 == 2:
			focus = "not in the text at all"
		default:
			a := r.IntN(len(rs))
			focus = string(rs[a : a+r.IntN(len(rs)-a)])
		}
		size := []int{1, 5, 20, 80, 300, 800}[r.IntN(6)]
		if got, want := Window(s, focus, size), refWindow(s, focus, size); got != want {
			t.Fatalf("Window(%q, %q, %d)\n= %q\nwant %q", s, focus, size, got, want)
		}
	}
}

// refCoverage is coverage as it was: the set of the joined texts' terms, then the query's looked up.
func refCoverage(terms []term, evidence string) float64 {
	have := map[string]bool{}
	for _, t := range text.Analyze(evidence) {
		have[t] = true
	}
	var got, all float64
	for _, t := range terms {
		all += t.w
		if have[t.t] {
			got += t.w
		}
	}
	if all == 0 {
		return 0
	}
	return got / all
}

// TestCoverageMatchesReference: the texts analyzed one after the other find exactly the terms their
// line-joined text did, on random queries and texts of English words (stemmed forms, joiners at the
// ends) and CJK runs that a join could have paired across.
func TestCoverageMatchesReference(t *testing.T) {
	words := []string{"waiting", "period", "periods", "days", "v1.2", "x-ray", "the", "数据", "检索", "据检", "HTTP/2", "end.", "中", "a"}
	r := rand.New(rand.NewPCG(11, 12))
	gen := func(n int) string {
		var sb strings.Builder
		for range r.IntN(n) {
			sb.WriteString(words[r.IntN(len(words))])
			sb.WriteString([]string{" ", "", "\n", ". "}[r.IntN(4)])
		}
		return sb.String()
	}
	for range 3000 {
		terms := salient(gen(6))
		a, b := gen(30), gen(10)
		if got, want := coverage(terms, a, b), refCoverage(terms, a+"\n"+b); got != want {
			t.Fatalf("coverage(%v, %q, %q) = %v, want %v", terms, a, b, got, want)
		}
		if got, want := coverage(terms, a), refCoverage(terms, a); got != want {
			t.Fatalf("coverage(%v, %q) = %v, want %v", terms, a, got, want)
		}
	}
}

// refDedupe is Dedupe as it was: a key of the joined texts' fields.
func refDedupe(ev []Evidence) []Evidence {
	seen := map[string]bool{}
	out := ev[:0:0]
	for _, e := range ev {
		k := strings.Join(strings.Fields(e.ChildText+"\x00"+e.Text), " ")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return out
}

// TestDedupeMatchesReference: on random evidence whose texts differ only in white space, or where a
// space meets the separator, the kept items are exactly the reference's.
func TestDedupeMatchesReference(t *testing.T) {
	pieces := []string{"a", "b", " ", "\n", "\t ", "\u00a0", "数据", "\xff", ""}
	r := rand.New(rand.NewPCG(13, 14))
	gen := func() string {
		var sb strings.Builder
		for range r.IntN(6) {
			sb.WriteString(pieces[r.IntN(len(pieces))])
		}
		return sb.String()
	}
	for range 3000 {
		var ev []Evidence
		for i := range r.IntN(12) {
			ev = append(ev, Evidence{ChunkID: fmt.Sprint(i), ChildText: gen(), Text: gen()})
		}
		got, want := Dedupe(ev), refDedupe(ev)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Dedupe(%+v) = %+v, want %+v", ev, got, want)
		}
	}
}
