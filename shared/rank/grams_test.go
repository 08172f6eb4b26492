package rank

import (
	"math/rand/v2"
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
	alphabet := []rune("abAB é\n\t中文数据。.x1 ")
	r := rand.New(rand.NewPCG(1, 2))
	gen := func() string {
		n := r.IntN(12)
		rs := make([]rune, n)
		for i := range rs {
			rs[i] = alphabet[r.IntN(len(alphabet))]
		}
		return string(rs)
	}
	fixed := [][2]string{{"", ""}, {"a", ""}, {"a", "a"}, {"a", "ab"}, {"ab", "a"}, {" a ", "a"}, {"中", "中文"}, {"\xff", "\xffa"}}
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
