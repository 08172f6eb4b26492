// Package text holds the text utilities every stage shares: token estimation and CJK detection.
package text

import (
	"unicode"
	"unicode/utf8"
)

// asciiWord marks ASCII letters and digits.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c], t[c-'a'+'A'] = true, true
	}
	return t
}()

// IsCJK reports Han, Hiragana, Katakana and Hangul letters (the scripts written without spaces).
func IsCJK(r rune) bool {
	if r < 0x1100 { // below Hangul Jamo nothing is CJK: the common case stays cheap
		return false
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// EstimateTokens estimates the tokens a BPE tokenizer needs for s, erring high: one per CJK character,
// one per 3 bytes of other text (English prose averages about 4; code and identifiers fewer), and one
// per punctuation or symbol character outside words (code is dense in them).
func EstimateTokens(s string) int {
	cjk, other, punct := 0, 0, 0
	for _, r := range s {
		if r < utf8.RuneSelf {
			switch {
			case asciiWord[r]:
				other++
			case r > ' ' && r != 0x7f:
				punct++
			}
			continue
		}
		switch {
		case IsCJK(r):
			cjk++
		case unicode.IsPunct(r) || unicode.IsSymbol(r):
			punct++
		case !unicode.IsSpace(r):
			other += utf8.RuneLen(r)
		}
	}
	return cjk + (other+2)/3 + punct
}
