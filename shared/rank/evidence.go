package rank

import (
	"bytes"
	"math/bits"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/text"
)

// Evidence is one candidate on its way to the prompt.
type Evidence struct {
	ChunkID    string    `json:"chunk_id"`
	ParentID   string    `json:"parent_id,omitempty"`
	DocumentID string    `json:"document_id"`
	KBID       string    `json:"kb_id"`
	FileName   string    `json:"file_name,omitempty"`
	Chapter    string    `json:"chapter,omitempty"`
	Page       int       `json:"page,omitempty"`
	Text       string    `json:"text"`       // what the prompt will see (child, parent, or a window of the parent)
	ChildText  string    `json:"child_text"` // the matched child chunk
	Score      float64   `json:"score"`      // rerank score (or fused score before rerank)
	Vector     []float32 `json:"-"`          // the child's embedding, when known (MMR)
}

// bigrams returns the set of character bigrams of s's analyzed-free normalised runes (letters, digits,
// CJK; case-folded), the cheap similarity every stage shares.
//
// Pairs of two ASCII runes (most of an English text's) are set in a 128x128 bitmap and read back in
// order, so only the other pairs are sorted: sorting every pair was most of compression's time at 100k
// chunks (docs/bench/million.md). The packed value orders pairs by first rune, then second, which is the
// bitmap's order; the other pairs are merged into it.
func bigrams(s string) gramSet { return appendBigrams(nil, s) }

// appendBigrams is bigrams into out's array (its contents replaced), so that a caller can reuse one.
// The other pairs are collected in that array too, then moved behind the room the set needs and
// merged forwards from there: the write position never passes the read position.
func appendBigrams(out gramSet, s string) gramSet {
	out = out[:0] // the other (non-ASCII) pairs, until the merge
	var ascii [128 * 128 / 64]uint64
	var prev rune
	n, nASCII := 0, 0
	for k := 0; k < len(s); {
		var r rune
		if c := s[k]; c < utf8.RuneSelf { // ASCII, most of an English text, folded without a table look-up
			r, k = rune(c), k+1
			if 'A' <= c && c <= 'Z' {
				r += 'a' - 'A'
			}
		} else {
			var size int
			r, size = utf8.DecodeRuneInString(s[k:])
			r, k = text.Fold(r), k+size
		}
		if r == ' ' || r == '\n' || r == '\t' {
			continue
		}
		if n > 0 {
			if prev < 128 && r < 128 && prev >= 0 && r >= 0 {
				i := prev<<7 | r
				if ascii[i>>6]&(1<<(i&63)) == 0 {
					ascii[i>>6] |= 1 << (i & 63)
					nASCII++
				}
			} else {
				out = append(out, uint64(uint32(prev))<<32|uint64(uint32(r)))
			}
		}
		prev = r
		n++
	}
	if n == 1 {
		return append(out[:0], gramSingle|uint64(uint32(prev)))
	}
	slices.Sort(out)
	nw := len(slices.Compact(out))
	total := nASCII + nw
	out = slices.Grow(out[:nw], total)[:total+nw]
	copy(out[total:], out[:nw]) // the other pairs behind the set's room
	p, j := 0, total
	for w, word := range ascii {
		for word != 0 {
			i := w<<6 | bits.TrailingZeros64(word)
			v := uint64(i>>7)<<32 | uint64(i&127)
			for j < total+nw && out[j] < v {
				out[p] = out[j]
				p, j = p+1, j+1
			}
			out[p] = v
			p++
			word &= word - 1
		}
	}
	for ; j < total+nw; p, j = p+1, j+1 {
		out[p] = out[j]
	}
	return out[:total]
}

// gramSet is a set of bigrams, each pair of runes packed in a uint64 (first rune high), sorted and
// without repeats, so that Jaccard is one merge of two slices. It was a map of two-rune strings: an
// allocation per bigram, and with the map look-ups a third of the retrieval chain's own time at 100k
// chunks (compression compares parents of a few thousand characters; docs/bench/million.md).
type gramSet []uint64

// gramSingle marks the one-rune text's only "bigram" (runes stay below 1<<21, so no pair has this bit).
const gramSingle = 1 << 63

// Jaccard is the bigram Jaccard similarity of two texts (1 for two empty texts).
func Jaccard(a, b string) float64 {
	return jaccardSets(bigrams(a), bigrams(b))
}

func jaccardSets(x, y gramSet) float64 {
	if len(x) == 0 && len(y) == 0 {
		return 1
	}
	inter := 0
	for i, j := 0, 0; i < len(x) && j < len(y); {
		switch {
		case x[i] < y[j]:
			i++
		case x[i] > y[j]:
			j++
		default:
			inter++
			i++
			j++
		}
	}
	return float64(inter) / float64(len(x)+len(y)-inter)
}

// folded is a text as contains compares it: whitespace runs folded to one space, with its rune count.
type folded struct {
	b     []byte
	runes int
}

func fold(s string) folded { return appendFold(nil, s) }

// appendFold is fold of the texts one after the other (as if concatenated) into dst's array (its
// contents replaced), so that a caller can reuse one.
func appendFold(dst []byte, texts ...string) folded {
	b := dst[:0]
	runes, space := 0, false
	for _, s := range texts {
		for k, r := range s {
			if r < utf8.RuneSelf && asciiSpace[r] || r >= utf8.RuneSelf && unicode.IsSpace(r) {
				space = len(b) > 0
				continue
			}
			if space {
				b = append(b, ' ')
				runes++
				space = false
			}
			if r < utf8.RuneSelf {
				b = append(b, byte(r))
			} else {
				_, size := utf8.DecodeRuneInString(s[k:])
				b = append(b, s[k:k+size]...) // the bytes as they were, an invalid one included
			}
			runes++
		}
	}
	return folded{b, runes}
}

// asciiSpace is unicode.IsSpace below utf8.RuneSelf.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// containsFolded is contains over texts already folded (compression folds each kept text once).
func containsFolded(a, b folded) bool {
	if a.runes > b.runes {
		a, b = b, a
	}
	return len(a.b) > 0 && bytes.Contains(b.b, a.b)
}
