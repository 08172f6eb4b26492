// Package text holds the text utilities every stage shares: token estimation and CJK detection.
package text

import (
	"unicode"
	"unicode/utf8"
)

// IsCJK reports Han, Hiragana, Katakana and Hangul letters (the scripts written without spaces).
func IsCJK(r rune) bool {
	if r < 0x1100 { // below Hangul Jamo nothing is CJK: the common case stays cheap
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// EstimateTokens estimates the tokens a BPE tokenizer needs for s, erring high (seed #33: a budget
// overrun because the estimate was low is worse than a little unused room). Each run of letters costs
// one token per 4 bytes (at least one), each digit one (tokenizers split numbers into short groups),
// each ASCII punctuation mark, newline and tab one, each CJK character and non-ASCII punctuation mark
// two (cl100k_base spends up to two on each); spaces are free. A test holds it to cl100k_base on prose,
// Chinese, tables and Go code.
func EstimateTokens(s string) int {
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
			n++ // punctuation, newline, tab, control
		case IsCJK(r):
			flush()
			n += 2
		case unicode.IsLetter(r) || unicode.Is(unicode.Mn, r):
			word += utf8.RuneLen(r)
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			n += 2 // non-ASCII punctuation and symbols
		}
	}
	flush()
	return n
}
