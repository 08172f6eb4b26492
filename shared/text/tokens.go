// Package text holds the text utilities every stage shares: token estimation and CJK detection.
package text

import (
	"unicode"
	"unicode/utf8"
)

// IsCJK reports Han, Hiragana, Katakana and Hangul letters (the scripts written without spaces).
func IsCJK(r rune) bool {
	switch {
	case r < 0x1100: // below Hangul Jamo nothing is CJK: the common case stays cheap
		return false
	case r >= 0x4E00 && r <= 0x9FFF, r >= 0xAC00 && r <= 0xD7A3: // the URO and Hangul syllables: all CJK, no table walk
		return true
	}
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// byteClass is EstimateTokens' treatment of each byte: 1 an ASCII letter or '_' (part of a word),
// 2 a space, 3 the lead or continuation byte of a multi-byte rune (decoded), 0 anything else: a digit,
// punctuation, newline, tab or control character (one token each).
var byteClass = func() (c [256]uint8) {
	for b := range c {
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b == '_':
			c[b] = 1
		case b == ' ':
			c[b] = 2
		case b >= utf8.RuneSelf:
			c[b] = 3
		}
	}
	return c
}()

// EstimateTokens estimates the tokens a BPE tokenizer needs for s, erring high (seed #33: a budget
// overrun because the estimate was low is worse than a little unused room). Each run of letters costs
// one token per 4 bytes (at least one), each digit one (tokenizers split numbers into short groups),
// each ASCII punctuation mark, newline and tab one, each CJK character and non-ASCII punctuation mark
// two (cl100k_base spends up to two on each); spaces are free. A test holds it to cl100k_base on prose,
// Chinese, tables and Go code. It runs over bytes and decodes only non-ASCII runes: the chunker calls it
// on every chunk and parent, which made it a third of chunking time.
func EstimateTokens(s string) int {
	n, word := 0, 0
	for i := 0; i < len(s); {
		switch byteClass[s[i]] {
		case 1:
			// the rest of an ASCII word in a tight loop: most of an English text
			j := i + 1
			for j < len(s) && byteClass[s[j]] == 1 {
				j++
			}
			word += j - i
			i = j
			continue
		case 2:
			i++
		case 0:
			i++
			n++
		default:
			c := s[i]
			// The URO (U+4E00-U+9FFF) is three bytes led by 0xE4-0xE9: decoded inline, as most of a
			// Chinese text is.
			if c >= 0xE4 && c <= 0xE9 && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 &&
				rune(c&0x0F)<<12|rune(s[i+1]&0x3F)<<6 >= 0x4E00 {
				i += 3
				n += 2
				break
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			i += size
			switch {
			case IsCJK(r):
				n += 2
			case unicode.IsLetter(r) || unicode.Is(unicode.Mn, r):
				word += size
				continue
			case unicode.IsSpace(r):
			default:
				n += 2 // non-ASCII punctuation and symbols
			}
		}
		if word > 0 {
			n += (word + 3) / 4
			word = 0
		}
	}
	if word > 0 {
		n += (word + 3) / 4
	}
	return n
}
