// Package text holds the text utilities every stage shares: token estimation and CJK detection.
package text

import "unicode"

// IsCJK reports Han, Hiragana, Katakana and Hangul letters (the scripts written without spaces).
func IsCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// EstimateTokens estimates the tokens a BPE tokenizer needs for s, erring high: one per CJK character,
// one per 3 bytes of other text (English prose averages about 4; code and identifiers fewer), and one
// per punctuation or symbol character outside words (code is dense in them).
func EstimateTokens(s string) int {
	cjk, other, punct := 0, 0, 0
	for _, r := range s {
		switch {
		case IsCJK(r):
			cjk++
		case unicode.IsPunct(r) || unicode.IsSymbol(r):
			punct++
		case !unicode.IsSpace(r):
			other += len(string(r))
		}
	}
	return cjk + (other+2)/3 + punct
}
