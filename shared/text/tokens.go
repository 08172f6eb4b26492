// Package text holds the text utilities every stage shares: token estimation and CJK detection.
package text

import (
	"math/bits"
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

// letterByte[c] is 1 for an ASCII letter or '_' (part of a word), tokenByte[c] 1 for an ASCII byte
// that is a token of its own (digit, punctuation, newline, tab, control); a space is neither.
var letterByte, tokenByte = func() (l, t [utf8.RuneSelf]int) {
	for b := range l {
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b == '_':
			l[b] = 1
		case b != ' ':
			t[b] = 1
		}
	}
	return l, t
}()

// Rune classes of EstimateTokens' decoding path.
const (
	runeOther  = iota // non-ASCII punctuation or symbol: two tokens
	runeCJK           // two tokens
	runeLetter        // part of a word
	runeSpace         // nothing
)

func classifyRune(r rune) uint8 {
	switch {
	case IsCJK(r):
		return runeCJK
	case unicode.IsLetter(r) || unicode.Is(unicode.Mn, r):
		return runeLetter
	case unicode.IsSpace(r):
		return runeSpace
	}
	return runeOther
}

// cjkBlock and fullwidth hold classifyRune for U+3000-U+30FF (CJK punctuation and kana) and
// U+FF00-U+FFEF (full-width forms): with the ideographs, nearly every rune of a CJK text, so they are
// looked up instead of walked through the Unicode tables.
var cjkBlock, fullwidth = func() (a [0x100]uint8, b [0xF0]uint8) {
	for i := range a {
		a[i] = classifyRune(rune(0x3000 + i))
	}
	for i := range b {
		b[i] = classifyRune(rune(0xFF00 + i))
	}
	return a, b
}()

const (
	highBits = 0x8080808080808080
	lowBits  = 0x0101010101010101
)

// asciiWord is the byte loop's count for eight ASCII bytes (w, little-endian) in a handful of
// operations: letters and spaces are found for all eight bytes at once, so only a word's position
// within its four-byte tokens is carried from byte to byte, through a table. run is the length of
// the word being read, of which only run mod 4 matters (a word of L bytes costs (L+3)/4); it
// returns the tokens and the new run mod 4. On English text it is about three times the byte loop.
func asciiWord(w uint64, run int) (int, int) {
	// Each byte's high bit marks it. Folded to lower case, a letter is 'a'-'z'; '_' counts as one.
	// No byte here exceeds 0x7F, so adding to a byte never carries into the next.
	l := w | 0x20*lowBits
	az := (l + (0x80-'a')*lowBits) &^ (l + (0x80-'z'-1)*lowBits)
	under := ^((w ^ '_'*lowBits) + 0x7F*lowBits)
	space := ^((w ^ ' '*lowBits) + 0x7F*lowBits)
	letters := (az | under) & highBits
	// every byte that is neither a letter nor a space is a token of its own
	t := 8 - bits.OnesCount64(letters|space&highBits)
	mask := (letters >> 7) * 0x0102040810204080 >> 56 // bit i: byte i is a letter
	e := wordSteps[(run&3)<<8|int(mask)]
	return t + int(e&15), int(e >> 4)
}

// wordSteps[r<<8|m] is, for a word of r mod 4 bytes so far followed by eight ASCII bytes whose
// letters are the bits of m, the tokens their words start (low four bits) and the run mod 4 after
// them (high bits): the byte loop's letter bookkeeping, done in advance.
var wordSteps = func() (t [4 << 8]uint8) {
	for r := range 4 {
		for m := range 256 {
			run, add := r, 0
			for i := range 8 {
				run = (run + 1) * (m >> i & 1)
				add += startsToken[run&3]
			}
			t[r<<8|m] = uint8(add | (run&3)<<4)
		}
	}
	return t
}()

// startsToken[p&3] is 1 when the p-th byte of a word (p counted from 1) starts one of its four-byte
// tokens: a word of L bytes costs (L+3)/4.
var startsToken = [4]int{0, 1, 0, 0}

// EstimateTokens estimates the tokens a BPE tokenizer needs for s, erring high (seed #33: a budget
// overrun because the estimate was low is worse than a little unused room). Each run of letters costs
// one token per 4 bytes (at least one), each digit one (tokenizers split numbers into short groups),
// each ASCII punctuation mark, newline and tab one, each CJK character and non-ASCII punctuation mark
// two (cl100k_base spends up to two on each); spaces are free. A test holds it to cl100k_base on prose,
// Chinese, tables and Go code. It runs over bytes and decodes only non-ASCII runes: the chunker calls it
// on every chunk and parent, which made it a third of chunking time.
func EstimateTokens(s string) int {
	n, _ := estimate(s, len(s)) // a string has no more runes than bytes: read to the end
	return n
}

// EstimateTokensAndRunes is EstimateTokens(s) and utf8.RuneCountInString(s) from one pass over s
// (an invalid byte counts as one rune): the chunker needs both for every paragraph, and counting
// characters separately was a tenth of chunking Chinese. It stops early once it has read more than
// maxRunes runes: then runes > maxRunes and tokens are those of what was read. A caller that only
// needs to know a text is too long reads a little more than the limit, not the whole text.
func EstimateTokensAndRunes(s string, maxRunes int) (tokens, runes int) { return estimate(s, maxRunes) }

// estimate is EstimateTokensAndRunes.
func estimate(s string, maxRunes int) (tokens, runes int) {
	// run is the length in bytes of the word being read (0 between words). ASCII is counted without
	// branches (a word's end is data, not control flow: branch mispredictions at word ends were most of
	// the cost); other runes take the decoding path.
	// extra counts the bytes of multi-byte characters beyond their first: runes is len(s) - extra.
	n, run, extra := 0, 0, 0
	for i := 0; i < len(s); {
		if i-extra > maxRunes {
			return n, i - extra
		}
		if s[i] < utf8.RuneSelf { // a run of ASCII (not tried between CJK characters)
			for ; i+8 <= len(s) && i-extra <= maxRunes; i += 8 {
				w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
					uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
				if w&highBits != 0 {
					break
				}
				var t int
				t, run = asciiWord(w, run)
				n += t
			}
			for ; i < len(s) && s[i] < utf8.RuneSelf && i-extra <= maxRunes; i++ {
				c := s[i]
				run = (run + 1) * letterByte[c]
				n += startsToken[run&3] + tokenByte[c]
			}
			if i == len(s) || s[i] < utf8.RuneSelf { // the end, or the limit
				continue
			}
		}
		c := s[i]
		// The URO (U+4E00-U+9FFF) is three bytes led by 0xE4-0xE9: decoded inline, as most of a
		// Chinese text is.
		if c >= 0xE4 && c <= 0xE9 && i+2 < len(s) && s[i+1]&0xC0 == 0x80 && s[i+2]&0xC0 == 0x80 &&
			rune(c&0x0F)<<12|rune(s[i+1]&0x3F)<<6 >= 0x4E00 {
			i += 3
			n += 2
			run = 0
			extra += 2
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		extra += size - 1
		var class uint8
		switch {
		case r >= 0x3000 && r < 0x3100:
			class = cjkBlock[r-0x3000]
		case r >= 0xFF00 && r < 0xFFF0:
			class = fullwidth[r-0xFF00]
		default:
			class = classifyRune(r)
		}
		switch class {
		case runeCJK, runeOther:
			n += 2
			run = 0
		case runeLetter:
			n += (run+size+3)/4 - (run+3)/4 // the word grows by size bytes
			run += size
		case runeSpace:
			run = 0
		}
	}
	return n, len(s) - extra
}
