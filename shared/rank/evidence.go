package rank

import (
	"strings"
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
func bigrams(s string) map[string]struct{} {
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

// Jaccard is the bigram Jaccard similarity of two texts (1 for two empty texts).
func Jaccard(a, b string) float64 {
	return jaccardSets(bigrams(a), bigrams(b))
}

func jaccardSets(x, y map[string]struct{}) float64 {
	if len(x) == 0 && len(y) == 0 {
		return 1
	}
	inter := 0
	small, large := x, y
	if len(small) > len(large) {
		small, large = large, small
	}
	for g := range small {
		if _, ok := large[g]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(x)+len(y)-inter)
}

// contains reports whether the shorter text is (after whitespace folding) inside the longer one.
func contains(a, b string) bool {
	a, b = strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " ")
	if utf8.RuneCountInString(a) > utf8.RuneCountInString(b) {
		a, b = b, a
	}
	return a != "" && strings.Contains(b, a)
}
