package text

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// estimateTokensRef is EstimateTokens as it was before the byte loop (rune loop, table lookups for
// every rune); the fast version must agree with it on every input.
func estimateTokensRef(s string) int {
	n, word := 0, 0
	flush := func() {
		if word > 0 {
			n += (word + 3) / 4
			word = 0
		}
	}
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_'):
			word++
		case r >= '0' && r <= '9':
			flush()
			n++
		case r == ' ':
			flush()
		case r < utf8.RuneSelf:
			flush()
			n++
		case isCJKRef(r):
			flush()
			n += 2
		case unicode.IsLetter(r) || unicode.Is(unicode.Mn, r):
			word += utf8.RuneLen(r)
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			n += 2
		}
	}
	flush()
	return n
}

func isCJKRef(r rune) bool {
	if r < 0x1100 {
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// IsCJK's range shortcuts agree with the Unicode tables on every code point.
func TestIsCJKMatchesTables(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if IsCJK(r) != isCJKRef(r) {
			t.Fatalf("IsCJK(%U) = %v, tables say %v", r, IsCJK(r), isCJKRef(r))
		}
	}
}

// The byte-loop EstimateTokens equals the rune-loop reference on every code point alone, between
// letters, and on random mixed strings (including invalid UTF-8).
func TestEstimateTokensMatchesReference(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r += 1 {
		for _, s := range []string{string(r), "ab" + string(r) + "cd", "1" + string(r) + " x"} {
			if got, want := EstimateTokens(s), estimateTokensRef(s); got != want {
				t.Fatalf("EstimateTokens(%q) = %d, reference %d", s, got, want)
			}
		}
	}
	pool := []string{"a", "Z", "_", "7", " ", "\n", "\t", ".", "é", "ß", "保", "险", "。", "，", "の", "カ", "한", "\u0301", "\u3000", "\xff", "\xe4\xb8", "—", "😀", "ǅ"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pool[rng.IntN(len(pool))])
		}
		if got, want := EstimateTokens(b.String()), estimateTokensRef(b.String()); got != want {
			t.Fatalf("EstimateTokens(%q) = %d, reference %d", b.String(), got, want)
		}
	}
}

// Runs of ASCII long enough to be read eight bytes at a time agree with the reference: every ASCII
// byte at every place of a block, after words of every length, between letters, spaces or digits;
// and random text of all ASCII bytes with some other runes.
func TestEstimateTokensASCIIBlocksMatchReference(t *testing.T) {
	for c := range utf8.RuneSelf {
		for pre := range 9 {
			for _, fill := range []string{"a", " ", "7", "_"} {
				for pos := range 17 {
					b := []byte(strings.Repeat("w", pre) + strings.Repeat(fill, 17))
					b[pre+pos] = byte(c)
					if got, want := EstimateTokens(string(b)), estimateTokensRef(string(b)); got != want {
						t.Fatalf("EstimateTokens(%q) = %d, reference %d", b, got, want)
					}
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(120) {
			switch k := rng.IntN(20); {
			case k == 0:
				b.WriteString([]string{"保", "é", "\xff", "—", "\u3000"}[rng.IntN(5)])
			case k < 8:
				b.WriteByte(byte(rng.IntN(utf8.RuneSelf)))
			default:
				b.WriteString("word Text_ ab"[rng.IntN(13):][:1])
			}
		}
		if got, want := EstimateTokens(b.String()), estimateTokensRef(b.String()); got != want {
			t.Fatalf("EstimateTokens(%q) = %d, reference %d", b.String(), got, want)
		}
	}
}

// EstimateTokensAndRunes gives EstimateTokens and utf8.RuneCountInString, or more runes than its
// limit when the text has more: on code points between letters and random strings with invalid bytes.
func TestEstimateTokensAndRunes(t *testing.T) {
	check := func(s string) {
		t.Helper()
		tok, runes := EstimateTokensAndRunes(s, len(s))
		if want := estimateTokensRef(s); tok != want {
			t.Fatalf("EstimateTokensAndRunes(%q) tokens = %d, reference %d", s, tok, want)
		}
		if want := utf8.RuneCountInString(s); runes != want {
			t.Fatalf("EstimateTokensAndRunes(%q) runes = %d, want %d", s, runes, want)
		}
		// with a limit: the whole count when within it, else more than the limit
		for _, limit := range []int{0, 1, 7, 8, 9, runes - 1, runes, runes + 1} {
			tok, got := EstimateTokensAndRunes(s, limit)
			if runes <= limit && (got != runes || tok != estimateTokensRef(s)) {
				t.Fatalf("EstimateTokensAndRunes(%q, %d) = %d, %d, want %d, %d", s, limit, tok, got, estimateTokensRef(s), runes)
			}
			if runes > limit && (got <= limit || got > runes) {
				t.Fatalf("EstimateTokensAndRunes(%q, %d) counted %d runes of %d", s, limit, got, runes)
			}
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r += 7 {
		check("ab" + string(r) + "cd efghijkl")
	}
	pool := []string{"a", "word ", "long words, here. ", "7", "\n", "é", "保", "险", "。", "，", "😀", "\xff", "\xe4\xb8", "\xed\xa0\x80", "\u3000"}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pool[rng.IntN(len(pool))])
		}
		check(b.String())
	}
}
